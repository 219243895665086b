//! Keys to actions, in one place. The app never looks at a key itself.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::focus::Focus;

/// Something the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Quit,
    ToggleHelp,
    CloseOverlay,
    /// Scroll the help by this many lines (positive: down).
    ScrollHelp(i16),
    /// Open or close the ledger view.
    ToggleLedger,
    /// Open or close the log view.
    ToggleLog,
    /// A key for the log view's own state (target, levels, paging).
    LogKey(tui_logger::TuiWidgetEvent),
    /// Scroll the ledger view by this many rows / pages (positive: down).
    ScrollLedger(i32),
    PageLedger(i32),
    SelectNext,
    SelectPrev,
    /// Select the GPU at this position (a click on its row).
    SelectGpu(usize),
    /// Show or hide the selected GPU's details (clocks, fan, P-state, PCIe link, ...).
    ToggleExpand,
    TogglePause,
    /// A shorter chart window.
    ZoomIn,
    /// A longer chart window (up to the retention).
    ZoomOut,
    /// Move the arrow keys' focus between the GPUs and the process table.
    ToggleFocus,
    /// Focus the next / previous panel (GPUs, processes, events).
    FocusNext,
    FocusPrev,
    FocusGpus,
    /// Focus this panel (a click on it).
    FocusPanel(Focus),
    /// The next / previous process row.
    RowNext,
    RowPrev,
    /// Select the process row at this position and focus the table (a click on it).
    SelectRow(usize),
    /// Scroll the process table's commands sideways.
    ScrollLeft,
    ScrollRight,
    /// Scroll the events by this many lines (positive: older).
    ScrollEvents(i32),
    /// Back to the newest events, following new ones.
    EventsNewest,
    /// Sort the process table by the next column.
    SortNext,
    SortReverse,
    ToggleTree,
    /// The processes of every GPU, or of the selected one.
    ToggleAllGpus,
    /// Open the filter prompt; then type, erase, keep (Enter) or clear (Esc).
    OpenFilter,
    FilterChar(char),
    FilterBackspace,
    FilterApply,
    FilterClear,
    /// Ask to signal the selected process.
    OpenSignalDialog,
    /// In the dialog: send the signal asked about.
    DialogYes,
    /// In the dialog, after TERM: ask about KILL.
    DialogKill,
    DialogClose,
    /// Start or stop recording.
    ToggleRecord,
    /// Replay at this many times real time.
    ReplaySpeed(u16),
    ReplayFaster,
    ReplaySlower,
    SeekBack,
    SeekForward,
    NextFinding,
}

/// Every key binding, for the help overlay: (keys, what they do).
pub const BINDINGS: &[(&str, &str)] = &[
    ("q  F10  Ctrl-C", "quit"),
    ("?  h  F1", "show or hide this help (↑↓ scroll it)"),
    ("Esc", "close help, dialog or filter; focus the GPUs"),
    ("Tab  Shift-Tab", "focus the next / previous panel"),
    ("↓ j  ↑ k", "next / previous GPU, process row or event"),
    ("Enter", "show or hide the GPU's details (clocks, link)"),
    ("L", "ledger: time, energy, cost lost by GPU, process, user"),
    ("p  Space", "pause the display (replay: pause playback)"),
    ("+ =  - _", "zoom in / out (up to the history kept)"),
    ("P", "focus the process table and back"),
    ("← →", "scroll the commands sideways"),
    ("s F6  S", "sort processes by the next column / reverse"),
    ("/  F3 F4", "filter processes (Enter keeps, Esc clears)"),
    ("t  F5", "tree: each process with its children"),
    ("a", "processes of every GPU or the selected one"),
    ("K  F9", "send SIGTERM, then SIGKILL, to the selected row"),
    ("PgUp PgDn End", "events: older / newer page, the newest"),
    ("l", "log: every event whole, by target and level"),
    ("r", "start or stop recording to a file"),
    ("1 2 0  < >", "replay speed ×1 ×2 ×10, slower, faster"),
    ("[ ]  ← →", "replay: seek back / forward 10 s"),
    ("n", "replay: jump to the next finding"),
    ("mouse", "click a GPU, a process or a panel; wheel scrolls"),
];

