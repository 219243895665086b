//! The event panel: one line per event (time, level, text cut with `…`), the newest at the
//! bottom, scrolled with the arrow keys while it has the focus.
//!
//! The panel changes only when an event is logged or it is scrolled, so its key is the count of
//! events logged and its scroll: between events the screen keeps it as it is (see
//! [`crate::tui::canvas`]).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Widget};

use crate::tui::canvas::{key_of, Canvas};
use crate::tui::event_log::{self, LoggedEvent};
use crate::tui::format;
use crate::tui::theme::Theme;

pub struct LogPanel {
    pub theme: Theme,
    /// Draw the logged events (false: the empty panel, for output that must not depend on what
    /// else in the process logged).
    pub live: bool,
    /// How many events had been logged when the frame began ([`event_log::logged`]): the panel
    /// is drawn again only when this moves. With `None`, drawn every frame.
    pub logged: Option<u64>,
    /// The event at the bottom of the panel (`None`: the newest).
    pub bottom: Option<u64>,
    /// Whether the arrow keys scroll it.
    pub focused: bool,
}

impl LogPanel {
    /// Draw the panel as one part of a screen.
    pub fn draw_on(&self, area: Rect, canvas: &mut dyn Canvas) {
        let view = (self.theme, self.bottom, self.focused);
        let key = match (self.live, self.logged) {
            (true, Some(n)) => key_of(&(n, view)),
            (true, None) => None,
            (false, _) => key_of(&view),
        };
        canvas.part("events", area, key, &mut |buf| self.draw(area, buf));
    }

    fn draw(&self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let events = if self.live {
            event_log::window(self.bottom, area.height.saturating_sub(2) as usize)
        } else {
            Vec::new()
        };
        let mut title = vec![Span::styled(
            " Events ",
            if self.focused {
                t.title().add_modifier(ratatui::style::Modifier::REVERSED)
            } else {
                t.title()
            },
        )];
        let newer = match (self.bottom, event_log::bounds(), events.last()) {
            (Some(_), Some((_, newest)), Some(last)) => newest.saturating_sub(last.seq),
            _ => 0,
        };
        if newer > 0 && self.live {
            title.push(Span::styled(format!("· {newer} newer ↓ (End) "), t.warn()));
        }
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(if self.focused {
                t.border_selected()
            } else {
                t.border()
            })
            .title(Line::from(title));
        let inner = block.inner(area);
        block.render(area, buf);
        for (e, y) in events.iter().zip(inner.top()..inner.bottom()) {
            buf.set_line(inner.x, y, &self.line(e, inner.width), inner.width);
        }
    }

    /// One event in one line of `width` columns: `HH:MM:SS W text…`.
    fn line(&self, e: &LoggedEvent, width: u16) -> Line<'static> {
        let t = self.theme;
        let (mark, style) = match e.level {
            tracing::Level::ERROR => ("E", t.bad()),
            tracing::Level::WARN => ("W", t.warn()),
            tracing::Level::INFO => ("I", t.text()),
            _ => ("D", t.dim()),
        };
        let text_style = if e.level == tracing::Level::ERROR {
            style
        } else {
            t.text()
        };
        let head = format!("{} ", format::clock(e.t));
        let room = usize::from(width).saturating_sub(head.chars().count() + 2);
        Line::from(vec![
            Span::styled(head, t.dim()),
            Span::styled(format!("{mark} "), style),
            Span::styled(format::truncate(&e.text, room), text_style),
        ])
    }
}
