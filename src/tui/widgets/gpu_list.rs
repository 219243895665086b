//! One compact row per GPU: name, utilization sparkline, memory, power, temperature, verdict.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Widget};

use crate::engine::Snapshot;
use crate::tui::format;
use crate::tui::theme::{ChartMetric, Theme};

use super::gauge::ShareBar;
use super::series::{self, Binned, Span as TimeSpan};
use super::status::Liveness;

pub struct GpuList<'a> {
    pub snapshot: &'a Snapshot,
    pub theme: Theme,
    pub selected: usize,
    pub now: f64,
    pub window_s: f64,
}

/// Width of the verdict column.
const VERDICT_W: usize = 16;

/// "NVIDIA H200 (simulated)" → "H200 (simulated)": the vendor is in the header already.
fn short_name(name: &str) -> &str {
    name.strip_prefix("NVIDIA ").unwrap_or(name)
}

impl Widget for &GpuList<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(t.border())
            .title(Line::styled(
                format!(" {} GPUs ", self.snapshot.gpus.len()),
                t.title(),
            ));
        let inner = block.inner(area);
        block.render(area, buf);
        if inner.is_empty() {
            return;
        }
        let visible = inner.height as usize;
        let first = self.selected.saturating_sub(visible.saturating_sub(1));
        let interval = self.snapshot.stats.interval_s;
        let name_w = self
            .snapshot
            .gpus
            .iter()
            .map(|g| short_name(&g.info.name).chars().count())
            .max()
            .unwrap_or(0)
            .min(inner.width as usize / 8);
        for (row, (pos, g)) in self
            .snapshot
            .gpus
            .iter()
            .enumerate()
            .skip(first)
            .take(visible)
            .enumerate()
        {
            let y = inner.y + row as u16;
            let m = &g.current;
            let selected = pos == self.selected;
            let live = Liveness::of(g, self.now, interval);
            let (verdict, verdict_style) = match &live {
                Liveness::Live => (
                    g.verdict.title().to_string(),
                    if g.findings.is_empty() {
                        t.ok()
                    } else {
                        g.findings
                            .iter()
                            .map(|f| f.severity)
                            .max()
                            .map_or(t.text(), |s| t.severity(s))
                    },
                ),
                Liveness::Lost(_) => ("LOST".to_string(), t.bad()),
                Liveness::Waiting => ("no data yet".to_string(), t.dim()),
                other => (other.words().unwrap_or_default(), t.warn()),
            };
            let mem_share = match (m.mem_used_bytes, m.mem_total_bytes) {
                (Some(u), Some(tot)) if tot > 0 => Some(u as f64 / tot as f64),
                _ => None,
            };
            let prefix = format!(
                "{} {:>2} {:<name_w$} ",
                if selected { "▶" } else { " " },
                g.info.index,
                format::truncate(short_name(&g.info.name), name_w)
            );
            let util = format!(" {:>4}", format::pct(m.util_gpu));
            let gib = |b: Option<u64>| {
                b.map_or(format::ABSENT.to_string(), |b| {
                    format!("{:.0}", b as f64 / (1u64 << 30) as f64)
                })
            };
            let mem = format!(
                " {:>3}/{:<3}G",
                gib(m.mem_used_bytes),
                gib(m.mem_total_bytes)
            );
            let power = format!(" {:>8}", format::of(m.power_w, m.power_limit_w, "W"));
            let temp = format!(" {:>4}", format::num(m.temp_c, "°C"));
            let verdict = format!(" {:<VERDICT_W$}", format::truncate(&verdict, VERDICT_W));
            let bar_w: u16 = 6;
            let fixed = [&prefix, &util, &mem, &power, &temp, &verdict]
                .iter()
                .map(|s| s.chars().count() as u16)
                .sum::<u16>()
                + bar_w
                + 1;
            let spark_w = inner.width.saturating_sub(fixed);
            let base = if selected {
                t.selected()
            } else {
                Style::default()
            };
            // Clear the row in the row's style first, so the selection shows across it.
            buf.set_style(Rect::new(inner.x, y, inner.width, 1), base);
            let mut x = inner.x;
            let right = inner.right();
            let put = |buf: &mut Buffer, x: &mut u16, s: &str, style: Style| {
                if *x < right {
                    let (nx, _) =
                        buf.set_stringn(*x, y, s, (right - *x) as usize, base.patch(style));
                    *x = nx;
                }
            };
            put(buf, &mut x, &prefix, t.text());
            if spark_w >= 4 {
                let span = TimeSpan {
                    end: self.snapshot.t,
                    window_s: self.window_s,
                    columns: spark_w as usize,
                };
                let util: Binned = series::utilization(g, span, interval);
                super::chart::sparkline(
                    &util,
                    100.0,
                    1,
                    base.patch(t.chart(ChartMetric::Util)),
                    base.patch(t.absent()),
                )
                .render(Rect::new(x, y, spark_w, 1), buf);
                x += spark_w;
            }
            put(buf, &mut x, &util, t.text());
            put(buf, &mut x, " ", t.text());
            if x + bar_w <= right {
                let bar = ShareBar {
                    share: mem_share,
                    style: base.patch(t.chart(ChartMetric::Memory)),
                    track_style: base.patch(t.dim()),
                };
                (&bar).render(Rect::new(x, y, bar_w, 1), buf);
                x += bar_w;
            }
            put(buf, &mut x, &mem, t.text());
            put(buf, &mut x, &power, t.text());
            put(buf, &mut x, &temp, t.text());
            put(buf, &mut x, &verdict, verdict_style);
        }
    }
}
