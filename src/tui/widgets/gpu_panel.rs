//! The panel of the selected GPU: charts over the time window (see [`super::panel_charts`]) and,
//! with its details shown (Enter), its readings that rarely change beside them: clocks, fan,
//! P-state, PCIe link, throttle reasons, GPM counters. Without the details, the temperature and
//! the throttle reasons sit in the panel's bottom border.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget, Wrap};

use crate::engine::{GpuSnapshot, HealthState};
use crate::model::{throttle, Metrics, ThrottleReason};
use crate::tui::canvas::{self, key_of, Canvas};
use crate::tui::diagnosis;
use crate::tui::format::{self, ABSENT};
use crate::tui::theme::Theme;

use super::panel_charts::PanelCharts;
use super::status::Liveness;

const MIB: f64 = (1u64 << 20) as f64;

pub struct GpuPanel<'a> {
    pub gpu: &'a GpuSnapshot,
    pub theme: Theme,
    /// Time of the snapshot (the right edge of the charts).
    pub t: f64,
    pub now: f64,
    pub interval_s: f64,
    pub window_s: f64,
    pub selected: bool,
    /// Show the readings that rarely change beside the charts.
    pub details: bool,
}

/// The panel's title: index, name, bus id.
pub fn title(g: &GpuSnapshot) -> String {
    let bus = g.info.bus_id.as_deref().unwrap_or(ABSENT);
    format!(" GPU {} · {} · {} ", g.info.index, g.info.name, bus)
}

/// The throttle reasons in words and their style (serious ones as bad news).
fn throttle_text(t: Theme, m: &Metrics) -> (String, ratatui::style::Style) {
    let text = match m.throttle {
        None => ABSENT.to_string(),
        Some(0) => "none".to_string(),
        Some(bits) => throttle::words(bits).join(", "),
    };
    let style = match m.throttle {
        Some(b) if b & throttle::SERIOUS != 0 => t.bad(),
        _ => t.text(),
    };
    (text, style)
}

