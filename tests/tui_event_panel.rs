//! The event panel is copied from its last drawing between events: a new event still shows on
//! the next frame, and a copied frame is the same as one drawn from scratch.

use gpulse::backend::sim::Scenario;
use gpulse::tui::fixture::SimRun;
use gpulse::tui::{draw_frame, App};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

fn text(term: &Terminal<TestBackend>) -> String {
    let buf = term.backend().buffer();
    let mut out = String::new();
    for y in 0..buf.area.height {
        for x in 0..buf.area.width {
            out.push_str(buf[(x, y)].symbol());
        }
        out.push('\n');
    }
    out
}

#[test]
fn new_events_show_on_the_next_frame_and_copies_match_fresh_drawings() {
    gpulse::tui::init_tui_logging();
    let mut run = SimRun::new(Scenario::Healthy, 1);
    run.advance(30.0);
    let mut app = App::new(run.snapshot(), 60.0, 600.0, false);
    let mut term = Terminal::new(TestBackend::new(160, 48)).expect("terminal");

    tracing::info!(target: "gpulse::events", "first event here");
    draw_frame(&mut term, &mut app).expect("draw");
    let first = text(&term);
    assert!(first.contains("first event here"), "{first}");

    // Frames without events: the panel comes from the copy, and it is what a fresh drawing gives.
    for _ in 0..3 {
        run.advance(0.25);
        app.on_snapshot(run.snapshot());
        draw_frame(&mut term, &mut app).expect("draw");
    }
    let copied = text(&term);
    let mut fresh_app = app.clone();
    fresh_app.log_events = None;
    let mut fresh = Terminal::new(TestBackend::new(160, 48)).expect("terminal");
    fresh
        .draw(|f| gpulse::tui::draw(f, &fresh_app))
        .expect("draw");
    assert_eq!(copied, text(&fresh));

    // A new event is drawn on the next frame.
    tracing::warn!(target: "gpulse::events", "second event here");
    draw_frame(&mut term, &mut app).expect("draw");
    let second = text(&term);
    assert!(second.contains("second event here"), "{second}");
    assert!(second.contains("first event here"), "{second}");

    // A resized terminal draws the panel again at its new size.
    term.backend_mut().resize(100, 30);
    draw_frame(&mut term, &mut app).expect("draw");
    let small = text(&term);
    assert!(small.contains("second event here"), "{small}");
    assert_eq!(small.lines().count(), 30);
}