/// What the key map needs to know of the app's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KeyContext {
    /// The signal dialog is open.
    pub dialog: bool,
    /// The filter prompt is open.
    pub prompt: bool,
    /// The help is shown.
    pub help: bool,
    /// The ledger view is shown.
    pub ledger: bool,
    /// The log view is shown.
    pub log: bool,
    pub focus: Focus,
    /// A recording is being played.
    pub replay: bool,
}

/// Events a page key scrolls.
pub const EVENTS_PAGE: i32 = 10;

/// The action a key asks for in this state, if any.
pub fn map_key(key: KeyEvent, ctx: &KeyContext) -> Option<Action> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    if key.modifiers.contains(KeyModifiers::CONTROL) {
        return match key.code {
            KeyCode::Char('c') | KeyCode::Char('C') => Some(Action::Quit),
            _ => None,
        };
    }
    if ctx.dialog {
        return Some(match key.code {
            KeyCode::Char('y') | KeyCode::Char('Y') => Action::DialogYes,
            KeyCode::Char('K') | KeyCode::F(9) => Action::DialogKill,
            _ => Action::DialogClose,
        });
    }
    if ctx.prompt {
        return match key.code {
            KeyCode::Esc => Some(Action::FilterClear),
            KeyCode::Enter => Some(Action::FilterApply),
            KeyCode::Backspace => Some(Action::FilterBackspace),
            KeyCode::Char(c) => Some(Action::FilterChar(c)),
            _ => None,
        };
    }
    if ctx.help {
        return match key.code {
            KeyCode::Char('q') | KeyCode::F(10) => Some(Action::Quit),
            KeyCode::Esc | KeyCode::Char('?') | KeyCode::Char('h') | KeyCode::F(1) => {
                Some(Action::CloseOverlay)
            }
            KeyCode::Down | KeyCode::Char('j') => Some(Action::ScrollHelp(1)),
            KeyCode::Up | KeyCode::Char('k') => Some(Action::ScrollHelp(-1)),
            KeyCode::PageDown | KeyCode::Char(' ') => Some(Action::ScrollHelp(10)),
            KeyCode::PageUp => Some(Action::ScrollHelp(-10)),
            _ => None,
        };
    }
    if ctx.log {
        return log_key(key.code);
    }
    if ctx.ledger {
        return ledger_key(key.code, ctx.replay);
    }
    if ctx.replay {
        if let Some(a) = replay_key(key.code, ctx.focus) {
            return Some(a);
        }
    }
    focus_key(key.code, ctx.focus).or_else(|| global_key(key.code))
}

/// Keys while the ledger view is shown: close, scroll, quit, pause; in a replay its controls
/// (← → seek).
fn ledger_key(code: KeyCode, replay: bool) -> Option<Action> {
    match code {
        KeyCode::Esc | KeyCode::Char('L') => Some(Action::ToggleLedger),
        KeyCode::Char('q') | KeyCode::F(10) => Some(Action::Quit),
        KeyCode::Down | KeyCode::Char('j') => Some(Action::ScrollLedger(1)),
        KeyCode::Up | KeyCode::Char('k') => Some(Action::ScrollLedger(-1)),
        KeyCode::PageDown => Some(Action::PageLedger(1)),
        KeyCode::PageUp => Some(Action::PageLedger(-1)),
        KeyCode::Home | KeyCode::Char('g') => Some(Action::ScrollLedger(i32::MIN)),
        KeyCode::End | KeyCode::Char('G') => Some(Action::ScrollLedger(i32::MAX)),
        KeyCode::Char('p') | KeyCode::Char(' ') => Some(Action::TogglePause),
        _ if replay => replay_key(code, Focus::Gpus),
        _ => None,
    }
}

/// Keys while the log view is shown: close, quit, and the view's own keys.
fn log_key(code: KeyCode) -> Option<Action> {
    match code {
        KeyCode::Esc | KeyCode::Char('l') => Some(Action::ToggleLog),
        KeyCode::Char('q') | KeyCode::F(10) => Some(Action::Quit),
        _ => crate::tui::widgets::log_view::view_key(code).map(Action::LogKey),
    }
}