impl GpuPanel<'_> {
    fn stats_lines(&self) -> Vec<Line<'static>> {
        let t = self.theme;
        let g = self.gpu;
        let m: &Metrics = &g.current;
        let i = &g.info;
        let row = |k: &str, v: String| {
            Line::from(vec![
                Span::styled(format!("{k:<10}"), t.dim()),
                Span::raw(v),
            ])
        };
        let f = |v: Option<u32>| v.map(f64::from);
        let temp = match (m.temp_c, i.temperature_slowdown_c) {
            (Some(c), Some(s)) => format!("{c:.0} °C (slowdown {s:.0})"),
            (c, _) => format::num(c, " °C"),
        };
        let fan = match (m.fan_pct, i.has_fan) {
            (Some(p), _) => format!("{p}%"),
            (None, Some(false)) => "none (fanless)".to_string(),
            (None, _) => ABSENT.to_string(),
        };
        let gen_w = |gen: Option<u32>, w: Option<u32>| {
            format!(
                "gen{} x{}",
                gen.map_or(ABSENT.into(), |v| v.to_string()),
                w.map_or(ABSENT.into(), |v| v.to_string())
            )
        };
        let (throttle, throttle_style) = throttle_text(t, m);
        vec![
            row("temp", temp),
            row(
                "SM clock",
                format::of(f(m.sm_clock_mhz), f(i.sm_clock_max_mhz), " MHz"),
            ),
            row(
                "mem clock",
                format::of(f(m.mem_clock_mhz), f(i.mem_clock_max_mhz), " MHz"),
            ),
            row("fan", fan),
            row(
                "memory",
                format::of(
                    m.mem_used_bytes.map(|b| b as f64 / MIB),
                    m.mem_total_bytes
                        .or(i.memory_total_bytes)
                        .map(|b| b as f64 / MIB),
                    " MiB",
                ),
            ),
            row(
                "P-state",
                m.pstate.map_or(ABSENT.into(), |p| format!("P{p}")),
            ),
            row(
                "PCIe link",
                format!(
                    "{} of {}",
                    gen_w(m.pcie_gen, m.pcie_width),
                    gen_w(i.pcie_gen_max, i.pcie_width_max)
                ),
            ),
            Line::from(vec![
                Span::styled(format!("{:<10}", "throttle"), t.dim()),
                Span::styled(throttle, throttle_style),
            ]),
            row("tensor", format::pct(m.tensor_active)),
            row("DRAM BW", format::pct(m.dram_active)),
            row("occupancy", format::pct(m.sm_occupancy)),
            row("mem busy", format::pct(m.util_mem)),
        ]
    }

    /// The health, first in the column so it shows on the smallest screen: its state, then one
    /// line per part (XIDs, ECC, remaps, PCIe, NVLink), each cut to `width`; and the time the
    /// serious clock event reasons held the clocks at the newest read. Nothing where the source
    /// reads neither.
    fn health_lines(&self, width: usize) -> Vec<Line<'static>> {
        let t = self.theme;
        let g = self.gpu;
        let mut lines = Vec::new();
        let held: Vec<String> = ThrottleReason::ALL
            .into_iter()
            .filter(|r| r.serious())
            .filter_map(|r| {
                let s = g.current.throttle_held.get(r).filter(|s| *s > 0.0)?;
                Some(format!("{} {:.0}%", r.words(), s * 100.0))
            })
            .collect();
        let rest = width.saturating_sub(10);
        if let Some(parts) = g.health_parts() {
            let state = g.health_state();
            let style = match state {
                HealthState::Fault => t.bad(),
                HealthState::Warn => t.warn(),
                _ => t.ok(),
            };
            lines.push(Line::from(vec![
                Span::styled(format!("{:<10}", "health"), t.dim()),
                Span::styled(format::truncate(state.as_str(), rest), style),
            ]));
            // A mark, not spaces, before each part: the wrapping paragraph trims leading spaces.
            for p in parts {
                lines.push(Line::from(vec![
                    Span::styled(format!("{:<10}", "·"), t.dim()),
                    Span::raw(format::truncate(&p, rest)),
                ]));
            }
        }
        if !held.is_empty() {
            lines.push(Line::from(vec![
                Span::styled(format!("{:<10}", "held"), t.dim()),
                Span::styled(format::truncate(&held.join(", "), rest), t.bad()),
            ]));
        }
        lines
    }

    /// Without the details: the temperature and the throttle reasons, for the bottom border
    /// (the "idle" clock reason left out: it says there is no work, not that the GPU is slowed).
    fn compact_readings(&self) -> Line<'static> {
        let t = self.theme;
        let mut m = self.gpu.current;
        m.throttle = m.throttle.map(|b| b & !throttle::GPU_IDLE);
        let (throttle, style) = throttle_text(t, &m);
        Line::from(vec![
            Span::styled(format!(" {} ", format::num(m.temp_c, " °C")), t.text()),
            Span::styled("· throttle ", t.dim()),
            Span::styled(throttle, style),
            Span::styled(" · Enter: details ", t.dim()),
        ])
        .right_aligned()
    }

    /// Draw the panel in parts: its border, each chart, each line of its readings.
    pub fn draw_on(&self, area: Rect, canvas: &mut dyn Canvas) {
        let t = self.theme;
        let g = self.gpu;
        let live = Liveness::of(g, self.now, self.interval_s);
        let (status, status_style) = match &live {
            Liveness::Live => (
                g.verdict.title().to_string(),
                diagnosis::verdict_style(t, g),
            ),
            Liveness::Lost(_) => (live.words().unwrap_or_default(), t.bad()),
            _ => (live.words().unwrap_or_default(), t.warn()),
        };
        let mut block = Block::default()
            .borders(Borders::ALL)
            .border_style(if self.selected {
                t.border_selected()
            } else {
                t.border()
            })
            .title(Line::styled(title(g), t.title()))
            .title(Line::styled(format!(" {status} "), status_style).right_aligned());
        if !self.details {
            block = block.title_bottom(self.compact_readings());
        }
        let inner = block.inner(area);
        canvas::block(canvas, "gpu-panel", area, &block);
        if inner.is_empty() {
            return;
        }
        let stats_w = if self.details {
            (inner.width * 2 / 5).clamp(20, 34).min(inner.width)
        } else {
            0
        };
        let charts = Rect::new(inner.x, inner.y, inner.width - stats_w, inner.height);
        PanelCharts {
            gpu: g,
            theme: t,
            t: self.t,
            interval_s: self.interval_s,
            window_s: self.window_s,
        }
        .draw_on(charts, canvas);
        if !self.details {
            // A stale or lost GPU says so in the title.
            return;
        }
        let mut lines = Vec::new();
        if let Some(w) = live.words() {
            lines.push(Line::styled(w, status_style));
        }
        lines.extend(self.health_lines(usize::from(stats_w.saturating_sub(1))));
        lines.extend(self.stats_lines());
        let stats = Rect::new(
            charts.right() + 1,
            inner.y,
            stats_w.saturating_sub(1),
            inner.height,
        );
        draw_lines(canvas, "gpu-readings", lines, stats);
    }
}

