//! The top line: where the data comes from and whether the screen is live.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::engine::Snapshot;
use crate::tui::canvas::{key_of, Canvas};
use crate::tui::format::{self, ABSENT};
use crate::tui::theme::Theme;

use super::status::STALE_INTERVALS;

pub struct Header<'a> {
    pub snapshot: &'a Snapshot,
    pub theme: Theme,
    pub paused: bool,
    pub window_s: f64,
    pub now: f64,
    /// `Some(paused)` while playing a recording: recorded data is never "no sample for".
    pub replay: Option<bool>,
}

impl Header<'_> {
    /// Draw the line as one part of a screen.
    pub fn draw_on(&self, area: Rect, canvas: &mut dyn Canvas) {
        let s = self.snapshot;
        let sys = &s.system;
        let t = self.theme;
        let absent = || ABSENT.to_string();
        // Segments in order of importance: the least important go first when space is short.
        let host = vec![Span::styled(sys.hostname.clone(), t.text())];
        let source = vec![
            Span::raw(sys.backend.clone()),
            Span::styled(" every ", t.dim()),
            Span::raw(format::seconds(s.stats.interval_s)),
        ];
        let window = vec![
            Span::styled("window ", t.dim()),
            Span::raw(format::seconds(self.window_s)),
        ];
        let cuda = vec![
            Span::styled("CUDA ", t.dim()),
            Span::raw(sys.cuda_version.clone().unwrap_or_else(absent)),
        ];
        let driver = vec![
            Span::styled("driver ", t.dim()),
            Span::raw(sys.driver_version.clone().unwrap_or_else(absent)),
        ];
        let interval = s.stats.interval_s.max(0.01);
        let (status, style) = if let Some(replay_paused) = self.replay {
            let mark = if replay_paused { "⏸" } else { "▶" };
            (format!("{mark} REPLAY {} UTC", format::clock(s.t)), t.ok())
        } else if self.paused {
            (format!("❚❚ PAUSED at {} UTC", format::clock(s.t)), t.warn())
        } else if s.seq == 0 {
            ("waiting for first sample".to_string(), t.dim())
        } else if self.now - s.t > STALE_INTERVALS * interval {
            (
                format!("no sample for {}", format::seconds(self.now - s.t)),
                t.bad(),
            )
        } else {
            (format!("● LIVE {} UTC", format::clock(s.t)), t.ok())
        };
        let status_w = status.chars().count() as u16 + 1;
        let left_w = area.width.saturating_sub(status_w);
        let mut segments = vec![host, driver, cuda, source, window];
        let build = |segments: &[Vec<Span<'static>>]| {
            let mut spans = vec![Span::styled(" gpulse", t.title())];
            for seg in segments {
                spans.push(Span::styled(" │ ", t.dim()));
                spans.extend(seg.iter().cloned());
            }
            Line::from(spans)
        };
        // Drop the driver, then CUDA, then the window, until the line fits beside the status.
        for drop in [1, 1, 2] {
            if (build(&segments).width() as u16) < left_w || segments.len() <= drop {
                break;
            }
            segments.remove(drop);
        }
        let line = build(&segments);
        let key = key_of(&(&line, left_w, &status, style, status_w));
        canvas.part("header", area, key, &mut |buf| {
            buf.set_line(area.x, area.y, &line, left_w);
            if area.width >= status_w {
                buf.set_stringn(
                    area.x + area.width - status_w,
                    area.y,
                    &status,
                    status_w as usize,
                    style,
                );
            }
        });
    }
}
