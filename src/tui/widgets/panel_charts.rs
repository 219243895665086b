//! The charts of a GPU's panel: utilization, memory, PCIe, power and SM activity over the time
//! window, each with its current value and its mean over a stated span, and a time axis under
//! them. When rows are short the least telling charts go first; the axis and the dip marks go
//! before the PCIe charts.
//!
//! ```text
//! util  45% now   0% ▄▂ ▆▅▂▁▃▆█▂ ▁▃█▄▁ ▂▇▄▄▁▂▄█▂
//!     60 s mean 35%  ████████████████████████████
//!                    ^ ^  ^          ^ ^
//! mem GiB 30.8/140.4 ▂▂▂▂▂▂▂▂▂▂▂▂▂▂▂▂▂▂▂▂▂▂▂▂▂▂▂▂
//! ...
//! 0.5 s per column      45s       30s       15s
//! ```

use ratatui::layout::Rect;
use ratatui::text::Line;

use crate::engine::GpuSnapshot;
use crate::tui::canvas::{key_of, Canvas};
use crate::tui::format;
use crate::tui::theme::{ChartMetric, Theme};

use super::chart::{MetricChart, LABEL_WIDTH};
use super::series::{self, Binned, Span as TimeSpan};

const MIB: f64 = (1u64 << 20) as f64;
/// PCIe charts never scale below this, so an idle link's background traffic (tens of kB/s) stays
/// at the chart's floor instead of filling it.
pub const PCIE_FLOOR_BPS: f64 = 100e6;
/// The headline utilization is the mean of this many seconds (one driver reading swings between
/// 0 and 100 while a job stalls and runs).
pub const HEADLINE_MEAN_S: f64 = 2.0;
/// Fewest columns between two time labels.
const TICK_GAP: f64 = 9.0;
/// Steps between time labels, seconds.
const TICK_STEPS: [f64; 12] = [
    5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0,
];

/// What the charts are drawn from.
pub struct PanelCharts<'a> {
    pub gpu: &'a GpuSnapshot,
    pub theme: Theme,
    /// Time of the snapshot (the right edge of the charts).
    pub t: f64,
    pub interval_s: f64,
    pub window_s: f64,
}

/// One chart: its label, columns, full scale, colour, and whether it carries the dip marks.
struct Chart<'a> {
    label: Vec<Line<'a>>,
    binned: Binned,
    full: f64,
    metric: ChartMetric,
    /// Lower draws first when rows are short.
    priority: u8,
}

/// Priorities of the time axis and the marker row among the charts'.
const AXIS_PRIORITY: u8 = 4;
const MARKS_PRIORITY: u8 = 5;

/// A chart's label: its name and current value on the first line, `extra` under it.
fn label<'a>(t: Theme, name: &str, value: String, extra: Option<String>) -> Vec<Line<'a>> {
    let width = usize::from(LABEL_WIDTH - 1);
    let head = format!(
        "{name}{value:>w$}",
        w = width.saturating_sub(name.chars().count())
    );
    let mut lines = vec![Line::styled(head, t.text())];
    if let Some(e) = extra {
        lines.push(Line::styled(format!("{e:>width$}"), t.dim()));
    }
    lines
}

fn max_of(b: &Binned) -> Option<f64> {
    b.values.iter().flatten().copied().reduce(f64::max)
}

