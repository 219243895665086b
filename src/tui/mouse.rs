//! Mouse events to actions: a click selects the GPU or process row under it, or focuses the
//! panel; the wheel scrolls what is under it. Every action is also a key: nothing needs the
//! mouse.

use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};

use super::action::Action;
use super::focus::{Focus, Overlay};
use super::layout::ScreenLayout;

/// Events one wheel notch scrolls.
const WHEEL_EVENTS: i32 = 3;

/// Lines of the help or the ledger one wheel notch scrolls.
const WHEEL_LINES: i16 = 3;

/// The action a mouse event asks for on a screen laid out as `layout`, if any.
pub fn map_mouse(event: MouseEvent, layout: &ScreenLayout) -> Option<Action> {
    let at = Position::new(event.column, event.row);
    let inside = |r: Rect| r.contains(at);
    match event.kind {
        MouseEventKind::Down(MouseButton::Left) => {
            if let Some(i) = row_under(layout.list, 1, at) {
                return Some(Action::SelectGpu(layout.list_first + i));
            }
            // The table's first inner row is its header.
            if let Some(i) = row_under(layout.processes, 2, at) {
                return Some(Action::SelectRow(layout.process_first + i));
            }
            if inside(layout.processes) {
                return Some(Action::FocusPanel(Focus::Processes));
            }
            if inside(layout.events) {
                return Some(Action::FocusPanel(Focus::Events));
            }
            (inside(layout.panel) || inside(layout.list) || inside(layout.diagnosis))
                .then_some(Action::FocusPanel(Focus::Gpus))
        }
        MouseEventKind::ScrollUp | MouseEventKind::ScrollDown => {
            let down = event.kind == MouseEventKind::ScrollDown;
            if inside(layout.events) {
                Some(Action::ScrollEvents(if down {
                    -WHEEL_EVENTS
                } else {
                    WHEEL_EVENTS
                }))
            } else if inside(layout.processes) {
                Some(if down {
                    Action::RowNext
                } else {
                    Action::RowPrev
                })
            } else if inside(layout.list) || inside(layout.panel) {
                Some(if down {
                    Action::SelectNext
                } else {
                    Action::SelectPrev
                })
            } else {
                None
            }
        }
        _ => None,
    }
}

/// The action the wheel asks for over an overlay, which covers the panels: it scrolls the help
/// and the ledger, and pages the log view; clicks do nothing there.
pub fn map_overlay_mouse(event: MouseEvent, overlay: Overlay) -> Option<Action> {
    let down = match event.kind {
        MouseEventKind::ScrollDown => true,
        MouseEventKind::ScrollUp => false,
        _ => return None,
    };
    let lines: i16 = if down { WHEEL_LINES } else { -WHEEL_LINES };
    Some(match overlay {
        Overlay::Help => Action::ScrollHelp(lines),
        Overlay::Ledger => Action::ScrollLedger(i32::from(lines)),
        Overlay::Log => Action::LogKey(if down {
            tui_logger::TuiWidgetEvent::NextPageKey
        } else {
            tui_logger::TuiWidgetEvent::PrevPageKey
        }),
    })
}

/// The row of a bordered list under `at`, counting from its `skip`th line (the first inside the
/// border is 1).
fn row_under(area: Rect, skip: u16, at: Position) -> Option<usize> {
    let inner = Rect::new(
        area.x + 1,
        area.y + skip,
        area.width.saturating_sub(2),
        area.height.saturating_sub(skip + 1),
    );
    inner.contains(at).then(|| usize::from(at.y - inner.y))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    fn click(column: u16, row: u16) -> MouseEvent {
        MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column,
            row,
            modifiers: KeyModifiers::NONE,
        }
    }

    #[test]
    fn clicks_land_on_the_row_under_them() {
        let layout = ScreenLayout {
            list: Rect::new(0, 2, 80, 10),
            list_first: 2,
            processes: Rect::new(0, 12, 80, 6),
            process_first: 1,
            events: Rect::new(0, 18, 80, 5),
            ..Default::default()
        };
        // The list's first row is at y = 3, inside its border.
        assert_eq!(map_mouse(click(5, 3), &layout), Some(Action::SelectGpu(2)));
        assert_eq!(map_mouse(click(5, 5), &layout), Some(Action::SelectGpu(4)));
        // Its border selects no GPU; the table's header focuses the table.
        assert_eq!(
            map_mouse(click(5, 2), &layout),
            Some(Action::FocusPanel(Focus::Gpus))
        );
        assert_eq!(
            map_mouse(click(5, 13), &layout),
            Some(Action::FocusPanel(Focus::Processes))
        );
        assert_eq!(map_mouse(click(5, 14), &layout), Some(Action::SelectRow(1)));
        assert_eq!(
            map_mouse(click(5, 20), &layout),
            Some(Action::FocusPanel(Focus::Events))
        );
        let wheel = MouseEvent {
            kind: MouseEventKind::ScrollUp,
            ..click(5, 20)
        };
        assert_eq!(
            map_mouse(wheel, &layout),
            Some(Action::ScrollEvents(WHEEL_EVENTS))
        );
    }

    #[test]
    fn the_wheel_scrolls_an_overlay_and_a_click_there_does_nothing() {
        let wheel = |kind| MouseEvent {
            kind,
            column: 10,
            row: 10,
            modifiers: KeyModifiers::NONE,
        };
        let down = wheel(MouseEventKind::ScrollDown);
        let up = wheel(MouseEventKind::ScrollUp);
        assert_eq!(
            map_overlay_mouse(down, Overlay::Ledger),
            Some(Action::ScrollLedger(3))
        );
        assert_eq!(
            map_overlay_mouse(up, Overlay::Help),
            Some(Action::ScrollHelp(-3))
        );
        assert_eq!(
            map_overlay_mouse(up, Overlay::Log),
            Some(Action::LogKey(tui_logger::TuiWidgetEvent::PrevPageKey))
        );
        assert_eq!(map_overlay_mouse(click(10, 10), Overlay::Ledger), None);
    }
}
