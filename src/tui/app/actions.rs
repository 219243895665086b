//! What each user action does to the UI state: one match from [`Action`] to the change, with the
//! process table's and the replay's actions in their own steps.

use super::{App, Focus, Overlay, HELP_SCROLL_MAX};
use crate::tui::action::Action;
use crate::tui::dialog::SignalDialog;
use crate::tui::event_log;
use crate::tui::ledger_rows::LedgerScroll;
use crate::tui::replay_bar::SEEK_S;
use crate::tui::widgets::ledger::row_count;
use crate::tui::zoom::{zoom_in, zoom_out};

impl App {
    /// Apply one user action.
    pub fn apply(&mut self, action: Action) {
        match action {
            Action::Quit => self.quit = true,
            Action::ToggleHelp
            | Action::ScrollHelp(_)
            | Action::ToggleLog
            | Action::LogKey(_)
            | Action::ToggleLedger
            | Action::ScrollLedger(_)
            | Action::PageLedger(_)
            | Action::CloseOverlay => self.apply_overlay(action),
            Action::SelectNext | Action::SelectPrev | Action::SelectGpu(_) => {
                self.select_gpu(action)
            }
            Action::ToggleExpand => self.details = !self.details,
            Action::TogglePause => self.toggle_pause(),
            Action::ZoomIn => self.window_s = zoom_in(self.window_s),
            Action::ZoomOut => self.window_s = zoom_out(self.window_s, self.retention_s),
            Action::ToggleFocus => {
                self.focus = match self.focus {
                    Focus::Processes => Focus::Gpus,
                    _ => Focus::Processes,
                }
            }
            Action::FocusNext => self.focus = self.focus.next(),
            Action::FocusPrev => self.focus = self.focus.prev(),
            Action::FocusGpus => self.focus = Focus::Gpus,
            Action::FocusPanel(f) => self.focus = f,
            Action::ScrollEvents(d) => self.scroll_events(d),
            Action::EventsNewest => self.events_bottom = None,
            Action::OpenSignalDialog => self.open_signal_dialog(),
            Action::DialogYes => {
                let sender = self.signaller.clone();
                if let Some(d) = &mut self.dialog {
                    if !d.confirm(sender.as_ref()) {
                        self.dialog = None;
                    }
                }
            }
            Action::DialogKill => {
                if let Some(d) = &mut self.dialog {
                    if !d.escalate() {
                        self.dialog = None;
                    }
                }
            }
            Action::DialogClose => self.dialog = None,
            // The event loop starts and stops the recorder; the app only shows its status.
            Action::ToggleRecord => {}
            Action::ReplaySpeed(_)
            | Action::ReplayFaster
            | Action::ReplaySlower
            | Action::SeekBack
            | Action::SeekForward
            | Action::NextFinding => self.apply_replay(action),
            _ => self.apply_table(action),
        }
    }

    /// Open, close or scroll an overlay: the help, the log view, the ledger view.
    fn apply_overlay(&mut self, action: Action) {
        match action {
            Action::ToggleHelp => {
                self.help_scroll = 0;
                self.toggle_overlay(Overlay::Help);
            }
            Action::ScrollHelp(d) => {
                self.help_scroll = self
                    .help_scroll
                    .saturating_add_signed(d)
                    .min(HELP_SCROLL_MAX)
            }
            Action::ToggleLog => self.toggle_overlay(Overlay::Log),
            Action::LogKey(k) => self.log_view.key(k),
            Action::ToggleLedger => {
                self.ledger_scroll = LedgerScroll::default();
                self.toggle_overlay(Overlay::Ledger);
            }
            Action::ScrollLedger(d) => {
                let rows = row_count(self.displayed());
                self.ledger_scroll.by(i64::from(d), rows, self.screen_rows)
            }
            Action::PageLedger(d) => {
                let rows = row_count(self.displayed());
                self.ledger_scroll
                    .page(i64::from(d), rows, self.screen_rows)
            }
            Action::CloseOverlay => self.overlay = None,
            _ => {}
        }
    }