impl PanelCharts<'_> {
    fn span(&self, width: u16) -> TimeSpan {
        TimeSpan {
            end: self.t,
            window_s: self.window_s,
            columns: MetricChart::columns_for(width),
        }
    }

    /// The mean of the columns since the GPU's newest process started, when it started inside
    /// the window ("job mean"), else of the columns with history ("60 s mean"; shorter while
    /// the history is).
    fn mean_label(&self, b: &Binned, span: TimeSpan) -> Option<String> {
        let job_start = self
            .gpu
            .processes
            .iter()
            .filter_map(|p| p.running_s)
            .reduce(f64::min)
            .map(|r| self.t - r)
            .filter(|s| *s > span.start());
        let from = job_start.map_or(b.leading, |s| {
            (0..span.columns)
                .find(|&i| span.column_bounds(i).0 >= s)
                .unwrap_or(span.columns)
        });
        let v: Vec<f64> = b.values[from.min(b.values.len())..]
            .iter()
            .flatten()
            .copied()
            .collect();
        let mean = (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)?;
        let over = match job_start {
            Some(_) => "job".to_string(),
            None => {
                let col_s = self.window_s / span.columns.max(1) as f64;
                format::seconds((span.columns - from.min(span.columns)) as f64 * col_s)
            }
        };
        Some(format!("{over} mean {mean:.0}%"))
    }

    /// Every chart, in the order they are drawn.
    fn charts(&self, span: TimeSpan) -> Vec<Chart<'static>> {
        let [util, sm] = self.activity_charts(span);
        let [mem, rx, tx, power] = self.resource_charts(span);
        vec![util, mem, rx, tx, power, sm]
    }

    /// Utilization (its short mean, its latest reading, its mean over a stated span) and SM
    /// activity.
    fn activity_charts(&self, span: TimeSpan) -> [Chart<'static>; 2] {
        let t = self.theme;
        let g = self.gpu;
        let m = &g.current;
        let util = series::utilization(g, span, self.interval_s);
        let sm = series::tick_metric(g, span, self.interval_s, |m| m.sm_active);
        let sm_known = g.info.gpm_supported || m.sm_active.is_some();
        let headline = series::recent_util_mean(g, self.t, HEADLINE_MEAN_S);
        let util_value = format!(
            "{:>4} now {:>4}",
            format::pct(headline),
            format::pct(m.util_gpu)
        );
        let sm_value = if sm_known {
            format::pct(m.sm_active)
        } else {
            "n/a".to_string()
        };
        [
            Chart {
                label: label(t, "util", util_value, self.mean_label(&util, span)),
                full: 100.0,
                binned: util,
                metric: ChartMetric::Util,
                priority: 0,
            },
            Chart {
                label: label(t, "SM act", sm_value, self.mean_label(&sm, span)),
                full: 100.0,
                binned: sm,
                metric: ChartMetric::SmActive,
                priority: if sm_known { 1 } else { 8 },
            },
        ]
    }

    /// Memory, PCIe receive and transmit, power: each with its current value, and its share of
    /// the maximum or its peak in the window.
    fn resource_charts(&self, span: TimeSpan) -> [Chart<'static>; 4] {
        let t = self.theme;
        let g = self.gpu;
        let m = &g.current;
        let iv = self.interval_s;
        let mem = series::tick_metric(g, span, iv, |m| m.mem_used_bytes.map(|b| b as f64 / MIB));
        let rx = series::tick_metric(g, span, iv, |m| m.pcie_rx_bytes_per_s);
        let tx = series::tick_metric(g, span, iv, |m| m.pcie_tx_bytes_per_s);
        let power = series::tick_metric(g, span, iv, |m| m.power_w);
        let mem_total = m.mem_total_bytes.or(g.info.memory_total_bytes);
        let limit = m.power_limit_w.or(g.info.power_limit_watts);
        let pcie_scale = |b: &Binned| max_of(b).map_or(PCIE_FLOOR_BPS, |m| m.max(PCIE_FLOOR_BPS));
        let share = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => Some(format!("{:.0}% of max", 100.0 * a / b)),
            _ => None,
        };
        let rate = |name: &str, f: fn(&crate::model::Metrics) -> Option<f64>| {
            let peak = series::tick_peak(g, span, f);
            label(
                t,
                name,
                format::rate(f(m)),
                peak.map(|v| format!("peak {}", format::rate(Some(v)))),
            )
        };
        let used = format!(
            "{}/{}",
            format::gib(m.mem_used_bytes),
            format::gib(mem_total)
        );
        let mem_share = share(
            m.mem_used_bytes.map(|b| b as f64),
            mem_total.map(|b| b as f64),
        );
        [
            Chart {
                label: label(t, "mem GiB", used, mem_share),
                full: mem_total.map_or(max_of(&mem).unwrap_or(1.0), |b| b as f64 / MIB),
                binned: mem,
                metric: ChartMetric::Memory,
                priority: 2,
            },
            Chart {
                label: rate("PCIe rx", |m| m.pcie_rx_bytes_per_s),
                full: pcie_scale(&rx),
                binned: rx,
                metric: ChartMetric::PcieRx,
                priority: 6,
            },
            Chart {
                label: rate("PCIe tx", |m| m.pcie_tx_bytes_per_s),
                full: pcie_scale(&tx),
                binned: tx,
                metric: ChartMetric::PcieTx,
                priority: 7,
            },
            Chart {
                label: label(
                    t,
                    "power",
                    format::of(m.power_w, limit, " W"),
                    share(m.power_w, limit),
                ),
                full: limit.unwrap_or_else(|| max_of(&power).unwrap_or(1.0)),
                binned: power,
                metric: ChartMetric::Power,
                priority: 3,
            },
        ]
    }

    /// Draw the charts that fit in `area`, each a part of the screen, and the time axis.
    pub fn draw_on(&self, area: Rect, canvas: &mut dyn Canvas) {
        if area.is_empty() || area.width <= LABEL_WIDTH {
            return;
        }
        let t = self.theme;
        let span = self.span(area.width);
        let mut charts = self.charts(span);
        // What fits, by priority: a row each at least.
        let h = usize::from(area.height);
        let mut priorities: Vec<u8> = charts
            .iter()
            .map(|c| c.priority)
            .chain([AXIS_PRIORITY, MARKS_PRIORITY])
            .collect();
        priorities.sort_unstable();
        let cut = priorities.get(h).copied().unwrap_or(u8::MAX);
        charts.retain(|c| c.priority < cut);
        let axis = AXIS_PRIORITY < cut;
        let with_marks = MARKS_PRIORITY < cut;
        let avail = h - usize::from(axis) - usize::from(with_marks);
        let each = avail / charts.len().max(1);
        let marks = charts
            .first()
            .filter(|c| c.metric == ChartMetric::Util)
            .map(|c| series::dip_marks(self.gpu, &c.binned, span))
            .unwrap_or_default();
        let mut y = area.y;
        for (i, c) in charts.iter().enumerate() {
            let util = c.metric == ChartMetric::Util;
            let rows = if util {
                avail - each * (charts.len() - 1) + usize::from(with_marks)
            } else {
                each
            };
            let rows = (rows as u16).min(area.bottom() - y);
            if rows == 0 {
                continue;
            }
            MetricChart {
                label: c.label.clone(),
                binned: &c.binned,
                full_scale: c.full,
                style: t.chart(c.metric),
                absent_style: t.absent(),
                marks: (util && with_marks && i == 0).then_some(marks.as_slice()),
                mark_style: t.warn(),
            }
            .draw_on(Rect::new(area.x, y, area.width, rows), canvas);
            y += rows;
        }
        if axis && y < area.bottom() {
            self.draw_axis(Rect::new(area.x, y, area.width, 1), span, canvas);
        }
    }

    /// The time axis: how long a column is, and labels of the time before the newest reading.
    fn draw_axis(&self, area: Rect, span: TimeSpan, canvas: &mut dyn Canvas) {
        let t = self.theme;
        let col_s = self.window_s / span.columns.max(1) as f64;
        let per = if col_s < 1.0 {
            format!("{col_s:.2} s per column")
        } else if col_s < 10.0 {
            format!("{col_s:.1} s per column")
        } else {
            format!("{col_s:.0} s per column")
        };
        let mut text: Vec<char> = format!("{per:<w$}", w = usize::from(LABEL_WIDTH))
            .chars()
            .chain(std::iter::repeat_n(' ', span.columns))
            .collect();
        let step = TICK_STEPS
            .iter()
            .copied()
            .find(|s| s / col_s >= TICK_GAP)
            .unwrap_or(self.window_s);
        let mut ago = step;
        while ago < self.window_s + 1e-9 {
            let label = tick_label(ago);
            let end = span.columns as f64 - ago / col_s;
            let first = end.round() as i64 - label.chars().count() as i64;
            if first >= 0 {
                let at = usize::from(LABEL_WIDTH) + first as usize;
                for (k, c) in label.chars().enumerate() {
                    if let Some(slot) = text.get_mut(at + k) {
                        *slot = c;
                    }
                }
            }
            ago += step;
        }
        let line = Line::styled(text.into_iter().collect::<String>(), t.dim());
        canvas.part("axis", area, key_of(&(&line, area)), &mut |buf| {
            buf.set_line(area.x, area.y, &line, area.width);
        });
    }
}

/// `45s`, `2m`, `1h`: a tick's time before the newest reading.
fn tick_label(ago: f64) -> String {
    if ago < 60.0 {
        format!("{ago:.0}s")
    } else if ago < 3600.0 {
        format!("{:.0}m", ago / 60.0)
    } else {
        format!("{:.0}h", ago / 3600.0)
    }
}
