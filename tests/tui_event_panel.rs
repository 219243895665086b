//! The event panel of the dashboard drawn in parts (`gpulse::tui::canvas`): kept while no event
//! is logged, drawn again on the next frame when one is. (The screen drawn in parts against the
//! screen drawn whole: `tui_parts_whole.rs`, its own process, as its GPUs log findings.)

mod support;

use ratatui::backend::TestBackend;
use support::api::{
    draw_frame, init_tui_logging, whole_screen, Action, App, PartsTerminal, Scenario, SimRun,
};
use support::screen::text;

#[test]
fn new_events_show_on_the_next_frame_and_kept_panels_match_fresh_drawings() {
    init_tui_logging();
    let mut run = SimRun::new(Scenario::Healthy, 1);
    run.advance(30.0);
    let mut app = App::new(run.snapshot(), 60.0, 600.0, false);
    let mut term = PartsTerminal::new(TestBackend::new(160, 48));

    tracing::info!(target: "gpulse::events", "first event here");
    draw_frame(&mut term, &mut app).expect("draw");
    let first = text(term.backend().buffer());
    assert!(first.contains("first event here"), "{first}");

    // Frames without events: the panel is kept, and it is what a fresh drawing gives.
    for _ in 0..3 {
        run.advance(0.25);
        app.on_snapshot(run.snapshot());
        draw_frame(&mut term, &mut app).expect("draw");
    }
    let kept = text(term.backend().buffer());
    let mut fresh_app = app.clone();
    fresh_app.log_events = None;
    assert_eq!(kept, text(&whole_screen(&fresh_app, 160, 48)));

    // A new event is drawn on the next frame.
    tracing::warn!(target: "gpulse::events", "second event here");
    draw_frame(&mut term, &mut app).expect("draw");
    let second = text(term.backend().buffer());
    assert!(second.contains("second event here"), "{second}");
    assert!(second.contains("first event here"), "{second}");

    // A resized terminal draws the panel again at its new size.
    term.backend_mut().resize(100, 30);
    draw_frame(&mut term, &mut app).expect("draw");
    let small = text(term.backend().buffer());
    assert!(small.contains("second event here"), "{small}");
    assert_eq!(small.lines().count(), 30);
}

/// The log view (`l`) shows an event whole, wrapped, with its target, where the event panel cuts
/// it to one line; the panel's line ends with `…`.
#[test]
fn the_log_view_shows_a_long_event_whole_with_its_target() {
    init_tui_logging();
    let mut run = SimRun::new(Scenario::Healthy, 1);
    run.advance(10.0);
    let mut app = App::new(run.snapshot(), 60.0, 600.0, false);
    let mut term = PartsTerminal::new(TestBackend::new(100, 30));
    let long = "a long event that names every step: sampler, detector, ledger, exporter, \
                and ends with the word zebrafinch";
    tracing::warn!(target: "gpulse::backend", "{long}");
    draw_frame(&mut term, &mut app).expect("draw");
    let panel = text(term.backend().buffer());
    assert!(panel.contains("a long event that names"), "{panel}");
    assert!(!panel.contains("zebrafinch"), "the panel cuts it: {panel}");

    app.apply(Action::ToggleLog);
    draw_frame(&mut term, &mut app).expect("draw");
    let view = text(term.backend().buffer());
    assert!(view.contains(" Log "), "{view}");
    assert!(
        view.contains("zebrafinch"),
        "the view shows it whole: {view}"
    );
    assert!(view.contains("gpulse::backend"), "its target: {view}");
    assert!(view.contains("Esc/l close"), "the footer: {view}");
    app.apply(Action::ToggleLog);
    draw_frame(&mut term, &mut app).expect("draw");
    let back = text(term.backend().buffer());
    assert!(back.contains(" Events "), "{back}");
}
