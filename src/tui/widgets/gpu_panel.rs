//! The full panel of one GPU: charts over the time window beside its current readings.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget, Wrap};

use crate::engine::GpuSnapshot;
use crate::model::{throttle, Metrics};
use crate::tui::canvas::{self, key_of, Canvas};
use crate::tui::format::{self, ABSENT};
use crate::tui::theme::{ChartMetric, Theme};

use super::chart::{MetricChart, LABEL_WIDTH};
use super::series::{self, Binned, Span as TimeSpan};
use super::status::Liveness;

const MIB: f64 = (1u64 << 20) as f64;
/// PCIe charts never scale below this, so idle noise does not fill them.
const PCIE_FLOOR_BPS: f64 = 1e6;

pub struct GpuPanel<'a> {
    pub gpu: &'a GpuSnapshot,
    pub theme: Theme,
    /// Time of the snapshot (the right edge of the charts).
    pub t: f64,
    pub now: f64,
    pub interval_s: f64,
    pub window_s: f64,
    pub selected: bool,
}

/// The panel's title: index, name, bus id.
pub fn title(g: &GpuSnapshot) -> String {
    let bus = g.info.bus_id.as_deref().unwrap_or(ABSENT);
    format!(" GPU {} · {} · {} ", g.info.index, g.info.name, bus)
}

fn label<'a>(t: Theme, name: &str, value: String, extra: Option<String>) -> Vec<Line<'a>> {
    let mut lines = vec![Line::from(vec![
        Span::styled(format!("{name:<8}"), t.dim()),
        Span::styled(format!("{value:>10}"), t.text()),
    ])];
    if let Some(e) = extra {
        lines.push(Line::styled(format!("{e:>18}"), t.dim()));
    }
    lines
}

fn max_of(b: &Binned) -> Option<f64> {
    b.values.iter().flatten().copied().reduce(f64::max)
}

