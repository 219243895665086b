//! The event log: tracing events (GPU lost or back, backend errors, findings) with their times.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Widget};
use tui_logger::{TuiLoggerLevelOutput, TuiLoggerWidget};

use crate::tui::theme::Theme;

pub struct LogPanel {
    pub theme: Theme,
    /// Draw the logged events (false: the empty panel, for output that must not depend on what
    /// else in the process logged).
    pub live: bool,
}

impl Widget for &LogPanel {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(t.border())
            .title(Line::styled(" Events ", t.title()));
        if !self.live {
            block.render(area, buf);
            return;
        }
        TuiLoggerWidget::default()
            .block(block)
            .output_separator(' ')
            .output_timestamp(Some("%H:%M:%S".to_string()))
            .output_level(Some(TuiLoggerLevelOutput::Abbreviated))
            .output_target(false)
            .output_file(false)
            .output_line(false)
            .style_error(t.bad())
            .style_warn(t.warn())
            .style_info(t.text())
            .style_debug(t.dim())
            .style_trace(t.dim())
            .render(area, buf);
    }
}
