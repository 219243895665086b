//! The event log: tracing events (GPU lost or back, backend errors, findings) with their times.

//!
//! tui-logger formats and wraps every event it shows on each frame; the panel changes only when
//! an event is logged, so its key is the count of events logged: between events the screen keeps
//! it as it is (see [`crate::tui::canvas`]).

use std::sync::atomic::{AtomicU64, Ordering};

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Widget};
use tracing_subscriber::layer::{Context, Layer};
use tui_logger::{TuiLoggerLevelOutput, TuiLoggerWidget};

use crate::tui::canvas::{key_of, Canvas};
use crate::tui::theme::Theme;

/// Events logged in this process so far (every event the panel's subscriber receives).
static LOGGED: AtomicU64 = AtomicU64::new(0);

/// A tracing layer that counts events, installed beside tui-logger's: the panel is drawn again
/// when the count has moved.
pub struct EventCounter;

impl<S: tracing::Subscriber> Layer<S> for EventCounter {
    fn on_event(&self, _event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        LOGGED.fetch_add(1, Ordering::Release);
    }
}

/// How many events have been logged (read before tui-logger's events are moved for a frame, so
/// that every event counted is among those drawn).
pub fn logged() -> u64 {
    LOGGED.load(Ordering::Acquire)
}

pub struct LogPanel {
    pub theme: Theme,
    /// Draw the logged events (false: the empty panel, for output that must not depend on what
    /// else in the process logged).
    pub live: bool,
    /// How many events had been logged when the frame began ([`logged`]): the panel is drawn
    /// again only when this moves. With `None`, drawn every frame.
    pub logged: Option<u64>,
}

impl LogPanel {
    /// Draw the panel as one part of a screen.
    pub fn draw_on(&self, area: Rect, canvas: &mut dyn Canvas) {
        let key = match (self.live, self.logged) {
            (true, Some(n)) => key_of(&(n, self.theme)),
            (true, None) => None,
            (false, _) => key_of(&self.theme),
        };
        canvas.part("events", area, key, &mut |buf| self.draw(area, buf));
    }

    fn draw(&self, area: Rect, buf: &mut Buffer) {
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
