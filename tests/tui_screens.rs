//! Whole screens from simulated GPUs through the real engine on a virtual clock, rendered into
//! ratatui's `TestBackend` and compared with accepted snapshots (tests/snapshots).

mod support;

use std::sync::Arc;

use support::api::{
    Action, Evidence, Finding, FindingKind, GpuReading, GpuStatus, Scenario, Severity, SimRun,
    Snapshot, BINDINGS,
};
use support::screen::{dashboard, draw, screen, sim_on_16_cores, text};

const SPARK_GLYPHS: &[char] = &['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

#[test]
fn one_gpu_at_three_sizes() {
    let run = sim_on_16_cores(Scenario::Starving, 1, 90.0);
    let app = dashboard(run.snapshot(), true);
    for (w, h) in [(80, 24), (120, 40), (200, 60)] {
        let s = screen(&app, w, h);
        assert!(
            s.contains("GPU 0 · NVIDIA H200 (simulated) · 00000000:18:00.0"),
            "{s}"
        );
        assert!(s.contains("testhost"), "{s}");
        assert!(s.chars().any(|c| SPARK_GLYPHS.contains(&c)), "{s}");
        assert!(s.contains("python train.py --job starving"), "{s}");
        insta::assert_snapshot!(format!("one_gpu_{w}x{h}"), s);
    }
}

#[test]
fn eight_gpus_at_three_sizes() {
    let run = sim_on_16_cores(Scenario::Mixed, 8, 90.0);
    let app = dashboard(run.snapshot(), true);
    for (w, h) in [(80, 24), (120, 40), (200, 60)] {
        let s = screen(&app, w, h);
        // One compact row per GPU, the selected one marked.
        for i in 0..8 {
            assert!(
                s.lines().any(|l| l.contains(&format!(" {i} H200"))),
                "row of GPU {i} at {w}x{h}:\n{s}"
            );
        }
        assert!(s.contains("▶  0 H200"), "{s}");
        insta::assert_snapshot!(format!("eight_gpus_{w}x{h}"), s);
    }
}

#[test]
fn selection_moves_the_panel_and_enter_shows_its_details() {
    let run = sim_on_16_cores(Scenario::Mixed, 8, 30.0);
    let mut app = dashboard(run.snapshot(), true);
    app.apply(Action::SelectNext);
    app.apply(Action::SelectNext);
    let s = screen(&app, 120, 40);
    assert!(s.contains("▶  2 H200"), "{s}");
    assert!(s.contains("GPU 2 · NVIDIA H200"), "{s}");
    assert!(s.contains("Processes · GPU 2"), "{s}");
    // Values that rarely change are behind Enter; the temperature stays in the border.
    assert!(!s.contains("PCIe link") && !s.contains("SM clock"), "{s}");
    assert!(s.contains("Enter: details"), "{s}");
    app.apply(Action::ToggleExpand);
    let s = screen(&app, 120, 40);
    assert!(s.contains("PCIe link") && s.contains("SM clock"), "{s}");
    assert!(s.contains("GPU 2 · NVIDIA H200"), "{s}");
    assert!(s.contains("hide details"), "{s}");
}

#[test]
fn help_overlay_lists_every_key() {
    let run = sim_on_16_cores(Scenario::Healthy, 2, 20.0);
    let mut app = dashboard(run.snapshot(), true);
    app.apply(Action::ToggleHelp);
    let s = screen(&app, 120, 40);
    for (keys, what) in BINDINGS {
        assert!(s.contains(keys) && s.contains(what), "{keys} {what}\n{s}");
    }
    insta::assert_snapshot!("help_120x40", s);
    app.apply(Action::CloseOverlay);
    assert!(!screen(&app, 120, 40).contains("Esc closes"));
}

#[test]
fn too_small_says_so_and_never_panics() {
    let run = sim_on_16_cores(Scenario::Mixed, 8, 10.0);
    let app = dashboard(run.snapshot(), true);
    let s = screen(&app, 59, 16);
    assert!(s.contains("terminal too small (need 60×16"), "{s}");
    insta::assert_snapshot!("too_small_59x16", s);
    let s = screen(&app, 60, 16);
    assert!(!s.contains("too small"), "{s}");
    // Every size from 1×1 up, with 1 and 8 GPUs, help open or not, draws without panicking.
    let one = sim_on_16_cores(Scenario::Checkpoint, 1, 10.0);
    for snap in [run.snapshot(), one.snapshot()] {
        for help in [false, true] {
            let mut app = dashboard(snap.clone(), false);
            if help {
                app.apply(Action::ToggleHelp);
            }
            for w in (1..=130).step_by(7).chain([10, 59, 60, 61, 80]) {
                for h in (1..=45).step_by(4).chain([5, 15, 16, 17, 24]) {
                    let s = screen(&app, w, h);
                    assert_eq!(s.lines().count(), h as usize);
                }
            }
        }
    }
}

#[test]
fn monochrome_uses_no_colour_at_all() {
    let run = sim_on_16_cores(Scenario::Mixed, 4, 60.0);
    let app = dashboard(run.snapshot(), false);
    let buf = draw(&app, 120, 40);
    for cell in buf.content.iter() {
        assert_eq!(cell.fg, ratatui::style::Color::Reset, "{cell:?}");
        assert_eq!(cell.bg, ratatui::style::Color::Reset, "{cell:?}");
    }
    // The selection still shows, by reversing.
    assert!(buf
        .content
        .iter()
        .any(|c| c.modifier.contains(ratatui::style::Modifier::REVERSED)));
    insta::assert_snapshot!("monochrome_120x40", text(&buf));
    // And the coloured screen does use colour.
    let coloured = draw(&dashboard(run.snapshot(), true), 120, 40);
    assert!(coloured
        .content
        .iter()
        .any(|c| c.fg != ratatui::style::Color::Reset));
}

fn finding(kind: FindingKind, gpu: u32, start: f64) -> Finding {
    Finding {
        kind,
        severity: Severity::Warn,
        gpu,
        start,
        end: None,
        detected_at: start + 10.0,
        evidence: Evidence {
            lost_fraction: Some(0.64),
            ..Default::default()
        },
        summary: "idle ~1.1 s every 1.7 s, 64% of time lost".to_string(),
        advice: "raise DataLoader num_workers".to_string(),
    }
}

#[test]
fn findings_are_listed_and_their_dips_marked() {
    let run = sim_on_16_cores(Scenario::Starving, 1, 60.0);
    let mut snap: Snapshot = (*run.snapshot()).clone();
    let start = snap.t - 30.0;
    snap.gpus[0].verdict = FindingKind::InputStarvation;
    // Only the finding under test (the detector may have raised its own on the simulated data).
    snap.gpus[0].findings.clear();
    snap.gpus[0]
        .findings
        .push(finding(FindingKind::InputStarvation, 0, start));
    let app = dashboard(Arc::new(snap), true);
    let s = screen(&app, 120, 40);
    // One line: the verdict, the share of time lost, what it cost so far (the ledger's lost
    // GPU time and the energy drawn in it), the fix (here the advice: no host evidence); then
    // what was seen.
    assert!(
        s.contains(
            "GPU 0 input starvation · 64% lost · 31 GPU-s, 2.4 Wh → raise DataLoader num_workers"
        ),
        "{s}"
    );
    assert!(s.contains("GPU 0 idle ~1.1 s every 1.7 s"), "{s}");
    assert!(s.contains("warn severity · since"), "{s}");
    // The marker row sits under the util chart, only in the finding's half of the window.
    let lines: Vec<&str> = s.lines().collect();
    let marker = lines
        .iter()
        .find(|l| l.contains('^') && !l.contains("util"))
        .expect("a marker row");
    let first = marker.find('^').expect("a mark");
    let chart_left = lines
        .iter()
        .find(|l| l.contains("util "))
        .and_then(|l| l.find("util"))
        .expect("util label")
        + 19;
    let chart_cols = 120 - 2 - 19;
    assert!(
        first >= chart_left + chart_cols / 2 - 2,
        "marks start in the second half: {marker}"
    );
    insta::assert_snapshot!("findings_120x40", s);
}

/// A starving job before the detector names it: the panel says what it sees (stalls, the share
/// of time stalled, no pattern yet) instead of "no active findings", the verdict is `stalling`,
/// and both go once named.
#[test]
fn stalls_are_shown_before_they_are_named() {
    // Named 8.5 s after the start; the stalls are shown from 6 s (a 5 s window at least).
    let mut run = sim_on_16_cores(Scenario::Starving, 1, 7.0);
    let snap = run.snapshot();
    assert_eq!(snap.gpus[0].verdict, FindingKind::Stalling);
    let w = snap.gpus[0].watch.expect("a watch line before the finding");
    assert!(w.stalls >= 2 && w.stalled_fraction >= 0.3, "{w:?}");
    let app = dashboard(snap, false);
    let s = screen(&app, 80, 24);
    assert!(s.contains("GPU 0 stalling, watching"), "{s}");
    assert!(s.contains("stalls in the last"), "{s}");
    assert!(!s.contains("no active findings"), "{s}");
    insta::assert_snapshot!("watching_80x24", s);
    run.advance(15.0);
    let snap = run.snapshot();
    assert_eq!(snap.gpus[0].verdict, FindingKind::InputStarvation);
    assert_eq!(snap.gpus[0].watch, None);
    let s = screen(&dashboard(snap, false), 80, 24);
    assert!(!s.contains("watching"), "{s}");
    assert!(s.contains("GPU 0 input starvation"), "{s}");
}

#[test]
fn stale_and_lost_gpus_say_so_with_their_age() {
    let mut run = sim_on_16_cores(Scenario::Healthy, 2, 20.0);
    for _ in 0..16 {
        run.ingest_tick(|t, mut gpus| {
            gpus[0] = GpuReading::empty(0, GpuStatus::Stale { since: t - 0.25 });
            gpus[1] = GpuReading::empty(
                1,
                GpuStatus::Lost {
                    reason: "fell off the bus".into(),
                },
            );
            gpus
        });
    }
    let app = dashboard(run.snapshot(), true);
    let s = screen(&app, 120, 40);
    assert!(s.contains("stale 4.0 s"), "{s}");
    assert!(s.contains("LOST"), "{s}");
    // The failed ticks are gaps in the chart, drawn as shade, not as zero.
    assert!(s.contains('░'), "{s}");
    let mut app = app;
    app.apply(Action::SelectNext);
    let s = screen(&app, 120, 40);
    assert!(s.contains("LOST: fell off the bus"), "{s}");
}

#[test]
fn before_the_first_sample_the_screen_says_it_is_waiting() {
    let run = SimRun::new(Scenario::Mixed, 4);
    let app = dashboard(run.snapshot(), true);
    let s = screen(&app, 80, 24);
    assert!(s.contains("waiting for first sample"), "{s}");
    assert!(s.contains("waiting for first reading"), "{s}");
    // No reading is not a zero reading.
    assert!(!s.contains(" 0%"), "{s}");
}

#[test]
fn pause_freezes_the_screen_while_sampling_goes_on() {
    let mut run = sim_on_16_cores(Scenario::Starving, 1, 20.0);
    let mut app = dashboard(run.snapshot(), true);
    app.apply(Action::TogglePause);
    let frozen = screen(&app, 120, 40);
    assert!(frozen.contains("PAUSED"), "{frozen}");
    run.advance(5.0);
    assert!(!app.on_snapshot(run.snapshot()), "no redraw while paused");
    assert_eq!(screen(&app, 120, 40), frozen);
    app.apply(Action::TogglePause);
    let resumed = screen(&app, 120, 40);
    assert!(resumed.contains("LIVE"), "{resumed}");
    assert_ne!(resumed, frozen);
}

#[test]
fn zoom_changes_the_window_in_the_header() {
    let run = sim_on_16_cores(Scenario::Healthy, 1, 30.0);
    let mut app = dashboard(run.snapshot(), true);
    app.apply(Action::ZoomIn);
    assert!(screen(&app, 120, 40).contains("window 30 s"));
    for _ in 0..10 {
        app.apply(Action::ZoomOut);
    }
    assert!(screen(&app, 120, 40).contains("window 10 min"));
}

/// The cells where `text` starts on each line that holds it.
fn cells_of<'a>(buf: &'a ratatui::buffer::Buffer, text: &str) -> Vec<&'a ratatui::buffer::Cell> {
    let w = buf.area.width as usize;
    let first = text.chars().next().expect("text");
    let mut found = Vec::new();
    for y in 0..buf.area.height as usize {
        let row: Vec<&ratatui::buffer::Cell> = buf.content[y * w..(y + 1) * w].iter().collect();
        let line: String = row.iter().map(|c| c.symbol()).collect();
        if let Some(byte) = line.find(text) {
            let col = line[..byte].chars().count();
            assert_eq!(row[col].symbol(), first.to_string());
            found.push(row[col]);
        }
    }
    found
}

