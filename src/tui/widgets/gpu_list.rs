//! One compact row per GPU: a health mark beside its index (`✗` a fault: an XID, uncorrectable
//! errors, a failed remap; `!` a health warning: a remap waiting for a reset, corrected errors
//! rising), name, utilization sparkline and its 2 s mean, memory, power, temperature, and its
//! verdict in the style of its severity (with the share of time lost where there is room). A GPU
//! in MIG mode has a row per instance under it: its IDs and profile, the job in it, its SM
//! activity (GPM: no utilization is reported per instance), memory and verdict (`no signal`
//! without GPM).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Widget};

use crate::engine::{GpuSnapshot, HealthState, MigSnapshot, Snapshot};
use crate::tui::diagnosis;
use crate::tui::format;
use crate::tui::theme::{ChartMetric, Theme};

use super::gauge::ShareBar;
use super::panel_charts::HEADLINE_MEAN_S;
use super::series::{self, Binned, Span as TimeSpan};
use super::status::Liveness;

pub struct GpuList<'a> {
    pub snapshot: &'a Snapshot,
    pub theme: Theme,
    pub selected: usize,
    /// Position of the GPU on the first row (the list scrolls to keep the selection in view).
    pub first: usize,
    pub now: f64,
    pub window_s: f64,
    /// Whether the arrow keys move the selection (its border is then highlighted).
    pub focused: bool,
}

/// Width of the verdict column; from [`WIDE_LIST`] columns on, with the share of time lost.
const VERDICT_W: usize = 16;
const VERDICT_WIDE_W: usize = 27;
const WIDE_LIST: u16 = 110;

/// One line of the list: a GPU (its position), or one of its MIG instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListLine {
    Gpu(usize),
    Mig(usize, usize),
}

/// The list's lines: each GPU, then its MIG instances.
pub fn list_lines(snapshot: &Snapshot) -> Vec<ListLine> {
    snapshot
        .gpus
        .iter()
        .enumerate()
        .flat_map(|(pos, g)| {
            std::iter::once(ListLine::Gpu(pos))
                .chain((0..g.mig.len()).map(move |i| ListLine::Mig(pos, i)))
        })
        .collect()
}

/// The line of the GPU at `pos`.
pub fn line_of_gpu(lines: &[ListLine], pos: usize) -> usize {
    lines
        .iter()
        .position(|l| *l == ListLine::Gpu(pos))
        .unwrap_or(pos)
}

/// The GPU on line `line` of the list (a MIG instance's line: its GPU).
pub fn gpu_at_line(snapshot: &Snapshot, line: usize) -> usize {
    match list_lines(snapshot).get(line) {
        Some(ListLine::Gpu(pos) | ListLine::Mig(pos, _)) => *pos,
        None => line,
    }
}

/// "NVIDIA H200 (simulated)" → "H200 (simulated)": the vendor is in the header already.
fn short_name(name: &str) -> &str {
    name.strip_prefix("NVIDIA ").unwrap_or(name)
}

/// Widths shared by every row.
struct Columns {
    name_w: usize,
    verdict_w: usize,
    /// Room for the share of time lost beside the verdict.
    wide: bool,
}