fn mean_of(b: &Binned) -> Option<f64> {
    let v: Vec<f64> = b.values.iter().flatten().copied().collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

impl GpuPanel<'_> {
    fn charts_area(&self, inner: Rect) -> (Rect, Rect) {
        let stats_w = (inner.width * 2 / 5).clamp(20, 34).min(inner.width);
        let charts_w = inner.width - stats_w;
        (
            Rect::new(inner.x, inner.y, charts_w, inner.height),
            Rect::new(inner.x + charts_w, inner.y, stats_w, inner.height),
        )
    }

    fn draw_charts(&self, area: Rect, canvas: &mut dyn Canvas) {
        if area.is_empty() {
            return;
        }
        let t = self.theme;
        let g = self.gpu;
        let m = &g.current;
        let span = TimeSpan {
            end: self.t,
            window_s: self.window_s,
            columns: MetricChart::columns_for(area.width),
        };
        let iv = self.interval_s;
        let util = series::utilization(g, span, iv);
        let marks = series::dip_marks(g, &util, span);
        let mem = series::tick_metric(g, span, iv, |m| m.mem_used_bytes.map(|b| b as f64 / MIB));
        let rx = series::tick_metric(g, span, iv, |m| m.pcie_rx_bytes_per_s);
        let tx = series::tick_metric(g, span, iv, |m| m.pcie_tx_bytes_per_s);
        let power = series::tick_metric(g, span, iv, |m| m.power_w);
        let sm = series::tick_metric(g, span, iv, |m| m.sm_active);
        let mem_total = m.mem_total_bytes.or(g.info.memory_total_bytes);
        let limit = m.power_limit_w.or(g.info.power_limit_watts);
        let pcie_scale = |b: &Binned| max_of(b).map_or(PCIE_FLOOR_BPS, |m| m.max(PCIE_FLOOR_BPS));
        let sm_value = if g.info.gpm_supported || m.sm_active.is_some() {
            format::pct(m.sm_active)
        } else {
            "n/a".to_string()
        };
        let share = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => Some(format!("{:.0}% of max", 100.0 * a / b)),
            _ => None,
        };
        let charts = [
            (
                label(
                    t,
                    "util",
                    format::pct(m.util_gpu),
                    mean_of(&util).map(|v| format!("mean {v:.0}%")),
                ),
                &util,
                100.0,
                ChartMetric::Util,
            ),
            (
                label(
                    t,
                    "mem GiB",
                    format!(
                        "{}/{}",
                        format::gib(m.mem_used_bytes),
                        format::gib(mem_total)
                    ),
                    share(
                        m.mem_used_bytes.map(|b| b as f64),
                        mem_total.map(|b| b as f64),
                    ),
                ),
                &mem,
                mem_total.map_or(max_of(&mem).unwrap_or(1.0), |b| b as f64 / MIB),
                ChartMetric::Memory,
            ),
            (
                label(
                    t,
                    "PCIe rx",
                    format::rate(m.pcie_rx_bytes_per_s),
                    series::tick_peak(g, span, |m| m.pcie_rx_bytes_per_s)
                        .map(|v| format!("peak {}", format::rate(Some(v)))),
                ),
                &rx,
                pcie_scale(&rx),
                ChartMetric::PcieRx,
            ),
            (
                label(
                    t,
                    "PCIe tx",
                    format::rate(m.pcie_tx_bytes_per_s),
                    series::tick_peak(g, span, |m| m.pcie_tx_bytes_per_s)
                        .map(|v| format!("peak {}", format::rate(Some(v)))),
                ),
                &tx,
                pcie_scale(&tx),
                ChartMetric::PcieTx,
            ),
            (
                label(
                    t,
                    "power",
                    format::of(m.power_w, limit, " W"),
                    share(m.power_w, limit),
                ),
                &power,
                limit.unwrap_or_else(|| max_of(&power).unwrap_or(1.0)),
                ChartMetric::Power,
            ),
            (
                label(
                    t,
                    "SM act",
                    sm_value,
                    mean_of(&sm).map(|v| format!("mean {v:.0}%")),
                ),
                &sm,
                100.0,
                ChartMetric::SmActive,
            ),
        ];
        // Rows: the util chart gets the remainder and, when there is room, a marker row.
        let h = area.height as usize;
        let with_marks = h > charts.len();
        let avail = h - usize::from(with_marks);
        let each = avail / charts.len();
        let mut y = area.y;
        for (i, (lbl, binned, full, metric)) in charts.iter().enumerate() {
            let rows = if i == 0 {
                avail.saturating_sub(each * (charts.len() - 1)) + usize::from(with_marks)
            } else {
                each
            };
            if rows == 0 || y >= area.bottom() {
                continue;
            }
            let rows = (rows as u16).min(area.bottom() - y);
            let chart = MetricChart {
                label: lbl.clone(),
                binned,
                full_scale: *full,
                style: t.chart(*metric),
                absent_style: t.absent(),
                marks: (i == 0 && with_marks).then_some(marks.as_slice()),
                mark_style: t.warn(),
            };
            chart.draw_on(Rect::new(area.x, y, area.width, rows), canvas);
            y += rows;
        }
    }

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
        let throttle = match m.throttle {
            None => ABSENT.to_string(),
            Some(0) => "none".to_string(),
            Some(bits) => throttle::words(bits).join(", "),
        };
        let throttle_style = match m.throttle {
            Some(b) if b & throttle::SERIOUS != 0 => t.bad(),
            _ => t.text(),
        };
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
            row(
                "tensor",
                format!(
                    "{}  DRAM {}",
                    format::pct(m.tensor_active),
                    format::pct(m.dram_active)
                ),
            ),
            row("occupancy", format::pct(m.sm_occupancy)),
            row("mem util", format::pct(m.util_mem)),
        ]
    }
}

impl GpuPanel<'_> {
    /// Draw the panel in parts: its border, each chart, each line of its readings.
    pub fn draw_on(&self, area: Rect, canvas: &mut dyn Canvas) {
        let t = self.theme;
        let g = self.gpu;
        let live = Liveness::of(g, self.now, self.interval_s);
        let (status, status_style) = match &live {
            Liveness::Live => (g.verdict.title().to_string(), t.ok()),
            Liveness::Lost(_) => (live.words().unwrap_or_default(), t.bad()),
            _ => (live.words().unwrap_or_default(), t.warn()),
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(if self.selected {
                t.border_selected()
            } else {
                t.border()
            })
            .title(Line::styled(title(g), t.title()))
            .title(Line::styled(format!(" {status} "), status_style).right_aligned());
        let inner = block.inner(area);
        canvas::block(canvas, "gpu-panel", area, &block);
        if inner.is_empty() {
            return;
        }
        let (charts, stats) = self.charts_area(inner);
        if charts.width > LABEL_WIDTH {
            self.draw_charts(charts, canvas);
        }
        let mut lines = Vec::new();
        if let Some(w) = live.words() {
            lines.push(Line::styled(w, status_style));
        }
        lines.extend(self.stats_lines());
        let stats = Rect::new(
            stats.x + 1,
            stats.y,
            stats.width.saturating_sub(1),
            stats.height,
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