#[test]
fn a_verdict_has_the_same_style_wherever_it_is_drawn() {
    let run = sim_on_16_cores(Scenario::Mixed, 8, 90.0);
    for color in [true, false] {
        let app = dashboard(run.snapshot(), color);
        let buf = draw(&app, 120, 40);
        // GPU 0's list row, its panel's title and its diagnosis line.
        let cells = cells_of(&buf, "input starvation");
        assert!(cells.len() >= 3, "{}", text(&buf));
        for c in &cells {
            assert_eq!(
                (c.fg, c.modifier),
                (cells[0].fg, cells[0].modifier),
                "{}",
                text(&buf)
            );
        }
        // High severity reads as bad news, not as the healthy style.
        let healthy = cells_of(&buf, "healthy");
        assert!(!healthy.is_empty());
        assert_ne!(
            (healthy[0].fg, healthy[0].modifier),
            (cells[0].fg, cells[0].modifier)
        );
    }
}

#[test]
fn the_help_scrolls_to_its_legend_of_colours_marks_and_figures() {
    let run = sim_on_16_cores(Scenario::Healthy, 1, 20.0);
    let mut app = dashboard(run.snapshot(), true);
    app.apply(Action::ToggleHelp);
    let s = screen(&app, 80, 24);
    assert!(s.contains("↑↓ scroll"), "{s}");
    for _ in 0..8 {
        app.apply(Action::ScrollHelp(10));
    }
    let s = screen(&app, 80, 24);
    for legend in ["░", "DRAM BW", "UTIL%", "per column", "job mean"] {
        assert!(s.contains(legend), "{legend}\n{s}");
    }
}

