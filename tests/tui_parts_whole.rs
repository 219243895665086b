//! The dashboard drawn in parts (`gpulse::tui::canvas`) holds, frame after frame, what a drawing
//! of the whole screen gives. (Its own test binary: the simulated GPUs' findings are logged, and
//! the event panel's test, whose panel shows this process's events, must not see them.)

mod support;

use ratatui::backend::TestBackend;
use support::api::{draw_frame, whole_screen, Action, App, PartsTerminal, Scenario, SimRun};

/// Frame after frame, while findings come and go, the selection moves, details are shown, the
/// process table is focused, sorted and filtered, the zoom changes, the help overlay opens and
/// closes, the display is paused and the terminal is resized (down to too small), the terminal
/// drawn in parts holds exactly the cells of a whole drawing, and most parts are kept.
#[test]
fn the_screen_drawn_in_parts_is_the_screen_drawn_whole() {
    let actions = [
        Action::SelectNext,
        Action::ToggleExpand,
        Action::ToggleFocus,
        Action::RowNext,
        Action::SortNext,
        Action::ZoomIn,
        Action::ToggleHelp,
        Action::CloseOverlay,
        Action::ToggleFocus,
        Action::TogglePause,
        Action::ToggleTree,
        Action::TogglePause,
        Action::ToggleExpand,
        Action::SelectPrev,
        Action::ZoomOut,
    ];
    let sizes = [(160, 48), (80, 24), (200, 60), (59, 20), (120, 40)];
    for (scenario, gpus) in [
        (Scenario::Starving, 1),
        (Scenario::Mixed, 4),
        (Scenario::Mixed, 8),
        (Scenario::Checkpoint, 2),
    ] {
        let mut run = SimRun::new(scenario, gpus);
        run.advance(20.0);
        let mut app = App::new(run.snapshot(), 60.0, 600.0, true);
        app.live_log = false;
        let (mut w, mut h) = sizes[0];
        let mut term = PartsTerminal::new(TestBackend::new(w, h));
        let mut frames = 0u64;
        for step in 0..240 {
            run.advance(0.25);
            app.on_snapshot(run.snapshot());
            app.now = app.displayed().t + 0.1;
            if step % 12 == 11 {
                app.apply(actions[(step / 12) % actions.len()]);
            }
            if step % 50 == 49 {
                (w, h) = sizes[(step / 50 + 1) % sizes.len()];
                term.backend_mut().resize(w, h);
            }
            draw_frame(&mut term, &mut app).expect("draw");
            frames += 1;
            assert_eq!(
                term.backend().buffer(),
                &whole_screen(&app, w, h),
                "{scenario:?} on {gpus} GPU(s), {w}x{h}, step {step}"
            );
        }
        // A 160x48 screen has 20 to 30 parts; most are kept from frame to frame (about 6 drawn
        // a frame: the selected GPU's charts whose load moves, its readings while its details
        // are shown, the GPU list's every frame: its charts all move together).
        let (_, drawn) = term.parts_drawn();
        let per_frame = drawn as f64 / frames as f64;
        assert!(
            per_frame < 7.0,
            "{scenario:?} on {gpus} GPU(s): {per_frame:.1} parts drawn per frame"
        );
    }
}
