//! The help overlay: every key and what it does.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use crate::tui::action::BINDINGS;
use crate::tui::theme::Theme;

pub struct HelpOverlay {
    pub theme: Theme,
}

impl HelpOverlay {
    /// The popup's rectangle, centred in `area`.
    pub fn area(area: Rect) -> Rect {
        let w = 72.min(area.width);
        let h = (BINDINGS.len() as u16 + 4).min(area.height);
        Rect::new(
            area.x + (area.width - w) / 2,
            area.y + (area.height - h) / 2,
            w,
            h,
        )
    }
}

impl Widget for &HelpOverlay {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let popup = HelpOverlay::area(area);
        Clear.render(popup, buf);
        let mut lines: Vec<Line> = BINDINGS
            .iter()
            .map(|(keys, what)| {
                Line::from(vec![
                    Span::styled(format!(" {keys:<17}"), t.key()),
                    Span::raw(*what),
                ])
            })
            .collect();
        lines.push(Line::styled(
            " ^ under the util chart: a dip inside a stall finding",
            t.dim(),
        ));
        Paragraph::new(lines)
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .border_style(t.border_selected())
                    .title(Line::styled(" Keys (Esc closes) ", t.title())),
            )
            .render(popup, buf);
    }
}
