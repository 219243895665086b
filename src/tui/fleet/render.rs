//! Drawing the fleet screen. Rendering reads the state and never changes it.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::widgets::{Sparkline, Widget};

use crate::fleet::rank::class;
use crate::fleet::{Fleet, FleetGpu, FleetHost, Trace};

use super::app::{rows, Row};
use super::detail;
use super::view::{ago, memory_text, verdict_text, FleetView};

/// Smallest usable screen.
pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 10;

/// Lines of the screen that are not list rows: title, column header, status.
const CHROME_ROWS: u16 = 3;

/// List rows that fit in a screen `height` lines tall.
pub fn page_rows(height: u16) -> usize {
    height.saturating_sub(CHROME_ROWS).max(1) as usize
}

impl Widget for &FleetView<'_> {
    /// ```text
    /// gpulse fleet · http://prom:9090 · 3 hosts · 24 GPUs · 8 need attention
    ///   GPU MODEL        VERDICT            UTIL utilization   MEMORY     memory  POWER power
    /// ▾ node-a · 127.0.0.1:9401 · gpulse
    /// ▸  0 H200         input starvation    41% ▁▃█▁▃█▁▃█  70/141G ▆▆▆▆  350W ▃▅▃▅
    /// ...
    /// updated 2 s ago · took 12 ms │ ⚠ partial: … │ page 1/3 · ↑↓ Enter PgUp/PgDn ? q
    /// ```
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
            buf.set_stringn(
                area.x,
                area.y,
                format!(
                    "terminal too small ({}×{}); gpulse fleet needs {MIN_WIDTH}×{MIN_HEIGHT}",
                    area.width, area.height
                ),
                area.width as usize,
                Style::default(),
            );
            return;
        }
        let status_area = Rect::new(area.x, area.bottom() - 1, area.width, 1);
        let body = Rect::new(area.x, area.y, area.width, area.height - 1);
        match self.state.fleet.as_deref() {
            Some(fleet) if self.app.detail => match self.app.selected_gpu(fleet) {
                Some(g) => detail::render(self, g, body, buf),
                None => self.render_list(body, buf),
            },
            _ => self.render_list(body, buf),
        }
        self.render_status(status_area, buf);
        if self.app.help {
            detail::render_help(self, area, buf);
        }
    }
}

/// A host's row: its name, exporter addresses, exporter kinds and GPU count.
fn render_host_line(host: &FleetHost, line: Rect, buf: &mut Buffer) {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut instances: Vec<&str> = host.gpus.iter().map(|g| g.instance.as_str()).collect();
    instances.dedup();
    let sources: Vec<&str> = {
        let mut s: Vec<&str> = host.gpus.iter().map(|g| g.source.as_str()).collect();
        s.sort();
        s.dedup();
        s
    };
    let text = format!(
        "▾ {} · {} · {} · {} GPUs",
        host.name,
        instances.join(", "),
        sources.join("+"),
        host.gpus.len()
    );
    buf.set_stringn(line.x, line.y, text, line.width as usize, bold);
}

/// Column widths of the list for a screen `width` wide.
struct Columns {
    spark: u16,
}

impl Columns {
    /// Fixed: marker 2, gpu 3+1, model 12+1, verdict 18+1, util 5+1, memory 12+1, power 6+1.
    const FIXED: u16 = 2 + 4 + 13 + 19 + 6 + 13 + 7;

    fn for_width(width: u16) -> Columns {
        Columns {
            spark: (width.saturating_sub(Self::FIXED + 3) / 3).clamp(0, 60),
        }
    }
}

