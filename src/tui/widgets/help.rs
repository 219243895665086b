//! The help overlay: every key, then what the colours, marks and figures on screen mean. It
//! scrolls (↑↓) where the terminal is shorter than it.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use crate::model::Severity;
use crate::tui::action::BINDINGS;
use crate::tui::theme::Theme;

pub struct HelpOverlay {
    pub theme: Theme,
    /// Lines scrolled past.
    pub scroll: u16,
}

/// Width of the key column.
const KEYS_W: usize = 17;

impl HelpOverlay {
    /// Every line of the help: the keys, then the legend.
    pub fn lines(&self) -> Vec<Line<'static>> {
        let t = self.theme;
        let mut lines: Vec<Line> = BINDINGS
            .iter()
            .map(|(keys, what)| {
                Line::from(vec![
                    Span::styled(format!(" {keys:<KEYS_W$}"), t.key()),
                    Span::raw(*what),
                ])
            })
            .collect();
        lines.extend(self.legend());
        lines
    }

    /// What the colours, marks and figures on screen mean.
    fn legend(&self) -> Vec<Line<'static>> {
        let t = self.theme;
        let entry = |mark: &str, style: Style, what: &str| {
            Line::from(vec![
                Span::raw(" "),
                Span::styled(format!("{mark:<KEYS_W$}"), style),
                Span::raw(what.to_string()),
            ])
        };
        let plain = t.text();
        vec![
            Line::styled(" Colours and marks", t.title()),
            entry(
                "high",
                t.severity(Severity::High),
                "a finding that costs much GPU time",
            ),
            entry("warn", t.severity(Severity::Warn), "a finding worth a look"),
            entry(
                "info",
                t.severity(Severity::Info),
                "a finding to know about",
            ),
            entry("healthy", t.ok(), "busy, nothing found"),
            entry(
                "idle · ended",
                t.dim(),
                "no work; findings that ended (how long ago)",
            ),
            entry(
                "░",
                t.absent(),
                "no reading in that column (GPU did not answer)",
            ),
            entry("^", t.warn(), "under util: a dip inside a stall finding"),
            entry("…", plain, "text cut; ← → scroll commands sideways"),
            entry("″", plain, "child process with its parent's command"),
            entry(
                "S column",
                plain,
                "R running, S sleeping, D disk wait, Z zombie",
            ),
            Line::styled(" Figures", t.title()),
            entry(
                "util  X now Y",
                plain,
                "2 s mean of the driver's busy time; latest",
            ),
            entry(
                "60 s / job mean",
                plain,
                "mean over the window, or since the job began",
            ),
            entry(
                "SM act",
                plain,
                "share of SMs busy (GPM): the real work done",
            ),
            entry(
                "UTIL%",
                plain,
                "driver's per-process busy time, not SM activity",
            ),
            entry(
                "mem busy",
                plain,
                "time device memory was read or written (driver)",
            ),
            entry("DRAM BW", plain, "share of peak memory bandwidth (GPM)"),
            entry(
                "N s per column",
                plain,
                "chart resolution; ticks: time before now",
            ),
        ]
    }

    /// The popup's rectangle, centred in `area`.
    pub fn area(&self, area: Rect) -> Rect {
        let w = 76.min(area.width);
        let h = (self.lines().len() as u16 + 2).min(area.height);
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
        let popup = self.area(area);
        Clear.render(popup, buf);
        let lines = self.lines();
        let visible = popup.height.saturating_sub(2);
        let scroll = self
            .scroll
            .min((lines.len() as u16).saturating_sub(visible));
        let more = (lines.len() as u16) > scroll + visible;
        let title = if more || scroll > 0 {
            " Keys and legend (Esc closes, ↑↓ scroll) "
        } else {
            " Keys and legend (Esc closes) "
        };
        Paragraph::new(lines)
            .scroll((scroll, 0))
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .border_style(t.border_selected())
                    .title(Line::styled(title, t.title())),
            )
            .render(popup, buf);
    }
}