    /// Show `overlay`, or close it when it is the one shown.
    fn toggle_overlay(&mut self, overlay: Overlay) {
        self.overlay = if self.overlay == Some(overlay) {
            None
        } else {
            Some(overlay)
        };
    }

    /// Move the selection to the next, previous or a given GPU (wrapping round).
    fn select_gpu(&mut self, action: Action) {
        let n = self.gpu_count();
        if n == 0 {
            return;
        }
        match action {
            Action::SelectNext => self.selected = (self.selected + 1) % n,
            Action::SelectPrev => self.selected = (self.selected + n - 1) % n,
            Action::SelectGpu(i) if i < n => {
                self.selected = i;
                self.focus = Focus::Gpus;
            }
            _ => {}
        }
    }

    /// Pause or resume: the replay's clock while replaying, else freeze the displayed snapshot.
    fn toggle_pause(&mut self) {
        if let Some(r) = &mut self.replay {
            r.toggle_pause();
            return;
        }
        self.frozen = match self.frozen {
            Some(_) => None,
            None => Some(self.latest.clone()),
        };
        self.clamp_selection();
    }

    /// Scroll the events `d` lines older (negative: newer); back to following the newest once
    /// past it.
    fn scroll_events(&mut self, d: i32) {
        let Some((oldest, newest)) = event_log::bounds() else {
            self.events_bottom = None;
            return;
        };
        let bottom = self.events_bottom.unwrap_or(newest) as i64 - i64::from(d);
        self.events_bottom = (bottom < newest as i64).then(|| bottom.max(oldest as i64) as u64);
    }

    /// The process table's actions.
    fn apply_table(&mut self, action: Action) {
        match action {
            Action::RowNext | Action::RowPrev => {
                let rows = self.process_rows();
                let delta = if action == Action::RowNext { 1 } else { -1 };
                self.table.move_selection(&rows, delta);
            }
            Action::SelectRow(i) => {
                let rows = self.process_rows();
                if let Some(row) = rows.get(i) {
                    self.table.selected_pid = Some(row.pid);
                    self.focus = Focus::Processes;
                }
            }
            Action::ScrollLeft => self.table.scroll_sideways(-1),
            Action::ScrollRight => {
                let longest = self
                    .process_rows()
                    .iter()
                    .map(|r| r.command.chars().count())
                    .max()
                    .unwrap_or(0);
                self.table.scroll_sideways(1);
                self.table.hscroll = self.table.hscroll.min(longest.saturating_sub(1));
            }
            Action::SortNext => self.table.sort_next(),
            Action::SortReverse => self.table.sort_reverse(),
            Action::ToggleTree => self.table.view.tree = !self.table.view.tree,
            Action::ToggleAllGpus => self.table.all_gpus = !self.table.all_gpus,
            Action::OpenFilter => self.table.open_prompt(),
            Action::FilterChar(c) => self.table.type_char(c),
            Action::FilterBackspace => self.table.backspace(),
            Action::FilterApply => self.table.apply_prompt(),
            Action::FilterClear => self.table.clear_filter(),
            _ => {}
        }
    }

    /// The replay controls (nothing while the data is live).
    fn apply_replay(&mut self, action: Action) {
        let Some(r) = &mut self.replay else {
            return;
        };
        match action {
            Action::ReplaySpeed(x) => r.set_speed(f64::from(x)),
            Action::ReplayFaster | Action::ReplaySlower => {
                r.step_speed(action == Action::ReplayFaster)
            }
            Action::SeekBack => r.seek(-SEEK_S),
            Action::SeekForward => r.seek(SEEK_S),
            Action::NextFinding => r.next_finding(),
            _ => {}
        }
    }

    /// Open the signal dialog on the selected process row, if any.
    fn open_signal_dialog(&mut self) {
        let rows = self.process_rows();
        match self.table.selected_row(&rows) {
            Some(row) => {
                self.table.selected_pid = Some(row.pid);
                self.dialog = Some(SignalDialog::open(row, self.signaller.as_ref()));
            }
            None => tracing::info!(
                target: "gpulse::events",
                "no process to signal: the table is empty"
            ),
        }
    }
}
