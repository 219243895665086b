//! The bottom line: what the dashboard is doing besides showing data (replaying, recording,
//! serving), then the keys that matter in the current view, focus and mode, each saying what it does
//! now (`Enter details` / `Enter hide details`).

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::model::UnixTime;
use crate::tui::app::{App, Focus, Overlay};
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

/// The keys of the log view.
const LOG_KEYS: [(&str, &str); 7] = [
    ("Esc/l", "close"),
    ("PgUp/PgDn", "page"),
    ("End", "newest"),
    ("↑↓", "target"),
    ("←→", "levels"),
    ("h", "targets"),
    ("q", "quit"),
];

impl Footer<'_> {
    /// The keys of the ledger view, with pause or the replay's controls.
    fn ledger_keys(&self) -> Vec<(&'static str, &'static str)> {
        let a = self.app;
        let on = |b: bool, yes: &'static str, no: &'static str| if b { yes } else { no };
        let mut keys = vec![
            ("Esc/L", "close"),
            ("↑↓", "scroll"),
            ("PgUp/PgDn", "page"),
            ("q", "quit"),
        ];
        match &a.replay {
            Some(r) => keys.extend([("Space", on(r.paused, "play", "pause")), ("[ ]", "seek")]),
            None => keys.push(("p", on(a.paused(), "resume", "pause"))),
        }
        keys
    }

    /// The keys that matter now, each with what it does in this state.
    pub fn keys(&self) -> Vec<(&'static str, &'static str)> {
        let a = self.app;
        let on = |b: bool, yes: &'static str, no: &'static str| if b { yes } else { no };
        match a.overlay {
            Some(Overlay::Log) => return LOG_KEYS.to_vec(),
            Some(Overlay::Ledger) => return self.ledger_keys(),
            _ => {}
        }
        match a.focus {
            Focus::Processes => vec![
                ("Esc", "GPUs"),
                ("↑↓", "row"),
                ("←→", "scroll"),
                ("s/S", "sort"),
                ("/", "filter"),
                ("t", on(a.table.view.tree, "flat", "tree")),
                ("a", on(a.table.all_gpus, "this GPU", "all GPUs")),
                ("K", "signal"),
                ("Tab", "events"),
                ("?", "help"),
            ],
            Focus::Events => vec![
                ("Esc", "GPUs"),
                ("↑↓", "scroll"),
                ("PgUp/PgDn", "page"),
                ("End", "newest"),
                ("Tab", "GPUs"),
                ("?", "help"),
            ],
            Focus::Gpus => {
                let mut keys = vec![("q", "quit"), ("?", "help")];
                // The ledger is worth a key once some GPU has lost time.
                if a.displayed()
                    .gpus
                    .iter()
                    .any(|g| g.ledger.lost_gpu_seconds > 0.0)
                {
                    keys.push(("L", "ledger"));
                }
                if a.displayed().gpus.len() > 1 {
                    keys.push(("↑↓", "GPU"));
                }
                keys.push(("Enter", on(a.details, "hide details", "details")));
                match &a.replay {
                    Some(r) => {
                        keys.push(("Space", on(r.paused, "play", "pause")));
                        keys.extend([("[ ]", "seek"), ("n", "next finding"), ("1 2 0", "speed")]);
                    }
                    None => {
                        keys.push(("p", on(a.paused(), "resume", "pause")));
                        keys.push(("r", on(a.recording.is_some(), "stop rec", "rec")));
                    }
                }
                keys.extend([
                    ("+/-", "zoom"),
                    ("Tab", "processes"),
                    ("t", "tree"),
                    ("a", "all"),
                ]);
                keys
            }
        }
    }

    /// Draw the line as one part of a screen.
    pub fn draw_on(&self, area: Rect, canvas: &mut dyn Canvas) {
        let t = self.theme;
        let mut spans = self.statuses();
        for (k, what) in self.keys() {
            spans.push(Span::styled(format!(" {k}"), t.key()));
            spans.push(Span::styled(format!(" {what} "), t.dim()));
        }
        let line = Line::from(spans);
        canvas.part("footer", area, key_of(&line), &mut |buf| {
            buf.set_line(area.x, area.y, &line, area.width);
        });
    }
}