impl GpuList<'_> {
    /// A GPU's verdict in words and style, or how current its readings are.
    fn verdict(&self, g: &GpuSnapshot, wide: bool) -> (String, Style) {
        let t = self.theme;
        match Liveness::of(g, self.now, self.snapshot.stats.interval_s) {
            Liveness::Live if !g.mig.is_empty() && g.findings.is_empty() => {
                (format!("MIG · {} instances", g.mig.len()), t.dim())
            }
            Liveness::Live => {
                let lost = diagnosis::worst_finding(g)
                    .and_then(diagnosis::lost_text)
                    .filter(|_| wide);
                let text = match lost {
                    Some(l) => format!("{} · {l}", g.verdict.title()),
                    None => g.verdict.title().to_string(),
                };
                (text, diagnosis::verdict_style(t, g))
            }
            Liveness::Lost(_) => ("LOST".to_string(), t.bad()),
            Liveness::Waiting => ("no data yet".to_string(), t.dim()),
            other => (other.words().unwrap_or_default(), t.warn()),
        }
    }

    /// The text columns of a GPU's row: before the sparkline, then after it (util, memory,
    /// power, temperature), then the verdict and its style.
    fn texts(
        &self,
        g: &GpuSnapshot,
        selected: bool,
        cols: &Columns,
    ) -> ([String; 5], String, Style) {
        let m = &g.current;
        let name_w = cols.name_w;
        let prefix = format!(
            "{}{}{:>2} {:<name_w$} ",
            if selected { "▶" } else { " " },
            health_mark(g).0,
            g.info.index,
            format::truncate(short_name(&g.info.name), name_w)
        );
        let headline = series::recent_util_mean(g, self.snapshot.t, HEADLINE_MEAN_S);
        let gib = |b: Option<u64>| {
            b.map_or(format::ABSENT.to_string(), |b| {
                format!("{:.0}", b as f64 / (1u64 << 30) as f64)
            })
        };
        let (verdict, style) = self.verdict(g, cols.wide);
        (
            [
                prefix,
                format!(" {:>4}", format::pct(headline.or(m.util_gpu))),
                format!(
                    " {:>3}/{:<3}G",
                    gib(m.mem_used_bytes),
                    gib(m.mem_total_bytes)
                ),
                format!(" {:>8}", format::of(m.power_w, m.power_limit_w, "W")),
                format!(" {:>4}", format::num(m.temp_c, "°C")),
            ],
            format!(
                " {:<w$}",
                format::truncate(&verdict, cols.verdict_w),
                w = cols.verdict_w
            ),
            style,
        )
    }

    /// A MIG instance's row: `└ MIG 1/0 3g.71gb  pod eval-5/ml-team … SM 80%  52/71G  verdict`.
    fn render_mig_row(&self, m: &MigSnapshot, cols: &Columns, row: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let r = &m.reading;
        let gib = |b: Option<u64>| {
            b.map_or(format::ABSENT.to_string(), |b| {
                format!("{:.0}", b as f64 / (1u64 << 30) as f64)
            })
        };
        let (verdict, style) = match m.verdict {
            None => ("no signal".to_string(), t.dim()),
            Some(v) => {
                let worst = m.findings.iter().max_by_key(|f| f.severity);
                let style = match worst {
                    Some(f) => t.severity(f.severity),
                    None if v == crate::model::FindingKind::Healthy => t.ok(),
                    None => t.dim(),
                };
                (v.title().to_string(), style)
            }
        };
        let mid = format!(
            " SM {:>4} {:>3}/{:<3}G ",
            format::pct(r.sm_active),
            gib(r.memory_used_bytes),
            gib(r.memory_total_bytes),
        );
        let verdict = format!(
            "{:<w$}",
            format::truncate(&verdict, cols.verdict_w),
            w = cols.verdict_w
        );
        let job = crate::host::jobs::dominant_job(&m.processes).map(|j| j.label());
        let left = format!(
            "     └ MIG {}/{} {} {}",
            r.gpu_instance_id,
            r.compute_instance_id,
            r.profile.as_deref().unwrap_or("?"),
            job.unwrap_or_default()
        );
        let right_w = mid.chars().count() + verdict.chars().count();
        let left_w = usize::from(row.width).saturating_sub(right_w);
        let (y, end) = (row.y, row.right());
        let mut x = row.x;
        let left = format!("{:<left_w$}", format::truncate(&left, left_w));
        for (text, style) in [(left, t.text()), (mid, t.dim()), (verdict, style)] {
            if x < end {
                x = buf.set_stringn(x, y, &text, usize::from(end - x), style).0;
            }
        }
    }

    /// One GPU's row in `row` (one line).
    fn render_row(
        &self,
        g: &GpuSnapshot,
        selected: bool,
        cols: &Columns,
        row: Rect,
        buf: &mut Buffer,
    ) {
        let t = self.theme;
        let m = &g.current;
        let mem_share = match (m.mem_used_bytes, m.mem_total_bytes) {
            (Some(u), Some(tot)) if tot > 0 => Some(u as f64 / tot as f64),
            _ => None,
        };
        let ([prefix, util, mem, power, temp], verdict, verdict_style) =
            self.texts(g, selected, cols);
        let bar_w: u16 = 6;
        let fixed = [&prefix, &util, &mem, &power, &temp, &verdict]
            .iter()
            .map(|s| s.chars().count() as u16)
            .sum::<u16>()
            + bar_w
            + 1;
        let spark_w = row.width.saturating_sub(fixed);
        let base = if selected {
            t.selected()
        } else {
            Style::default()
        };
        // Clear the row in the row's style first, so the selection shows across it.
        buf.set_style(row, base);
        let (y, right) = (row.y, row.right());
        let mut x = row.x;
        let put = |buf: &mut Buffer, x: &mut u16, s: &str, style: Style| {
            if *x < right {
                let (nx, _) = buf.set_stringn(*x, y, s, (right - *x) as usize, base.patch(style));
                *x = nx;
            }
        };
        put(buf, &mut x, &prefix, t.text());
        self.draw_mark(g, row, base, buf);
        if spark_w >= 4 {
            let span = TimeSpan {
                end: self.snapshot.t,
                window_s: self.window_s,
                columns: spark_w as usize,
            };
            let util: Binned = series::utilization(g, span, self.snapshot.stats.interval_s);
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

impl GpuList<'_> {
    /// The health mark of a sick GPU, in the style of its health, over the prefix's blank.
    fn draw_mark(&self, g: &GpuSnapshot, row: Rect, base: Style, buf: &mut Buffer) {
        let (mark, sick) = health_mark(g);
        let Some(state) = sick.filter(|_| row.width > 2) else {
            return;
        };
        let style = match state {
            HealthState::Fault => self.theme.bad(),
            _ => self.theme.warn(),
        };
        buf.set_string(row.x + 1, row.y, mark.to_string(), base.patch(style));
    }
}

/// The mark beside a GPU's index, and the health it stands for when it is not a blank.
fn health_mark(g: &GpuSnapshot) -> (char, Option<HealthState>) {
    match g.health_state() {
        HealthState::Fault => ('✗', Some(HealthState::Fault)),
        HealthState::Warn => ('!', Some(HealthState::Warn)),
        _ => (' ', None),
    }
}

impl Widget for &GpuList<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(if self.focused {
                t.border_selected()
            } else {
                t.border()
            })
            .title(Line::styled(
                format!(" {} GPUs ", self.snapshot.gpus.len()),
                t.title(),
            ));
        let inner = block.inner(area);
        block.render(area, buf);
        if inner.is_empty() {
            return;
        }
        let wide = inner.width >= WIDE_LIST;
        let cols = Columns {
            name_w: self
                .snapshot
                .gpus
                .iter()
                .map(|g| short_name(&g.info.name).chars().count())
                .max()
                .unwrap_or(0)
                .min(inner.width as usize / 8),
            verdict_w: if wide { VERDICT_WIDE_W } else { VERDICT_W },
            wide,
        };
        let lines = list_lines(self.snapshot);
        for (line, y) in lines
            .iter()
            .skip(self.first)
            .zip(inner.top()..inner.bottom())
        {
            let row = Rect::new(inner.x, y, inner.width, 1);
            match *line {
                ListLine::Gpu(pos) => self.render_row(
                    &self.snapshot.gpus[pos],
                    pos == self.selected,
                    &cols,
                    row,
                    buf,
                ),
                ListLine::Mig(pos, i) => {
                    self.render_mig_row(&self.snapshot.gpus[pos].mig[i], &cols, row, buf)
                }
            }
        }
    }
}
