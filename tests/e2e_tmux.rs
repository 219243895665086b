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
    let help = t.wait_for("the help overlay", |s| s.contains("Keys (Esc closes)"));
    assert!(help.contains("pause the display"), "{help}");
    t.keys(&["Escape"]);
    t.wait_for("the help to close", |s| !s.contains("Keys (Esc closes)"));

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

/// A starving simulated GPU in a real terminal: before the detector names it, the detector
/// panel says what it sees ("GPU 0 watching N stalls ...") and reads `stalling`; once named, the
/// finding replaces that line.
#[test]
fn demo_starving_shows_its_stalls_then_names_them() {
    let t = Tmux::start(120, 40, "", "demo --scenario starving --gpus 1 --seed 1");
    let s = t.wait_for("the stalls watched", |s| s.contains("GPU 0 watching"));
    assert!(s.contains("verdict 0 stalling"), "{s}");
    assert!(s.contains("no pattern yet"), "{s}");
    assert!(!s.contains("no active findings"), "{s}");
    let s = t.wait_for("the starvation finding", |s| {
        s.contains("GPU 0 input starvation (")
    });
    assert!(!s.contains("GPU 0 watching"), "{s}");
    assert!(s.contains("verdict 0 input starvation"), "{s}");
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
