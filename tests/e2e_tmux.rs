//! The real binary in a real terminal: `gpulse demo` inside a detached tmux, driven with
//! send-keys and read back with capture-pane. Needs tmux (`.ci/run` installs it).

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use support::tmux::Tmux;

const SPARK_GLYPHS: &[char] = &['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

#[test]
fn demo_shows_panels_and_help_then_q_leaves_the_alternate_screen() {
    let started = Instant::now();
    let t = Tmux::start(120, 40, "", "demo --seed 1");
    let first = t.wait_for("the first frame", |s| s.contains("gpulse │"));
    let first_frame = started.elapsed();
    eprintln!(
        "start to first frame (tmux launch included): {:.0} ms",
        first_frame.as_secs_f64() * 1000.0
    );
    assert!(first.contains("4 GPUs"), "{first}");
    let s = t.wait_for("GPU panels with sparklines", |s| {
        s.contains("GPU 0 · NVIDIA H200 (simulated)")
            && s.contains("● LIVE")
            && s.chars().filter(|c| SPARK_GLYPHS.contains(c)).count() > 20
    });
    assert!(s.contains("Processes · GPU 0"), "{s}");
    // tracing events reach the event panel, with their time.
    let s = t.wait_for("the start event in the log panel", |s| {
        s.contains("watching 4 GPU(s) on sim every 250 ms")
    });
    let line = s
        .lines()
        .find(|l| l.contains("watching 4 GPU(s)"))
        .expect("event line");
    let event = line
        .split('│')
        .find(|seg| seg.contains("watching"))
        .expect("the event panel's part of the line");
    let time: Vec<&str> = event
        .split_whitespace()
        .next()
        .unwrap_or("")
        .split(':')
        .collect();
    assert!(
        time.len() == 3 && time.iter().all(|p| p.len() == 2 && p.parse::<u8>().is_ok()),
        "a HH:MM:SS time before the event: {event}"
    );
    assert_eq!(
        t.format("#{alternate_on}"),
        "1",
        "runs on the alternate screen"
    );
    assert_eq!(t.format("#{cursor_flag}"), "0", "the cursor is hidden");

    t.keys(&["?"]);
    // Waits for the whole overlay: a capture may catch a frame half written.
    t.wait_for("the help overlay", |s| {
        s.contains("Esc closes") && s.contains("pause the display")
    });
    t.keys(&["Escape"]);
    t.wait_for("the help to close", |s| !s.contains("Esc closes"));

    t.keys(&["q"]);
    assert_eq!(t.wait_exit(), 0);
    assert_eq!(t.format("#{alternate_on}"), "0", "alternate screen left");
    assert_eq!(t.format("#{cursor_flag}"), "1", "the cursor is shown again");
    let after = t.capture();
    assert!(
        !after.contains("GPU 0 ·"),
        "dashboard still on screen:\n{after}"
    );
}

/// A starving simulated GPU in a real terminal: before the detector names it, the diagnosis
/// says what it sees ("GPU 0 stalling, watching N stalls ..."); once named, the finding with its
/// share of time lost and its fix replaces that line.
#[test]
fn demo_starving_shows_its_stalls_then_names_them() {
    let t = Tmux::start(120, 40, "", "demo --scenario starving --gpus 1 --seed 1");
    let s = t.wait_for("the stalls watched", |s| {
        s.contains("GPU 0 stalling, watching")
    });
    assert!(s.contains("no pattern yet"), "{s}");
    assert!(!s.contains("no active findings"), "{s}");
    let s = t.wait_for("the starvation finding", |s| {
        s.contains("GPU 0 input starvation · ")
    });
    assert!(!s.contains("stalling, watching"), "{s}");
    // The share lost, what it cost so far where there is room, then the fix.
    let line = s
        .lines()
        .find(|l| l.contains("GPU 0 input starvation · "))
        .unwrap_or_default();
    assert!(line.contains("% lost") && line.contains(" → "), "{s}");
    t.keys(&["q"]);
    assert_eq!(t.wait_exit(), 0);
}

/// `l` in a real terminal: the log view lists the targets that logged and the events whole; Esc
/// closes it and the dashboard is back.
#[test]
fn demo_l_lowercase_opens_the_log_view_and_esc_closes_it() {
    let t = Tmux::start(120, 40, "", "demo --gpus 2 --seed 1");
    t.wait_for("the start event", |s| s.contains("watching 2 GPU(s)"));
    t.keys(&["l"]);
    let s = t.wait_for("the log view", |s| {
        s.contains(" Targets ") && s.contains(" Log ")
    });
    assert!(s.contains("watching 2 GPU(s) on sim every 250 ms"), "{s}");
    assert!(s.contains("Esc/l close"), "{s}");
    t.keys(&["Escape"]);
    t.wait_for("the dashboard again", |s| {
        s.contains("GPU 0 ·") && !s.contains(" Targets ")
    });
    t.keys(&["q"]);
    assert_eq!(t.wait_exit(), 0);
}

/// `L` in a real terminal: the ledger view of a starving GPU; the diagnosis line says what the
/// finding has cost so far (at 120 columns there is room for it beside any fix's lead); Esc
/// closes the view.
#[test]
fn demo_l_opens_the_ledger_and_esc_closes_it() {
    let t = Tmux::start(120, 40, "", "demo --scenario starving --gpus 1 --seed 1");
    let s = t.wait_for("the starvation finding with its cost", |s| {
        s.contains("GPU 0 input starvation · ") && s.contains(" GPU-")
    });
    assert!(s.contains(" L ledger "), "{s}");
    t.keys(&["L"]);
    let s = t.wait_for("the ledger view", |s| s.contains("Ledger since"));
    assert!(s.contains("input starvation"), "{s}");
    assert!(s.contains("Esc/L close"), "{s}");
    assert!(
        !s.contains("Processes · GPU 0"),
        "the dashboard is behind it: {s}"
    );
    t.keys(&["PageDown"]);
    t.wait_for("the processes after a page", |s| {
        s.contains("python train.py")
    });
    t.keys(&["Escape"]);
    t.wait_for("the dashboard again", |s| {
        !s.contains("Ledger since") && s.contains("Processes · GPU 0")
    });
    t.keys(&["q"]);
    assert_eq!(t.wait_exit(), 0);
}

#[test]
fn a_tiny_window_says_too_small_and_keeps_running() {
    let t = Tmux::start(10, 5, "", "demo --seed 1");
    let s = t.wait_for("the too-small message", |s| {
        let joined: String = s.split_whitespace().collect();
        joined.contains("terminaltoosmall")
    });
    assert!(!s.contains("panicked"), "{s}");
    std::thread::sleep(Duration::from_millis(600));
    assert!(
        !t.gpulse_pid().is_empty() && !t._home.path().join("status").exists(),
        "still running after new snapshots"
    );
    // Growing the window brings the dashboard.
    t.run(&["resize-window", "-t", "e2e", "-x", "100", "-y", "30"]);
    t.wait_for("the dashboard after resize", |s| s.contains("GPU 0 ·"));
    t.keys(&["C-c"]);
    assert_eq!(t.wait_exit(), 0);
    assert_eq!(t.format("#{alternate_on}"), "0");
}

/// SGR parameters that set a colour (foreground, background, bright, 256 and RGB).
fn colour_escapes(screen: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = screen;
    while let Some(i) = rest.find("\x1b[") {
        rest = &rest[i + 2..];
        let Some(end) = rest.find(|c: char| c.is_ascii_alphabetic()) else {
            break;
        };
        let (params, tail) = rest.split_at(end);
        if tail.starts_with('m') {
            let colour = params.split(';').any(|p| {
                matches!(
                    p.parse::<u32>(),
                    Ok(30..=38 | 40..=48 | 90..=97 | 100..=107)
                )
            });
            if colour {
                found.push(params.to_string());
            }
        }
        rest = tail;
    }
    found
}

#[test]
fn no_color_draws_without_colour_escapes() {
    let plain = Tmux::start(120, 40, "NO_COLOR=1", "demo --seed 1");
    plain.wait_for("the dashboard", |s| {
        s.contains("GPU 0 ·") && s.contains("● LIVE")
    });
    let escaped = plain.capture_with_escapes();
    assert!(escaped.contains("\x1b["), "capture shows attributes");
    assert_eq!(colour_escapes(&escaped), Vec::<String>::new());
    plain.keys(&["q"]);
    assert_eq!(plain.wait_exit(), 0);

    // The same check finds colour when colour is on.
    let coloured = Tmux::start(120, 40, "", "--color always demo --seed 1");
    coloured.wait_for("the dashboard", |s| {
        s.contains("GPU 0 ·") && s.contains("● LIVE")
    });
    assert!(!colour_escapes(&coloured.capture_with_escapes()).is_empty());
    coloured.keys(&["q"]);
    assert_eq!(coloured.wait_exit(), 0);
}

#[test]
fn sigterm_restores_the_terminal() {
    let t = Tmux::start(100, 30, "", "demo --seed 1");
    t.wait_for("the dashboard", |s| s.contains("GPU 0 ·"));
    let pid = t.gpulse_pid();
    assert!(!pid.is_empty(), "gpulse is running");
    let status = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(status.success());
    assert_eq!(t.wait_exit(), 0);
    assert_eq!(t.format("#{alternate_on}"), "0", "alternate screen left");
    assert_eq!(t.format("#{cursor_flag}"), "1", "the cursor is shown again");
}

/// The diagnosis line of the worst GPU (its verdict, the share of time lost, the fix) at every
/// size from 80×24 up, with one GPU and with eight (every GPU's verdict on screen too), in colour
/// and without (`NO_COLOR`).
#[test]
fn the_diagnosis_and_its_fix_show_at_every_size_with_1_and_8_gpus() {
    for (gpus, args, env) in [
        (1, "demo --scenario starving --gpus 1 --seed 1", ""),
        (8, "demo --scenario mixed --gpus 8 --seed 1", "NO_COLOR=1"),
    ] {
        let t = Tmux::start(80, 24, env, args);
        for (w, h) in [(80, 24), (120, 40), (200, 60)] {
            t.run(&[
                "resize-window",
                "-t",
                "e2e",
                "-x",
                &w.to_string(),
                "-y",
                &h.to_string(),
            ]);
            let s = t.wait_for("the diagnosis line with its fix", |s| {
                s.lines().count() == h
                    && s.lines().any(|l| {
                        l.starts_with("│GPU ")
                            && l.contains(" input starvation · ")
                            && l.contains("% lost")
                            && l.contains(" → ")
                    })
            });
            if gpus == 8 {
                for i in 0..8 {
                    assert!(
                        s.lines().any(|l| l.contains(&format!(" {i} H200"))),
                        "GPU {i}'s row at {w}x{h}:\n{s}"
                    );
                }
            }
            // One line per event: no row of the event panel is the rest of a cut word.
            assert!(!s.contains("DataLoade│"), "{s}");
        }
        if !env.is_empty() {
            assert_eq!(
                colour_escapes(&t.capture_with_escapes()),
                Vec::<String>::new()
            );
        }
        t.keys(&["q"]);
        assert_eq!(t.wait_exit(), 0);
    }
}

/// Clicks select a GPU and a process row; the terminal gets its mouse back on exit, and
/// `--no-mouse` leaves it to the terminal throughout.
#[test]
fn clicks_select_a_gpu_and_a_process_and_the_mouse_is_given_back() {
    let t = Tmux::start(100, 30, "", "demo --gpus 4 --seed 1");
    let s = t.wait_for("the dashboard", |s| {
        s.contains("● LIVE") && s.contains("python train.py")
    });
    assert_eq!(t.format("#{mouse_sgr_flag}"), "1", "clicks reported");
    let row = |s: &str, text: &str| s.lines().position(|l| l.contains(text)).expect("row") + 1;
    // SGR mouse report: button 0 pressed then released at column 6 of the row (1-based).
    let click = |row: usize| {
        for end in ["M", "m"] {
            t.keys(&["-l", &format!("\x1b[<0;6;{row}{end}")]);
        }
    };
    click(row(&s, " 2 H200"));
    t.wait_for("GPU 2 selected", |s| {
        s.contains("▶  2 H200") && s.contains("Processes · GPU 2")
    });
    let s = t.capture();
    let process = s
        .lines()
        .position(|l| l.starts_with("│4") && l.contains("python train"))
        .unwrap_or_else(|| panic!("a process row:\n{s}"))
        + 1;
    click(process);
    t.wait_for("the process table focused", |s| s.contains("Esc GPUs"));
    t.keys(&["q"]);
    assert_eq!(t.wait_exit(), 0);
    assert_eq!(t.format("#{mouse_sgr_flag}"), "0", "mouse given back");
    assert_eq!(t.format("#{mouse_standard_flag}"), "0", "mouse given back");

    let t = Tmux::start(100, 30, "", "--no-mouse demo --gpus 2 --seed 1");
    t.wait_for("the dashboard", |s| s.contains("● LIVE"));
    assert_eq!(t.format("#{mouse_standard_flag}"), "0", "--no-mouse");
    t.keys(&["q"]);
    assert_eq!(t.wait_exit(), 0);
}

/// Events one line each, cut with `…`, scrolled with the arrows once Tab has focused them.
#[test]
fn events_are_one_line_each_and_scroll() {
    let t = Tmux::start(100, 40, "", "demo --gpus 4 --seed 1");
    let events = |s: &str| -> Vec<String> {
        let top = s.lines().position(|l| l.contains("Events")).unwrap_or(0);
        s.lines()
            .skip(top + 1)
            .take_while(|l| l.starts_with('│'))
            .map(|l| l.trim_matches('│').trim_end().to_string())
            .filter(|l| !l.is_empty())
            .collect()
    };
    let s = t.wait_for("a finding's event", |s| {
        events(s).iter().any(|l| l.contains("input starvation"))
    });
    for line in events(&s) {
        let time = line.get(..8).unwrap_or("");
        assert!(
            time.split(':').count() == 3 && time.chars().filter(char::is_ascii_digit).count() == 6,
            "every row of the panel is an event of its own: {line:?}\n{s}"
        );
    }
    assert!(
        events(&s).iter().any(|l| l.ends_with('…')),
        "long events are cut: {s}"
    );
    // Fewer rows than events: one shown while the panel has the keys.
    t.run(&["resize-window", "-t", "e2e", "-x", "100", "-y", "19"]);
    t.keys(&["Tab", "Tab"]);
    t.wait_for("the event panel focused", |s| s.contains("PgUp/PgDn"));
    t.keys(&["Up"]);
    t.wait_for("scrolled back", |s| s.contains("newer ↓"));
    t.keys(&["End"]);
    t.wait_for("back to the newest", |s| !s.contains("newer ↓"));
    t.keys(&["q"]);
    assert_eq!(t.wait_exit(), 0);
}
