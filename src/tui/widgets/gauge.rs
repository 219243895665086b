//! A one-line bar for a share of something (memory used of total), with eighth-cell precision.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::widgets::Widget;

use crate::tui::format::ABSENT;

/// A horizontal bar; an absent share draws `—`, not an empty bar.
pub struct ShareBar {
    /// 0..=1, or absent.
    pub share: Option<f64>,
    pub style: Style,
    pub track_style: Style,
}

const EIGHTHS: [&str; 8] = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"];

impl Widget for &ShareBar {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.is_empty() {
            return;
        }
        let Some(share) = self.share.filter(|s| s.is_finite()) else {
            buf.set_stringn(
                area.x,
                area.y,
                ABSENT,
                area.width as usize,
                self.track_style,
            );
            return;
        };
        let eighths = (share.clamp(0.0, 1.0) * area.width as f64 * 8.0).round() as usize;
        for i in 0..area.width as usize {
            let x = area.x + i as u16;
            let filled = eighths.saturating_sub(i * 8).min(8);
            let (sym, style) = match filled {
                8 => ("█", self.style),
                0 => ("·", self.track_style),
                n => (EIGHTHS[n], self.style),
            };
            buf[(x, area.y)].set_symbol(sym).set_style(style);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draw(share: Option<f64>, width: u16) -> Buffer {
        let area = Rect::new(0, 0, width, 1);
        let mut buf = Buffer::empty(area);
        let bar = ShareBar {
            share,
            style: Style::default(),
            track_style: Style::default(),
        };
        (&bar).render(area, &mut buf);
        buf
    }

    #[test]
    fn fills_in_eighths() {
        assert_eq!(draw(Some(0.5), 8), Buffer::with_lines(["████····"]));
        assert_eq!(draw(Some(0.3), 5), Buffer::with_lines(["█▌···"]));
        assert_eq!(draw(Some(1.7), 4), Buffer::with_lines(["████"]));
        assert_eq!(draw(Some(0.0), 4), Buffer::with_lines(["····"]));
    }

    #[test]
    fn absent_share_is_a_dash_not_an_empty_bar() {
        assert_eq!(draw(None, 4), Buffer::with_lines(["—   "]));
        assert_eq!(draw(Some(f64::NAN), 4), Buffer::with_lines(["—   "]));
    }
}
