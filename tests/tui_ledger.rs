//! The waste ledger on the dashboard: the ledger view (`L`) and the cost so far on the diagnosis
//! lines, from simulated GPUs through the real engine, drawn into ratatui's `TestBackend` and
//! compared with accepted snapshots (tests/snapshots).

mod support;

use support::api::{Action, GpuReading, Overlay, Prices, Scenario, SimRun, BINDINGS};
use support::screen::{dashboard, ledger_view, screen, sim_on_16_cores};

fn usd() -> Prices {
    Prices {
        price_per_gpu_hour: Some(2.5),
        price_per_kwh: Some(0.3),
        currency: Some("USD".into()),
    }
}

/// The rows of the view's body (inside its border) that hold `what`.
fn rows_with<'a>(s: &'a str, what: &str) -> Vec<&'a str> {
    s.lines().filter(|l| l.contains(what)).collect()
}

#[test]
fn ledger_view_at_two_sizes() {
    let run = sim_on_16_cores(Scenario::Mixed, 8, 90.0);
    let mut app = dashboard(run.snapshot(), true);
    app.apply(Action::ToggleLedger);
    assert_eq!(app.overlay, Some(Overlay::Ledger));
    for (w, h) in [(80, 24), (120, 40)] {
        let s = screen(&app, w, h);
        assert!(s.contains("Ledger since 12:00:00 UTC"), "{s}");
        assert!(s.contains("Esc or L closes"), "{s}");
        // Every line fits: nothing is drawn past the border.
        assert!(
            s.lines().all(|l| l.chars().count() == usize::from(w)),
            "{s}"
        );
        // Without a price there is no money.
        assert!(!s.contains('$') && !s.contains(" COST"), "{s}");
        // The starving GPU's loss by kind is under it.
        assert!(s.contains("input starvation"), "{s}");
        // The footer says how to leave.
        assert!(
            s.lines().last().is_some_and(|l| l.contains("Esc/L close")),
            "{s}"
        );
        insta::assert_snapshot!(format!("ledger_{w}x{h}"), s);
    }
    // At 120×60 the processes and users are on the first page, worst first.
    let s = screen(&app, 120, 60);
    assert!(s.contains("Processes, most lost first"), "{s}");
    let header = rows_with(&s, "GPU TIME")[0];
    for title in ["PID", "USER", "COMMAND", "LOST", "ENERGY"] {
        assert!(header.contains(title), "{title}: {header}");
    }
    assert!(s.contains("Users, most lost first"), "{s}");
    assert!(s.contains("python train.py"), "{s}");
}

#[test]
fn prices_show_what_the_time_cost() {
    let run = sim_on_16_cores(Scenario::Starving, 1, 90.0);
    let mut app = dashboard(run.snapshot(), true);
    app.prices = usd();
    // The diagnosis line: what the finding cost so far, then the fix's lead.
    let s = screen(&app, 80, 24);
    let line = rows_with(&s, "GPU 0 input starvation")[0];
    assert!(line.contains("% lost · 50 GPU-s, $0.04 → "), "{line}");
    assert!(line.contains("→ num_workers 7→14"), "{line}");
    app.apply(Action::ToggleLedger);
    let s = screen(&app, 120, 40);
    let header = rows_with(&s, "BOOKED")[0];
    assert!(
        header.contains("COST") && header.contains("LOST $"),
        "{header}"
    );
    let gpu = s
        .lines()
        .find(|l| l.contains("│0   NVIDIA H200"))
        .unwrap_or_else(|| panic!("GPU 0's row\n{s}"));
    // 2.5 USD an hour and 0.30 a kWh over 90 s: about 6 cents of GPU time.
    assert!(gpu.contains("$0.06"), "{gpu}");
    assert!(rows_with(&s, "python train.py")[0].contains('$'), "{s}");
    insta::assert_snapshot!("ledger_priced_120x40", s);
}

#[test]
fn a_gpu_without_power_shows_no_energy_rather_than_zero() {
    let mut run = SimRun::new(Scenario::Starving, 1);
    for _ in 0..240 {
        run.ingest_tick(|_, gpus| {
            gpus.into_iter()
                .map(|mut g: GpuReading| {
                    g.metrics.power_w = None;
                    g.metrics.energy_j = None;
                    g
                })
                .collect()
        });
    }
    let mut app = dashboard(run.snapshot(), true);
    app.apply(Action::ToggleLedger);
    let s = screen(&app, 120, 40);
    let gpu = s
        .lines()
        .find(|l| l.contains("│0   NVIDIA H200"))
        .unwrap_or_else(|| panic!("GPU 0's row\n{s}"));
    assert!(gpu.contains('—'), "{gpu}");
    assert!(!gpu.contains(" Wh"), "{gpu}");
    assert!(rows_with(&s, "python train.py")[0].contains('—'), "{s}");
}

#[test]
fn the_view_scrolls_by_rows_and_pages_and_stops_at_the_end() {
    let run = sim_on_16_cores(Scenario::Mixed, 8, 60.0);
    let mut app = dashboard(run.snapshot(), true);
    app.apply(Action::ToggleLedger);
    let top = screen(&app, 80, 24);
    assert!(top.contains("rows 1–20 of"), "{top}");
    app.apply(Action::ScrollLedger(1));
    assert!(screen(&app, 80, 24).contains("rows 2–21 of"));
    app.apply(Action::ScrollLedger(i32::MAX));
    let end = screen(&app, 80, 24);
    assert!(end.contains("Users, most lost first"), "{end}");
    assert!(!end.contains("rows 1–"), "{end}");
    app.apply(Action::ScrollLedger(i32::MIN));
    assert_eq!(screen(&app, 80, 24), top);
    // Closing and opening again starts at the top.
    app.apply(Action::PageLedger(1));
    app.apply(Action::ToggleLedger);
    assert_eq!(app.overlay, None);
    app.apply(Action::ToggleLedger);
    assert_eq!(screen(&app, 80, 24), top);
}

#[test]
fn tiny_terminals_never_panic() {
    let run = sim_on_16_cores(Scenario::Mixed, 8, 30.0);
    let mut app = dashboard(run.snapshot(), true);
    app.prices = usd();
    app.apply(Action::ToggleLedger);
    assert!(screen(&app, 10, 5).contains("too"), "says it is too small");
    for w in 0..=70 {
        for h in 0..=18 {
            let _ = support::api::whole_screen(&app, w, h);
        }
    }
    // The view alone, at any size down to nothing.
    for w in 0..=24 {
        for h in 0..=6 {
            ledger_view(&app, w, h);
        }
    }
    let s = ledger_view(&app, 10, 5);
    assert_eq!(s.lines().count(), 5, "{s}");
}

#[test]
fn the_help_lists_the_ledger_key() {
    assert!(BINDINGS
        .iter()
        .any(|(k, what)| *k == "L" && what.contains("ledger")));
}
