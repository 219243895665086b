//! The bottom line: what the dashboard is doing besides showing data (replaying, recording,
//! serving), then the keys that matter in the current focus.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::model::UnixTime;
use crate::tui::app::{App, Focus};
use crate::tui::canvas::{key_of, Canvas};
use crate::tui::theme::Theme;

pub struct Footer<'a> {
    pub app: &'a App,
    /// Time of the snapshot shown (the replay position).
    pub t: UnixTime,
    pub theme: Theme,
}

impl Footer<'_> {
    /// The status segments, in order.
    pub fn statuses(&self) -> Vec<Span<'static>> {
        let t = self.theme;
        let a = self.app;
        let mut out = Vec::new();
        if let Some(r) = &a.replay {
            out.push(Span::styled(format!(" {} ", r.status(self.t)), t.ok()));
        }
        if let Some(rec) = &a.recording {
            out.push(Span::styled(
                format!(" {} ", rec.text()),
                if rec.failed() { t.warn() } else { t.bad() },
            ));
        }
        if let Some(addr) = a.serving {
            out.push(Span::styled(
                format!(" serving http://{addr}/metrics "),
                t.dim(),
            ));
        }
        out
    }
}

impl Footer<'_> {
    /// Draw the line as one part of a screen.
    pub fn draw_on(&self, area: Rect, canvas: &mut dyn Canvas) {
        let t = self.theme;
        let keys: &[(&str, &str)] = match (self.app.focus, self.app.replay.is_some()) {
            (Focus::Processes, _) => &[
                ("Esc", "GPUs"),
                ("↑↓", "row"),
                ("s/S", "sort"),
                ("/", "filter"),
                ("t", "tree"),
                ("K", "signal"),
                ("?", "help"),
            ],
            (Focus::Gpus, true) => &[
                ("q", "quit"),
                ("?", "help"),
                ("Space", "pause"),
                ("[ ]", "seek"),
                ("n", "next finding"),
                ("1 2 0", "speed"),
            ],
            (Focus::Gpus, false) => &[
                ("q", "quit"),
                ("?", "help"),
                ("↑↓", "select"),
                ("Enter", "expand"),
                ("p", "pause"),
                ("+/-", "zoom"),
                ("P", "procs"),
                ("r", "rec"),
            ],
        };
        let mut spans = self.statuses();
        for (k, what) in keys {
            spans.push(Span::styled(format!(" {k}"), t.key()));
            spans.push(Span::styled(format!(" {what} "), t.dim()));
        }
        let line = Line::from(spans);
        canvas.part("footer", area, key_of(&line), &mut |buf| {
            buf.set_line(area.x, area.y, &line, area.width);
        });
    }
}
