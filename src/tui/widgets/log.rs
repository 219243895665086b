//! The event log: tracing events (GPU lost or back, backend errors, findings) with their times.

//!
//! tui-logger formats and wraps every event it shows on each frame; the panel changes only when
//! an event is logged, so it is drawn once per change into a [`LogCache`] and copied from there
//! on the frames between (a copy of its cells costs a fraction of the formatting).

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Widget};
use tracing_subscriber::layer::{Context, Layer};
use tui_logger::{TuiLoggerLevelOutput, TuiLoggerWidget};

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

/// The last drawn event panel: the event count and area it was drawn for, and its cells.
#[derive(Debug, Clone, Default)]
pub struct LogCache(RefCell<Option<(u64, Rect, Theme, Buffer)>>);

pub struct LogPanel<'a> {
    pub theme: Theme,
    /// Draw the logged events (false: the empty panel, for output that must not depend on what
    /// else in the process logged).
    pub live: bool,
    /// The panel drawn for `logged` events, reused while no event is logged (with `None`, drawn
    /// every time).
    pub cache: Option<(&'a LogCache, u64)>,
}

impl Widget for &LogPanel<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let Some((cache, logged)) = self.cache.filter(|_| self.live) else {
            self.draw(area, buf);
            return;
        };
        let mut cached = cache.0.borrow_mut();
        let fresh = matches!(&*cached, Some((n, a, t, _)) if *n == logged && *a == area && *t == self.theme);
        if !fresh {
            let mut panel = Buffer::empty(area);
            self.draw(area, &mut panel);
            *cached = Some((logged, area, self.theme, panel));
        }
        if let Some((_, _, _, panel)) = &*cached {
            copy_cells(panel, buf);
        }
    }
}

/// Copy `from`'s cells into `to` where the two overlap.
fn copy_cells(from: &Buffer, to: &mut Buffer) {
    let area = from.area.intersection(to.area);
    if area.is_empty() {
        return;
    }
    let w = usize::from(area.width);
    for y in area.top()..area.bottom() {
        let (s, d) = (from.index_of(area.x, y), to.index_of(area.x, y));
        to.content[d..d + w].clone_from_slice(&from.content[s..s + w]);
    }
}

impl LogPanel<'_> {
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