impl FleetView<'_> {
    /// The list: a title and column header, then host and GPU rows, a page at a time (the page
    /// holding the selected GPU). Before the first answer, what the view is waiting for.
    fn render_list(&self, area: Rect, buf: &mut Buffer) {
        let Some(fleet) = self.state.fleet.as_deref() else {
            self.render_waiting(area, buf);
            return;
        };
        let cols = Columns::for_width(area.width);
        self.render_list_header(fleet, &cols, area, buf);
        if fleet.gpu_count() == 0 {
            buf.set_stringn(
                area.x,
                area.y + 2,
                format!(
                    "Prometheus at {} has no DCGM_FI_DEV_GPU_UTIL series: no gpulse or dcgm-exporter target is scraped",
                    self.url
                ),
                area.width as usize,
                Style::default(),
            );
            return;
        }
        let all_rows = rows(fleet);
        let per_page = page_rows(area.height + 1);
        let selected_row = all_rows
            .iter()
            .position(|r| matches!(r, Row::Gpu(_, _, n) if *n == self.app.selected))
            .unwrap_or(0);
        let page = selected_row / per_page;
        let first = page * per_page;
        for (y, row) in (area.y + 2..area.bottom()).zip(all_rows.iter().skip(first).take(per_page))
        {
            let line = Rect::new(area.x, y, area.width, 1);
            match *row {
                Row::Host(h) => render_host_line(&fleet.hosts[h], line, buf),
                Row::Gpu(h, i, n) => {
                    let g = &fleet.hosts[h].gpus[i];
                    self.render_gpu_line(g, n == self.app.selected, &cols, line, buf);
                }
            }
        }
    }

    /// The line shown before the first answer: the error of the last attempt, or that the view
    /// is asking (and for how long).
    fn render_waiting(&self, area: Rect, buf: &mut Buffer) {
        let msg = match (&self.state.error, self.state.in_flight_since) {
            (Some(e), _) => format!("no data from {}: {e}", self.url),
            (None, Some(t)) => format!(
                "asking {} for its GPUs… ({:.0} s)",
                self.url,
                (self.now - t).max(0.0)
            ),
            (None, None) => format!("asking {} for its GPUs…", self.url),
        };
        buf.set_stringn(
            area.x,
            area.y + 1,
            msg,
            area.width as usize,
            Style::default(),
        );
    }

    /// The title (counts of hosts, GPUs and GPUs needing attention) and the column header.
    fn render_list_header(&self, fleet: &Fleet, cols: &Columns, area: Rect, buf: &mut Buffer) {
        let bold = Style::default().add_modifier(Modifier::BOLD);
        let dim = self.style(Style::default().fg(Color::DarkGray));
        let attention = fleet.gpus().filter(|g| class(g) <= 1).count();
        let title = format!(
            "gpulse fleet · {} · {} hosts · {} GPUs · {attention} need attention",
            self.url,
            fleet.hosts.len(),
            fleet.gpu_count()
        );
        buf.set_stringn(area.x, area.y, title, area.width as usize, bold);
        let sw = cols.spark as usize;
        let header = format!(
            "  {:>3} {:<12} {:<18} {:>5} {:<sw$} {:>12} {:<sw$} {:>6} {:<sw$}",
            "GPU", "MODEL", "VERDICT", "UTIL", "utilization", "MEMORY", "memory", "POWER", "power"
        );
        buf.set_stringn(area.x, area.y + 1, header, area.width as usize, dim);
    }

    fn render_gpu_line(
        &self,
        g: &FleetGpu,
        selected: bool,
        cols: &Columns,
        line: Rect,
        buf: &mut Buffer,
    ) {
        let base = if selected {
            Style::default().add_modifier(Modifier::REVERSED)
        } else {
            Style::default()
        };
        if selected {
            buf.set_style(line, base);
        }
        let model = g
            .model
            .as_deref()
            .map(|m| m.trim_start_matches("NVIDIA ").to_string())
            .unwrap_or_else(|| "?".into());
        let verdict = verdict_text(g);
        let util = g
            .utilization_gpu
            .map(|u| format!("{u:>4.0}%"))
            .unwrap_or_else(|| "    –".into());
        let mem = memory_text(g);
        let power = g
            .power_watts
            .map(|p| format!("{p:>5.0}W"))
            .unwrap_or_else(|| "     –".into());
        let mut x = line.x;
        let put = |buf: &mut Buffer, x: &mut u16, text: &str, width: u16, style: Style| {
            if *x < line.right() {
                let w = width.min(line.right() - *x);
                buf.set_stringn(*x, line.y, text, w as usize, style);
            }
            *x += width + 1;
        };
        put(buf, &mut x, if selected { "▸" } else { " " }, 1, base);
        put(buf, &mut x, &format!("{:>3}", g.gpu), 3, base);
        put(buf, &mut x, &model, 12, base);
        put(buf, &mut x, &verdict, 18, base.patch(self.verdict_style(g)));
        put(buf, &mut x, &util, 5, base);
        let sw = cols.spark;
        let spark_style = base.patch(self.style(Style::default().fg(Color::Cyan)));
        self.spark(
            &g.util,
            Some(100.0),
            Rect::new(x, line.y, sw, 1),
            spark_style,
            buf,
        );
        x += sw + 1;
        put(buf, &mut x, &format!("{mem:>12}"), 12, base);
        let mem_max = g.memory_total_bytes.map(|t| t as f64);
        self.spark(
            &g.memory_used,
            mem_max,
            Rect::new(x, line.y, sw, 1),
            spark_style,
            buf,
        );
        x += sw + 1;
        put(buf, &mut x, &power, 6, base);
        self.spark(
            &g.power,
            None,
            Rect::new(x, line.y, sw, 1),
            spark_style,
            buf,
        );
    }

    /// A one-line sparkline of `trace` resampled to the width of `area`.
    pub fn spark(
        &self,
        trace: &Trace,
        max: Option<f64>,
        area: Rect,
        style: Style,
        buf: &mut Buffer,
    ) {
        let area = area.intersection(buf.area);
        if area.width == 0 || area.height == 0 {
            return;
        }
        let values = resample(&trace.values, area.width as usize);
        let top = max
            .or_else(|| trace.max())
            .filter(|m| *m > 0.0)
            .unwrap_or(1.0);
        let scale = 1000.0 / top;
        let data: Vec<Option<u64>> = values
            .iter()
            .map(|v| v.map(|v| (v.max(0.0) * scale).round() as u64))
            .collect();
        Sparkline::default()
            .data(data)
            .max(1000)
            .style(style)
            .absent_value_symbol("·")
            .render(area, buf);
    }

    fn render_status(&self, area: Rect, buf: &mut Buffer) {
        let s = self.state;
        let mut left = String::new();
        let mut style = Style::default();
        match (&s.error, s.age(self.now)) {
            (Some(e), Some(age)) => {
                left = format!("⚠ showing data from {} ago · {e}", ago(age));
                style = self.style(Style::default().fg(Color::Red).add_modifier(Modifier::BOLD));
            }
            (Some(e), None) => {
                left = format!("⚠ {e}");
                style = self.style(Style::default().fg(Color::Red).add_modifier(Modifier::BOLD));
            }
            (None, Some(age)) => {
                left = format!("updated {} ago", ago(age));
                if let Some(t) = s.took_s {
                    left.push_str(&format!(" · took {:.0} ms", t * 1000.0));
                }
                if let Some(p) = s.problems.first() {
                    left = format!("⚠ partial data: {p}");
                    if s.problems.len() > 1 {
                        left.push_str(&format!(" (+{} more)", s.problems.len() - 1));
                    }
                    left.push_str(&format!(" · updated {} ago", ago(age)));
                    style = self.style(Style::default().fg(Color::Yellow));
                }
            }
            (None, None) => left.push_str("waiting for the first answer"),
        }
        if let Some(t) = s.in_flight_since {
            let busy = (self.now - t).max(0.0);
            if busy >= 1.0 {
                left.push_str(&format!(" · refreshing for {busy:.0} s"));
            }
        }
        if let Some(f) = s.fleet.as_deref() {
            if !f.down_targets.is_empty() {
                left.push_str(&format!(" · {} targets down", f.down_targets.len()));
            }
        }
        // A problem needs the room more than the key hints do.
        let right = self.page_indicator(s.error.is_none() && s.problems.is_empty());
        let rw = right.chars().count() as u16;
        let lw = area.width.saturating_sub(rw + 1);
        buf.set_stringn(area.x, area.y, &left, lw as usize, style);
        if rw < area.width {
            buf.set_stringn(
                area.right() - rw,
                area.y,
                &right,
                rw as usize,
                Style::default(),
            );
        }
    }

    /// `GPU 3/40 · page 2/7 · ↑↓ Enter PgUp/PgDn ? q` (without the keys when told).
    fn page_indicator(&self, with_keys: bool) -> String {
        let keys = match (with_keys, self.app.detail) {
            (false, _) => "",
            (true, true) => " · Esc back · q quit",
            (true, false) => " · ↑↓ Enter PgUp/PgDn ? q",
        };
        let Some(fleet) = self.state.fleet.as_deref() else {
            return keys.trim_start_matches(" · ").to_string();
        };
        let per_page = self.app.page_rows.max(1);
        let all = rows(fleet);
        let pages = all.len().div_ceil(per_page).max(1);
        let selected_row = all
            .iter()
            .position(|r| matches!(r, Row::Gpu(_, _, n) if *n == self.app.selected))
            .unwrap_or(0);
        format!(
            "GPU {}/{} · page {}/{}{keys}",
            (self.app.selected + 1).min(fleet.gpu_count()),
            fleet.gpu_count(),
            selected_row / per_page + 1,
            pages
        )
    }
}

/// Fit `values` to `width` columns spanning the same time: several values per column show their
/// highest; fewer values than columns are stretched, so the newest always sits at the right edge.
pub fn resample(values: &[Option<f64>], width: usize) -> Vec<Option<f64>> {
    if width == 0 || values.is_empty() {
        return Vec::new();
    }
    if values.len() <= width {
        return (0..width)
            .map(|c| values[c * values.len() / width])
            .collect();
    }
    (0..width)
        .map(|b| {
            let lo = b * values.len() / width;
            let hi = ((b + 1) * values.len() / width).max(lo + 1);
            values[lo..hi].iter().flatten().copied().reduce(f64::max)
        })
        .collect()
}
