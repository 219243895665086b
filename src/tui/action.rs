//! Keys to actions, in one place. The app never looks at a key itself.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::app::{App, Overlay};

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
}

/// Every key binding, for the help overlay: (keys, what they do).
pub const BINDINGS: &[(&str, &str)] = &[
    ("q  Ctrl-C", "quit"),
    ("?  h", "show or hide this help"),
    ("Esc", "close this help"),
    ("↓  j  Tab", "select the next GPU"),
    ("↑  k  Shift-Tab", "select the previous GPU"),
    ("Enter", "expand or collapse the selected GPU"),
    ("p  Space", "pause the display (sampling goes on)"),
    ("+  =", "zoom in: a shorter time window"),
    ("-  _", "zoom out: a longer window, up to the history kept"),
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
    if app.overlay == Some(Overlay::Help) {
        return match key.code {
            KeyCode::Char('q') => Some(Action::Quit),
            KeyCode::Esc | KeyCode::Char('?') | KeyCode::Char('h') => Some(Action::CloseOverlay),
            _ => None,
        };
    }
    match key.code {
        KeyCode::Char('q') => Some(Action::Quit),
        KeyCode::Char('?') | KeyCode::Char('h') => Some(Action::ToggleHelp),
        KeyCode::Esc => None,
        KeyCode::Down | KeyCode::Char('j') | KeyCode::Tab => Some(Action::SelectNext),
        KeyCode::Up | KeyCode::Char('k') | KeyCode::BackTab => Some(Action::SelectPrev),
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
