//! The log view (`l`): every event the dashboard logged, whole and wrapped, with its time, level
//! and target, drawn by tui-logger's smart widget. The event panel shows each event as one line
//! cut to its width; this view is where a long one is read in full, where the events of one
//! target (`gpulse::findings`, the backend, the exporter) are picked out, and where a target's
//! events are hidden or its level raised.
//!
//! Keys while it is open (tui-logger's own): ↑↓ pick a target, ←→ show less or more of its
//! levels, `-` `+` the same for what is captured, `h` hides the target list, PgUp/PgDn page back
//! and forth through the events (End back to the newest), `l` or Esc closes.

use std::sync::Arc;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Widget;
use tui_logger::{TuiLoggerLevelOutput, TuiLoggerSmartWidget, TuiWidgetEvent, TuiWidgetState};

use crate::tui::theme::Theme;

/// The view's state (selected target, levels shown, paging), kept while the dashboard runs so
/// the view reopens as it was left.
#[derive(Clone, Default)]
pub struct LogViewState(Arc<TuiWidgetState>);

impl std::fmt::Debug for LogViewState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LogViewState")
    }
}

impl LogViewState {
    /// Pass a key the view handles to tui-logger's state.
    pub fn key(&self, event: TuiWidgetEvent) {
        self.0.transition(event);
    }
}

/// The key of the view that `code` is, if it is one (see the module's list).
pub fn view_key(code: crossterm::event::KeyCode) -> Option<TuiWidgetEvent> {
    use crossterm::event::KeyCode;
    Some(match code {
        KeyCode::Up | KeyCode::Char('k') => TuiWidgetEvent::UpKey,
        KeyCode::Down | KeyCode::Char('j') => TuiWidgetEvent::DownKey,
        KeyCode::Left => TuiWidgetEvent::LeftKey,
        KeyCode::Right => TuiWidgetEvent::RightKey,
        KeyCode::Char('+') | KeyCode::Char('=') => TuiWidgetEvent::PlusKey,
        KeyCode::Char('-') => TuiWidgetEvent::MinusKey,
        KeyCode::Char('h') => TuiWidgetEvent::HideKey,
        KeyCode::Char('f') => TuiWidgetEvent::FocusKey,
        KeyCode::PageUp => TuiWidgetEvent::PrevPageKey,
        KeyCode::PageDown => TuiWidgetEvent::NextPageKey,
        KeyCode::End => TuiWidgetEvent::EscapeKey,
        KeyCode::Char(' ') => TuiWidgetEvent::SpaceKey,
        _ => return None,
    })
}

/// The log view over `area`.
pub struct LogView<'a> {
    pub state: &'a LogViewState,
    pub theme: Theme,
}

impl Widget for &LogView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        // Events logged since the last frame join the view's buffer.
        tui_logger::move_events();
        TuiLoggerSmartWidget::default()
            .title_target(Line::styled(" Targets ", t.title()))
            .title_log(Line::styled(
                " Log · Esc/l close · PgUp/PgDn page · End newest · ←→ levels · h targets ",
                t.title(),
            ))
            .border_style(t.border())
            .style(t.text())
            .style_error(t.bad())
            .style_warn(t.warn())
            .style_info(t.text())
            .style_debug(t.dim())
            .style_trace(t.dim())
            .style_show(t.text())
            .style_hide(t.dim())
            .style_off(t.dim())
            .highlight_style(t.selected())
            .output_separator(' ')
            .output_timestamp(Some("%H:%M:%S".to_string()))
            .output_level(Some(TuiLoggerLevelOutput::Abbreviated))
            .output_target(true)
            .output_file(false)
            .output_line(false)
            .state(&self.state.0)
            .render(area, buf);
    }
}