/// The replay controls; ← → seek unless the process table has the keys.
fn replay_key(code: KeyCode, focus: Focus) -> Option<Action> {
    let arrows = focus != Focus::Processes;
    match code {
        KeyCode::Char('1') => Some(Action::ReplaySpeed(1)),
        KeyCode::Char('2') => Some(Action::ReplaySpeed(2)),
        KeyCode::Char('0') => Some(Action::ReplaySpeed(10)),
        KeyCode::Char('>') | KeyCode::Char('.') => Some(Action::ReplayFaster),
        KeyCode::Char('<') | KeyCode::Char(',') => Some(Action::ReplaySlower),
        KeyCode::Char('[') => Some(Action::SeekBack),
        KeyCode::Char(']') => Some(Action::SeekForward),
        KeyCode::Left if arrows => Some(Action::SeekBack),
        KeyCode::Right if arrows => Some(Action::SeekForward),
        KeyCode::Char('n') => Some(Action::NextFinding),
        _ => None,
    }
}

/// Keys whose meaning depends on the focused panel.
fn focus_key(code: KeyCode, focus: Focus) -> Option<Action> {
    let down = matches!(code, KeyCode::Down | KeyCode::Char('j'));
    let up = matches!(code, KeyCode::Up | KeyCode::Char('k'));
    match focus {
        Focus::Gpus if down => Some(Action::SelectNext),
        Focus::Gpus if up => Some(Action::SelectPrev),
        Focus::Gpus => None,
        Focus::Processes if down => Some(Action::RowNext),
        Focus::Processes if up => Some(Action::RowPrev),
        Focus::Events if down => Some(Action::ScrollEvents(-1)),
        Focus::Events if up => Some(Action::ScrollEvents(1)),
        Focus::Events => match code {
            KeyCode::PageUp => Some(Action::ScrollEvents(EVENTS_PAGE)),
            KeyCode::PageDown => Some(Action::ScrollEvents(-EVENTS_PAGE)),
            KeyCode::End | KeyCode::Char('G') => Some(Action::EventsNewest),
            KeyCode::Esc => Some(Action::FocusGpus),
            _ => None,
        },
        Focus::Processes => match code {
            KeyCode::Esc => Some(Action::FocusGpus),
            _ => None,
        },
    }
}