/// Draw `lines` into `area` as `Paragraph::new(lines).wrap(Wrap { trim: true })` does: when every
/// line fits the width the wrapper returns each line whole, so each line is a part of its own
/// (drawn again only when it changes); otherwise the paragraph is one part.
fn draw_lines(canvas: &mut dyn Canvas, name: &'static str, lines: Vec<Line<'_>>, area: Rect) {
    if area.is_empty() {
        return;
    }
    let whole = |l: &Line| {
        // The wrapper trims leading whitespace; alignment moves the line.
        let leading_space = l
            .spans
            .iter()
            .find(|s| !s.content.is_empty())
            .is_some_and(|s| s.content.starts_with(char::is_whitespace));
        l.alignment.is_none() && !leading_space && l.width() <= usize::from(area.width)
    };
    if !lines.iter().all(whole) {
        let p = Paragraph::new(lines).wrap(Wrap { trim: true });
        canvas.part(name, area, key_of(&p), &mut |buf| (&p).render(area, buf));
        return;
    }
    for (line, y) in lines.iter().zip(area.top()..area.bottom()) {
        let row = Rect::new(area.x, y, area.width, 1);
        canvas.part(name, row, key_of(line), &mut |buf| {
            buf.set_line(row.x, row.y, line, row.width);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::buffer::Buffer;
    use ratatui::style::{Color, Style};

    /// Lines drawn one part each give the cells a wrapping paragraph gives; lines that do not
    /// fit go through the paragraph.
    #[test]
    fn readings_drawn_line_by_line_are_what_a_wrapping_paragraph_draws() {
        let styled = |a: &'static str, b: &'static str| {
            Line::from(vec![
                Span::styled(a, Style::default().fg(Color::Gray)),
                Span::styled(b, Style::default().fg(Color::Green)),
            ])
            .style(Style::default().bg(Color::Black))
        };
        let cases: Vec<Vec<Line<'static>>> = vec![
            vec![
                styled("temp      ", "45 °C"),
                Line::from(""),
                styled("SM ", "1980/1980 MHz"),
            ],
            vec![Line::from("0123456789abcdefghij")],
            vec![Line::from("a line far too long for twenty columns to hold")],
            vec![Line::from("   indented"), Line::from("  ")],
            (0..10)
                .map(|i| Line::from(format!("row {i} ✓ 漢字")))
                .collect(),
        ];
        let full = Rect::new(0, 0, 40, 8);
        let area = Rect::new(3, 1, 20, 5);
        for lines in cases {
            let mut parts = Buffer::empty(full);
            draw_lines(&mut parts, "test", lines.clone(), area);
            let mut para = Buffer::empty(full);
            Paragraph::new(lines.clone())
                .wrap(Wrap { trim: true })
                .render(area, &mut para);
            assert_eq!(parts, para, "{lines:?}");
        }
    }
}