#[test]
fn the_footer_says_what_the_keys_do_now() {
    let run = sim_on_16_cores(Scenario::Starving, 1, 20.0);
    let mut app = dashboard(run.snapshot(), true);
    let footer = |app: &support::api::App| {
        screen(app, 160, 48)
            .lines()
            .last()
            .unwrap_or("")
            .to_string()
    };
    assert!(footer(&app).contains("Enter details"), "{}", footer(&app));
    app.apply(Action::ToggleExpand);
    assert!(
        footer(&app).contains("Enter hide details"),
        "{}",
        footer(&app)
    );
    app.apply(Action::TogglePause);
    assert!(footer(&app).contains("p resume"), "{}", footer(&app));
    app.apply(Action::FocusNext);
    let f = footer(&app);
    assert!(
        f.contains("←→ scroll") && f.contains("t tree") && f.contains("a all GPUs"),
        "{f}"
    );
    app.apply(Action::ToggleTree);
    assert!(footer(&app).contains("t flat"), "{}", footer(&app));
    app.apply(Action::FocusNext);
    assert!(footer(&app).contains("PgUp/PgDn"), "{}", footer(&app));
}

#[test]
fn charts_say_their_resolution_and_label_their_time() {
    let run = sim_on_16_cores(Scenario::Healthy, 1, 90.0);
    let app = dashboard(run.snapshot(), true);
    for (w, h, per) in [(80, 24, "1.0 s per column"), (160, 48, "0.43 s per column")] {
        let s = screen(&app, w, h);
        let axis = s
            .lines()
            .find(|l| l.contains("per column"))
            .unwrap_or_else(|| panic!("an axis at {w}x{h}:\n{s}"));
        assert!(axis.contains(per), "{axis}");
        assert!(axis.contains("30s") && axis.contains("10s"), "{axis}");
        assert!(s.contains("60 s mean"), "{s}");
    }
}

#[test]
fn commands_scroll_sideways_and_long_ones_keep_their_end() {
    let run = sim_on_16_cores(Scenario::Starving, 1, 20.0);
    let mut app = dashboard(run.snapshot(), true);
    app.apply(Action::FocusNext);
    app.apply(Action::ScrollRight);
    let s = screen(&app, 80, 24);
    assert!(s.contains("command +8 →"), "{s}");
    let row = s
        .lines()
        .find(|l| l.contains("4101"))
        .expect("the process row");
    assert!(row.contains("…ain.py --job starving"), "{row}");
    app.apply(Action::ScrollLeft);
    assert!(screen(&app, 80, 24).contains("python train.py --job starving"));
}
