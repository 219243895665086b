//! UI state only: which GPU is selected, what is shown in detail, paused or zoomed, which panel
//! has the keys, which overlay is open. The data itself lives in the engine's snapshots; the app
//! only chooses which one to show.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::engine::Snapshot;
use crate::host::{ProcessRow, Signaller};
use crate::ledger::Prices;
use crate::model::UnixTime;

use super::action::KeyContext;
use super::background_recording::RecordingStatus;
use super::dialog::{SignalDialog, SignalSender};
pub use super::focus::{Focus, Overlay};
use super::ledger_rows::LedgerScroll;
use super::process_table::ProcessTableState;
use super::replay_bar::ReplayState;
use super::widgets::log_view::LogViewState;
pub use super::zoom::ZOOM_STEPS;

mod actions;

/// The help scrolls no further than this many lines.
const HELP_SCROLL_MAX: u16 = 64;

/// The dashboard's UI state.
#[derive(Debug, Clone)]
pub struct App {
    /// Position of the selected GPU in the snapshot's GPU list.
    pub selected: usize,
    /// Whether the selected GPU's details are shown beside its charts (clocks, fan, P-state, PCIe
    /// link, ...: values that rarely change).
    pub details: bool,
    /// Chart window, seconds.
    pub window_s: f64,
    /// The longest window (the history kept).
    pub retention_s: f64,
    pub overlay: Option<Overlay>,
    /// Lines of the help scrolled past.
    pub help_scroll: u16,
    pub focus: Focus,
    /// Draw with colours (false: modifiers only).
    pub color: bool,
    /// Draw the tracing events in the log panel (false in screen tests, whose output must not
    /// depend on what else logged).
    pub live_log: bool,
    /// Events logged before this frame ([`super::event_log::logged`]): the event panel is kept as it is
    /// on screen while this has not moved (`None`: drawn every frame).
    pub log_events: Option<u64>,
    /// The newest event shown at the bottom of the event panel (`None`: the newest logged, and
    /// new ones as they come).
    pub events_bottom: Option<u64>,
    /// Wall-clock time of this frame, for the ages of stale readings.
    pub now: UnixTime,
    /// Set once the user asked to quit.
    pub quit: bool,
    /// The process table's sort, filter, tree mode, selected row and sideways scroll.
    pub table: ProcessTableState,
    /// The signal dialog, while open.
    pub dialog: Option<SignalDialog>,
    /// Decides and sends signals from the dialog.
    pub signaller: Arc<dyn SignalSender>,
    /// A recording being played (`None`: live data).
    pub replay: Option<ReplayState>,
    /// A recording being written, for the status line.
    pub recording: Option<RecordingStatus>,
    /// Where `/metrics` is served, for the status line.
    pub serving: Option<SocketAddr>,
    /// What GPU time and energy cost (the ledger's money; none without a price).
    pub prices: Prices,
    /// Where the ledger view is scrolled to.
    pub ledger_scroll: LedgerScroll,
    /// The log view's target, levels and paging, kept between openings.
    pub log_view: LogViewState,
    /// Rows of the terminal at the last frame (0: not drawn on one), for the ledger's pages.
    pub screen_rows: u16,
    latest: Arc<Snapshot>,
    /// The snapshot held on screen while paused (sampling goes on into `latest`).
    frozen: Option<Arc<Snapshot>>,
}

impl App {
    /// The app for a snapshot stream whose first snapshot is `first`. Signals follow the backend's
    /// rules (simulated and replayed processes refuse) until [`App::signaller`] is replaced.
    pub fn new(first: Arc<Snapshot>, window_s: f64, retention_s: f64, color: bool) -> Self {
        let retention_s = retention_s.max(1.0);
        let signaller: Arc<dyn SignalSender> =
            Arc::new(Signaller::new(&first.system.backend, false));
        App {
            selected: 0,
            details: false,
            window_s: window_s.clamp(1.0, retention_s),
            retention_s,
            overlay: None,
            help_scroll: 0,
            focus: Focus::Gpus,
            color,
            live_log: true,
            log_events: None,
            events_bottom: None,
            now: first.t,
            quit: false,
            table: ProcessTableState::default(),
            dialog: None,
            signaller,
            replay: None,
            recording: None,
            serving: None,
            prices: Prices::default(),
            ledger_scroll: LedgerScroll::default(),
            log_view: LogViewState::default(),
            screen_rows: 0,
            latest: first,
            frozen: None,
        }
    }

    /// A new snapshot from the engine. Returns whether the screen changes (not while paused).
    pub fn on_snapshot(&mut self, snapshot: Arc<Snapshot>) -> bool {
        self.latest = snapshot;
        if self.now < self.latest.t {
            self.now = self.latest.t;
        }
        self.clamp_selection();
        self.frozen.is_none()
    }