/// Keys that mean the same whatever has the focus.
fn global_key(code: KeyCode) -> Option<Action> {
    match code {
        KeyCode::Char('q') | KeyCode::F(10) => Some(Action::Quit),
        KeyCode::Char('?') | KeyCode::Char('h') | KeyCode::F(1) => Some(Action::ToggleHelp),
        KeyCode::Tab => Some(Action::FocusNext),
        KeyCode::BackTab => Some(Action::FocusPrev),
        KeyCode::Left => Some(Action::ScrollLeft),
        KeyCode::Right => Some(Action::ScrollRight),
        KeyCode::PageUp => Some(Action::ScrollEvents(EVENTS_PAGE)),
        KeyCode::PageDown => Some(Action::ScrollEvents(-EVENTS_PAGE)),
        KeyCode::End => Some(Action::EventsNewest),
        KeyCode::Char('P') => Some(Action::ToggleFocus),
        KeyCode::Char('L') => Some(Action::ToggleLedger),
        KeyCode::Char('l') => Some(Action::ToggleLog),
        KeyCode::Char('s') | KeyCode::F(6) => Some(Action::SortNext),
        KeyCode::Char('S') => Some(Action::SortReverse),
        KeyCode::Char('/') | KeyCode::F(3) | KeyCode::F(4) => Some(Action::OpenFilter),
        KeyCode::Char('t') | KeyCode::F(5) => Some(Action::ToggleTree),
        KeyCode::Char('a') => Some(Action::ToggleAllGpus),
        KeyCode::Char('K') | KeyCode::F(9) => Some(Action::OpenSignalDialog),
        KeyCode::Char('r') => Some(Action::ToggleRecord),
        KeyCode::Enter => Some(Action::ToggleExpand),
        KeyCode::Char('p') | KeyCode::Char(' ') => Some(Action::TogglePause),
        KeyCode::Char('+') | KeyCode::Char('=') => Some(Action::ZoomIn),
        KeyCode::Char('-') | KeyCode::Char('_') => Some(Action::ZoomOut),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app() -> KeyContext {
        KeyContext::default()
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn every_documented_key_maps_to_its_action() {
        let a = app();
        let cases = [
            (key(KeyCode::Char('q')), Action::Quit),
            (
                KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
                Action::Quit,
            ),
            (key(KeyCode::Char('?')), Action::ToggleHelp),
            (key(KeyCode::Char('h')), Action::ToggleHelp),
            (key(KeyCode::F(1)), Action::ToggleHelp),
            (key(KeyCode::F(10)), Action::Quit),
            (key(KeyCode::F(3)), Action::OpenFilter),
            (key(KeyCode::F(4)), Action::OpenFilter),
            (key(KeyCode::F(5)), Action::ToggleTree),
            (key(KeyCode::F(6)), Action::SortNext),
            (key(KeyCode::F(9)), Action::OpenSignalDialog),
            (key(KeyCode::Down), Action::SelectNext),
            (key(KeyCode::Char('j')), Action::SelectNext),
            (key(KeyCode::Tab), Action::FocusNext),
            (key(KeyCode::Up), Action::SelectPrev),
            (key(KeyCode::Char('k')), Action::SelectPrev),
            (
                KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT),
                Action::FocusPrev,
            ),
            (key(KeyCode::Left), Action::ScrollLeft),
            (key(KeyCode::Right), Action::ScrollRight),
            (key(KeyCode::Enter), Action::ToggleExpand),
            (key(KeyCode::Char('p')), Action::TogglePause),
            (key(KeyCode::Char(' ')), Action::TogglePause),
            (key(KeyCode::Char('+')), Action::ZoomIn),
            (key(KeyCode::Char('=')), Action::ZoomIn),
            (key(KeyCode::Char('-')), Action::ZoomOut),
            (key(KeyCode::Char('_')), Action::ZoomOut),
        ];
        for (k, want) in cases {
            assert_eq!(map_key(k, &a), Some(want), "{k:?}");
        }
        assert_eq!(map_key(key(KeyCode::Char('x')), &a), None);
        assert_eq!(map_key(key(KeyCode::Esc), &a), None);
        // Ctrl with another letter is not a plain letter.
        assert_eq!(
            map_key(KeyEvent::new(KeyCode::Char('q'), KeyModifiers::CONTROL), &a),
            None
        );
        // Key releases (kitty protocol) do nothing.
        let mut release = key(KeyCode::Char('q'));
        release.kind = KeyEventKind::Release;
        assert_eq!(map_key(release, &a), None);
    }

    #[test]
    fn with_help_open_only_closing_scrolling_and_quitting_work() {
        let a = KeyContext {
            help: true,
            ..app()
        };
        assert_eq!(map_key(key(KeyCode::Esc), &a), Some(Action::CloseOverlay));
        assert_eq!(
            map_key(key(KeyCode::Char('?')), &a),
            Some(Action::CloseOverlay)
        );
        assert_eq!(map_key(key(KeyCode::F(1)), &a), Some(Action::CloseOverlay));
        assert_eq!(map_key(key(KeyCode::Char('q')), &a), Some(Action::Quit));
        assert_eq!(map_key(key(KeyCode::Down), &a), Some(Action::ScrollHelp(1)));
        assert_eq!(map_key(key(KeyCode::Char('p')), &a), None);
    }

    #[test]
    fn arrows_follow_the_focused_panel() {
        let procs = KeyContext {
            focus: Focus::Processes,
            ..app()
        };
        assert_eq!(map_key(key(KeyCode::Down), &procs), Some(Action::RowNext));
        assert_eq!(map_key(key(KeyCode::Esc), &procs), Some(Action::FocusGpus));
        let events = KeyContext {
            focus: Focus::Events,
            ..app()
        };
        assert_eq!(
            map_key(key(KeyCode::Up), &events),
            Some(Action::ScrollEvents(1))
        );
        assert_eq!(
            map_key(key(KeyCode::PageDown), &events),
            Some(Action::ScrollEvents(-EVENTS_PAGE))
        );
        assert_eq!(
            map_key(key(KeyCode::End), &events),
            Some(Action::EventsNewest)
        );
        // In a replay, ← → seek, unless the process table has the keys.
        let replay = KeyContext {
            replay: true,
            ..app()
        };
        assert_eq!(map_key(key(KeyCode::Left), &replay), Some(Action::SeekBack));
        let replay_procs = KeyContext {
            replay: true,
            focus: Focus::Processes,
            ..app()
        };
        assert_eq!(
            map_key(key(KeyCode::Left), &replay_procs),
            Some(Action::ScrollLeft)
        );
    }
}
