//! Keys to actions, in one place. The app never looks at a key itself.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::app::{App, Focus, Overlay};

/// Something the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Quit,
    ToggleHelp,
    CloseOverlay,
    SelectNext,
    SelectPrev,
    ToggleExpand,
    TogglePause,
    /// A shorter chart window.
    ZoomIn,
    /// A longer chart window (up to the retention).
    ZoomOut,
    /// Move the arrow keys' focus between the GPUs and the process table.
    ToggleFocus,
    FocusGpus,
    /// The next / previous process row.
    RowNext,
    RowPrev,
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
    ("q  Ctrl-C", "quit"),
    ("?  h", "show or hide this help"),
    ("Esc", "close help, dialog or filter; focus back on GPUs"),
    ("↓ j  ↑ k", "select a GPU, or a process row after P"),
    ("Tab  Shift-Tab", "select the next / previous GPU"),
    ("Enter", "expand or collapse the selected GPU"),
    ("p  Space", "pause the display (replay: pause playback)"),
    ("+ =  - _", "zoom in / out (up to the history kept)"),
    ("P", "focus the process table (↑↓ pick a row) and back"),
    ("s  S", "sort processes by the next column / reverse"),
    ("/", "filter processes (Enter keeps, Esc clears)"),
    ("t", "tree: each process with its children and state"),
    ("a", "processes of every GPU or the selected one"),
    ("K  F9", "send SIGTERM, then SIGKILL, to the selected row"),
    ("r", "start or stop recording to a file"),
    ("1 2 0  < >", "replay speed ×1 ×2 ×10, slower, faster"),
    ("[ ]  ← →", "replay: seek back / forward 10 s"),
    ("n", "replay: jump to the next finding"),
];

/// The action a key asks for in the app's current state, if any.
pub fn map_key(key: KeyEvent, app: &App) -> Option<Action> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    if key.modifiers.contains(KeyModifiers::CONTROL) {
        return match key.code {
            KeyCode::Char('c') | KeyCode::Char('C') => Some(Action::Quit),
            _ => None,
        };
    }
    if app.dialog.is_some() {
        return Some(match key.code {
            KeyCode::Char('y') | KeyCode::Char('Y') => Action::DialogYes,
            KeyCode::Char('K') | KeyCode::F(9) => Action::DialogKill,
            _ => Action::DialogClose,
        });
    }
    if app.table.prompt.is_some() {
        return match key.code {
            KeyCode::Esc => Some(Action::FilterClear),
            KeyCode::Enter => Some(Action::FilterApply),
            KeyCode::Backspace => Some(Action::FilterBackspace),
            KeyCode::Char(c) => Some(Action::FilterChar(c)),
            _ => None,
        };
    }
    if app.overlay == Some(Overlay::Help) {
        return match key.code {
            KeyCode::Char('q') => Some(Action::Quit),
            KeyCode::Esc | KeyCode::Char('?') | KeyCode::Char('h') => Some(Action::CloseOverlay),
            _ => None,
        };
    }
    let rows = app.focus == Focus::Processes;
    if app.replay.is_some() {
        let replay = match key.code {
            KeyCode::Char('1') => Some(Action::ReplaySpeed(1)),
            KeyCode::Char('2') => Some(Action::ReplaySpeed(2)),
            KeyCode::Char('0') => Some(Action::ReplaySpeed(10)),
            KeyCode::Char('>') | KeyCode::Char('.') => Some(Action::ReplayFaster),
            KeyCode::Char('<') | KeyCode::Char(',') => Some(Action::ReplaySlower),
            KeyCode::Char('[') | KeyCode::Left => Some(Action::SeekBack),
            KeyCode::Char(']') | KeyCode::Right => Some(Action::SeekForward),
            KeyCode::Char('n') => Some(Action::NextFinding),
            _ => None,
        };
        if replay.is_some() {
            return replay;
        }
    }
    match key.code {
        KeyCode::Char('q') => Some(Action::Quit),
        KeyCode::Char('?') | KeyCode::Char('h') => Some(Action::ToggleHelp),
        KeyCode::Esc if rows => Some(Action::FocusGpus),
        KeyCode::Esc => None,
        KeyCode::Down | KeyCode::Char('j') if rows => Some(Action::RowNext),
        KeyCode::Up | KeyCode::Char('k') if rows => Some(Action::RowPrev),
        KeyCode::Down | KeyCode::Char('j') | KeyCode::Tab => Some(Action::SelectNext),
        KeyCode::Up | KeyCode::Char('k') | KeyCode::BackTab => Some(Action::SelectPrev),
        KeyCode::Char('P') => Some(Action::ToggleFocus),
        KeyCode::Char('s') => Some(Action::SortNext),
        KeyCode::Char('S') => Some(Action::SortReverse),
        KeyCode::Char('/') => Some(Action::OpenFilter),
        KeyCode::Char('t') => Some(Action::ToggleTree),
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
    use crate::backend::sim::Scenario;
    use crate::tui::fixture::SimRun;

    fn app() -> App {
        App::new(
            SimRun::new(Scenario::Healthy, 2).snapshot(),
            60.0,
            600.0,
            true,
        )
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
            (key(KeyCode::Down), Action::SelectNext),
            (key(KeyCode::Char('j')), Action::SelectNext),
            (key(KeyCode::Tab), Action::SelectNext),
            (key(KeyCode::Up), Action::SelectPrev),
            (key(KeyCode::Char('k')), Action::SelectPrev),
            (
                KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT),
                Action::SelectPrev,
            ),
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
    fn with_help_open_only_closing_and_quitting_work() {
        let mut a = app();
        a.apply(Action::ToggleHelp);
        assert_eq!(map_key(key(KeyCode::Esc), &a), Some(Action::CloseOverlay));
        assert_eq!(
            map_key(key(KeyCode::Char('?')), &a),
            Some(Action::CloseOverlay)
        );
        assert_eq!(map_key(key(KeyCode::Char('q')), &a), Some(Action::Quit));
        assert_eq!(map_key(key(KeyCode::Down), &a), None);
        assert_eq!(map_key(key(KeyCode::Char('p')), &a), None);
    }
}