    /// The snapshot to draw: the frozen one while paused, else the newest.
    pub fn displayed(&self) -> &Arc<Snapshot> {
        self.frozen.as_ref().unwrap_or(&self.latest)
    }

    /// The newest snapshot, whether or not it is shown.
    pub fn latest(&self) -> &Arc<Snapshot> {
        &self.latest
    }

    /// The time ages are measured at: the wall clock, or the shown snapshot's time while paused
    /// or replaying (recorded data is not stale for being old).
    pub fn display_now(&self) -> UnixTime {
        match &self.frozen {
            Some(s) => s.t,
            None if self.replay.is_some() => self.latest.t,
            None => self.now,
        }
    }

    pub fn paused(&self) -> bool {
        self.frozen.is_some()
    }

    /// What the key map needs to know of this state.
    pub fn key_context(&self) -> KeyContext {
        KeyContext {
            dialog: self.dialog.is_some(),
            prompt: self.table.prompt.is_some(),
            help: self.overlay == Some(Overlay::Help),
            ledger: self.overlay == Some(Overlay::Ledger),
            log: self.overlay == Some(Overlay::Log),
            focus: self.focus,
            replay: self.replay.is_some(),
        }
    }

    /// Position of the GPU shown (the selection, within the displayed snapshot).
    pub fn selected_gpu(&self) -> usize {
        self.selected.min(self.gpu_count().saturating_sub(1))
    }

    /// The process table's rows for the displayed snapshot.
    pub fn process_rows(&self) -> Vec<ProcessRow> {
        self.table.rows(self.displayed(), self.selected_gpu())
    }

    fn gpu_count(&self) -> usize {
        self.displayed().gpus.len()
    }

    fn clamp_selection(&mut self) {
        let n = self.gpu_count();
        if n == 0 {
            self.selected = 0;
        } else if self.selected >= n {
            self.selected = n - 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::sim::Scenario;
    use crate::tui::action::Action;
    use crate::tui::fixture::SimRun;

    #[test]
    fn selection_wraps_both_ways() {
        let run = SimRun::new(Scenario::Mixed, 3);
        let mut app = App::new(run.snapshot(), 60.0, 600.0, true);
        assert_eq!(app.selected, 0);
        app.apply(Action::SelectPrev);
        assert_eq!(app.selected, 2);
        app.apply(Action::SelectNext);
        assert_eq!(app.selected, 0);
        for _ in 0..4 {
            app.apply(Action::SelectNext);
        }
        assert_eq!(app.selected, 1);
    }

    #[test]
    fn zoom_is_bounded_by_the_shortest_step_and_the_retention() {
        let run = SimRun::new(Scenario::Healthy, 1);
        let mut app = App::new(run.snapshot(), 60.0, 600.0, true);
        for _ in 0..20 {
            app.apply(Action::ZoomIn);
        }
        assert_eq!(app.window_s, ZOOM_STEPS[0]);
        let mut seen = vec![app.window_s];
        for _ in 0..20 {
            app.apply(Action::ZoomOut);
            seen.push(app.window_s);
        }
        assert_eq!(app.window_s, 600.0);
        assert!(seen.windows(2).all(|w| w[1] >= w[0]));
        // A window asked for beyond the retention is cut to it.
        let app = App::new(run.snapshot(), 3600.0, 600.0, true);
        assert_eq!(app.window_s, 600.0);
    }

    #[test]
    fn pause_freezes_the_displayed_snapshot_while_new_ones_arrive() {
        let mut run = SimRun::new(Scenario::Starving, 1);
        run.advance(5.0);
        let mut app = App::new(run.snapshot(), 60.0, 600.0, true);
        assert!(app.on_snapshot(run.snapshot()));
        app.apply(Action::TogglePause);
        let frozen_seq = app.displayed().seq;
        run.advance(2.0);
        assert!(!app.on_snapshot(run.snapshot()), "no redraw while paused");
        assert_eq!(app.displayed().seq, frozen_seq);
        assert_eq!(app.latest().seq, frozen_seq + 8, "sampling went on");
        assert_eq!(app.display_now(), app.displayed().t);
        app.apply(Action::TogglePause);
        assert_eq!(app.displayed().seq, frozen_seq + 8);
    }

    #[test]
    fn help_toggles_and_escape_closes() {
        let run = SimRun::new(Scenario::Healthy, 1);
        let mut app = App::new(run.snapshot(), 60.0, 600.0, true);
        app.apply(Action::ToggleHelp);
        assert_eq!(app.overlay, Some(Overlay::Help));
        app.apply(Action::CloseOverlay);
        assert_eq!(app.overlay, None);
        app.apply(Action::ToggleExpand);
        assert!(app.details);
        app.apply(Action::Quit);
        assert!(app.quit);
    }
}
