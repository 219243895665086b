//! The signal dialog, drawn over the dashboard.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget, Wrap};

use crate::tui::dialog::{DialogStage, SignalDialog};
use crate::tui::theme::Theme;

pub struct SignalDialogView<'a> {
    pub dialog: &'a SignalDialog,
    pub theme: Theme,
}

impl Widget for &SignalDialogView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let d = self.dialog;
        let w = 70.min(area.width.saturating_sub(2)).max(20.min(area.width));
        let inner_w = w.saturating_sub(4).max(1) as usize;
        let msg = d.message();
        let msg_lines = msg.chars().count().div_ceil(inner_w).max(1) as u16;
        let h = (msg_lines + 4).min(area.height);
        let popup = Rect::new(
            area.x + (area.width - w) / 2,
            area.y + (area.height - h) / 2,
            w,
            h,
        );
        Clear.render(popup, buf);
        let (msg_style, hint, border) = match &d.stage {
            DialogStage::Confirm(_) => (t.text(), "y send   N / Esc cancel", t.warn()),
            DialogStage::Refused(_) => (t.dim(), "Esc close", t.border()),
            DialogStage::TermSent => (t.text(), "K send SIGKILL   Esc close", t.warn()),
            DialogStage::Failed(_) => (t.bad(), "Esc close", t.bad()),
        };
        let lines = vec![
            Line::styled(msg, msg_style),
            Line::default(),
            Line::from(Span::styled(hint, t.key())),
        ];
        Paragraph::new(lines)
            .wrap(Wrap { trim: true })
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .border_style(border)
                    .title(Line::styled(" Signal a process ", t.title())),
            )
            .render(
                Rect {
                    x: popup.x,
                    y: popup.y,
                    width: popup.width,
                    height: popup.height,
                },
                buf,
            );
    }
}
