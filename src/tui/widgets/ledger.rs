//! The ledger view (`L`): where each GPU's time and energy went since gpulse started, the
//! processes and users that lost the most, and what it cost at the configured prices. It takes
//! the screen between the header and the footer and scrolls (↑↓ PgUp PgDn); only the rows on
//! screen are put into words. Columns go by priority where the terminal is narrow; a figure the
//! GPU does not give (energy without a power reading) reads `—`.
//!
//! ```text
//! ┌ Ledger since 12:00:00 UTC · 1.5 min booked ─────────────── Esc or L closes ─┐
//! │GPUs                                                                          │
//! │GPU NAME                BOOKED     LOST   LOST%    ENERGY      COST    LOST $ │
//! │0   H200 (simulated)   1.5 min     55 s     61%     5.6 Wh    $0.06     $0.04 │
//! │      input starvation             55 s     61%                               │
//! │Processes, most lost first                                                    │
//! │GPU PID     USER     COMMAND             GPU TIME     LOST    ENERGY     COST │
//! │Users, most lost first                                                        │
//! └──────────────────────────────────────────────────────────── rows 1–20 of 31 ┘
//! ```

use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Widget};

use crate::engine::{GpuSnapshot, Snapshot};
use crate::ledger::{Prices, ProcessLedger};
use crate::tui::cost;
use crate::tui::format::{self, ABSENT};
use crate::tui::ledger_rows::{ledger_rows, JobTotal, LedgerRow, UserTotal};
use crate::tui::theme::Theme;

pub struct LedgerView<'a> {
    pub snapshot: &'a Snapshot,
    pub prices: &'a Prices,
    pub theme: Theme,
    /// Rows scrolled past (cut to the last page when drawn).
    pub scroll: usize,
}

/// A column: its title, width, whether numbers align right, and how much it is kept (the lowest
/// goes first when narrow; from [`ALWAYS`] on, never).
#[derive(Debug, Clone, Copy)]
struct Col {
    title: &'static str,
    width: usize,
    right: bool,
    keep: u8,
}

const ALWAYS: u8 = 10;

const fn col(title: &'static str, width: usize, keep: u8) -> Col {
    Col {
        title,
        width,
        right: true,
        keep,
    }
}

const fn text_col(title: &'static str, width: usize, keep: u8) -> Col {
    Col {
        title,
        width,
        right: false,
        keep,
    }
}

/// GPU rows: index, name (wide: takes the rest), booked, lost, lost share, energy, costs.
const GPU_COLS: [Col; 8] = [
    text_col("GPU", 3, ALWAYS),
    text_col("NAME", 18, ALWAYS),
    col("BOOKED", 8, 9),
    col("LOST", 8, ALWAYS),
    col("LOST%", 5, 8),
    col("ENERGY", 9, 5),
    col("COST", 9, 6),
    col("LOST $", 9, 7),
];
/// Where a kind's lost time and share go in a GPU's table.
const GPU_LOST: usize = 3;
const GPU_LOST_SHARE: usize = 4;
/// Process rows: GPU, PID, user, command (wide), GPU time, lost, energy, cost.
const PROCESS_COLS: [Col; 8] = [
    text_col("GPU", 3, 7),
    text_col("PID", 7, ALWAYS),
    text_col("USER", 8, 4),
    text_col("COMMAND", 12, ALWAYS),
    col("GPU TIME", 8, 9),
    col("LOST", 8, ALWAYS),
    col("ENERGY", 9, 3),
    col("COST", 9, 6),
];
/// User rows: user (wide), GPU time, lost, energy, cost.
const USER_COLS: [Col; 5] = [
    text_col("USER", 10, ALWAYS),
    col("GPU TIME", 8, 9),
    col("LOST", 8, ALWAYS),
    col("ENERGY", 9, 3),
    col("COST", 9, 6),
];
/// Job rows: the job (wide), GPU time, lost, energy, cost.
const JOB_COLS: [Col; 5] = [
    text_col("JOB", 22, ALWAYS),
    col("GPU TIME", 8, 9),
    col("LOST", 8, ALWAYS),
    col("ENERGY", 9, 3),
    col("COST", 9, 6),
];
const JOB_WIDE: (usize, usize) = (0, 40);
/// The wide column of each table, and how wide it grows at most (a command as wide as the
/// screen, a GPU's or user's name no wider than names are, so their figures stay near them).
const GPU_WIDE: (usize, usize) = (1, 28);
const PROCESS_WIDE: (usize, usize) = (3, usize::MAX);
const USER_WIDE: (usize, usize) = (0, 24);
/// The cost columns, shown only with a price.
const COST_TITLES: [&str; 2] = ["COST", "LOST $"];

/// The columns of `cols` shown in `width` columns (a cell per shown column, `None` for the
/// others), with the wide column (`wide`: its position, its widest) widened to what is left.
fn fit(cols: &[Col], wide: (usize, usize), width: usize, priced: bool) -> Vec<Option<Col>> {
    let mut shown: Vec<Option<Col>> = cols
        .iter()
        .map(|c| (priced || !COST_TITLES.contains(&c.title)).then_some(*c))
        .collect();
    let used = |s: &[Option<Col>]| s.iter().flatten().map(|c| c.width + 1).sum::<usize>();
    while used(&shown) > width + 1 {
        let weakest = shown
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.filter(|c| c.keep < ALWAYS).map(|c| (i, c.keep)))
            .min_by_key(|&(_, keep)| keep);
        match weakest {
            Some((i, _)) => shown[i] = None,
            None => break,
        }
    }
    let spare = (width + 1).saturating_sub(used(&shown));
    if let Some(Some(c)) = shown.get_mut(wide.0) {
        c.width = (c.width + spare).min(wide.1.max(c.width));
    }
    shown
}

/// The cells of one row in the shown columns, each padded to its width.
fn join(cols: &[Option<Col>], cells: &[String]) -> String {
    let mut out = String::new();
    for (c, text) in cols
        .iter()
        .zip(cells)
        .filter_map(|(c, t)| c.map(|c| (c, t)))
    {
        let text = format::truncate(text, c.width);
        let pad = c.width.saturating_sub(text.chars().count());
        if !out.is_empty() {
            out.push(' ');
        }
        if c.right {
            out.extend(std::iter::repeat_n(' ', pad));
            out.push_str(&text);
        } else {
            out.push_str(&text);
            out.extend(std::iter::repeat_n(' ', pad));
        }
    }
    out.trim_end().to_string()
}

/// Time, with a zero that reads as one (`0 s`, not `0 ms`).
fn time(s: f64) -> String {
    if s <= 0.0 {
        "0 s".to_string()
    } else {
        format::seconds(s)
    }
}

fn share(part: f64, of: f64) -> String {
    if of > 0.0 {
        format!("{:.0}%", 100.0 * part / of)
    } else {
        ABSENT.to_string()
    }
}

fn energy(joules: Option<f64>) -> String {
    joules.map_or_else(|| ABSENT.to_string(), cost::energy)
}

impl LedgerView<'_> {
    fn money(&self, gpu_seconds: f64, joules: Option<f64>) -> String {
        cost::money(self.prices, self.prices.cost_of(gpu_seconds, joules))
    }

    fn gpu_cells(&self, g: &GpuSnapshot) -> Vec<String> {
        let l = &g.ledger;
        let lost_joules = l.energy.map(|_| l.lost_energy.total());
        vec![
            g.info.index.to_string(),
            g.info.name.clone(),
            time(l.span_s),
            time(l.lost_gpu_seconds),
            share(l.lost_gpu_seconds, l.span_s),
            energy(l.energy_joules()),
            self.money(l.span_s, l.energy_joules()),
            self.money(l.lost_gpu_seconds, lost_joules),
        ]
    }

    fn process_cells(&self, gpu: u32, metered: bool, p: &ProcessLedger, w: usize) -> Vec<String> {
        let joules = metered.then(|| p.energy.total());
        let command = p
            .command
            .as_deref()
            .map_or_else(|| ABSENT.to_string(), |c| format::shorten_middle(c, w));
        vec![
            gpu.to_string(),
            p.pid.to_string(),
            p.user.as_deref().unwrap_or(ABSENT).to_string(),
            command,
            time(p.gpu_seconds),
            time(p.lost_gpu_seconds),
            energy(joules),
            self.money(p.gpu_seconds, joules),
        ]
    }

    fn user_cells(&self, u: &UserTotal) -> Vec<String> {
        vec![
            u.user.as_deref().unwrap_or(ABSENT).to_string(),
            time(u.gpu_seconds),
            time(u.lost_gpu_seconds),
            energy(u.energy_joules),
            self.money(u.gpu_seconds, u.energy_joules),
        ]
    }

    fn job_cells(&self, j: &JobTotal) -> Vec<String> {
        vec![
            j.label.clone(),
            time(j.gpu_seconds),
            time(j.lost_gpu_seconds),
            energy(j.energy_joules),
            self.money(j.gpu_seconds, j.energy_joules),
        ]
    }

    /// One row in words for `width` columns, with its style.
    fn line(&self, row: &LedgerRow, width: usize) -> (String, Style) {
        let t = self.theme;
        let priced = self.prices.any();
        let gpu = fit(&GPU_COLS, GPU_WIDE, width, priced);
        let titles = |cols: &[Option<Col>]| {
            let cells: Vec<String> = cols
                .iter()
                .map(|c| c.map_or("", |c| c.title).to_string())
                .collect();
            join(cols, &cells)
        };
        match row {
            LedgerRow::Title(s) => (s.to_string(), t.title()),
            LedgerRow::GpuHeader => (titles(&gpu), t.dim()),
            LedgerRow::ProcessHeader => (
                titles(&fit(&PROCESS_COLS, PROCESS_WIDE, width, priced)),
                t.dim(),
            ),
            LedgerRow::UserHeader => (titles(&fit(&USER_COLS, USER_WIDE, width, priced)), t.dim()),
            LedgerRow::JobHeader => (titles(&fit(&JOB_COLS, JOB_WIDE, width, priced)), t.dim()),
            LedgerRow::Job(j) => (
                join(&fit(&JOB_COLS, JOB_WIDE, width, priced), &self.job_cells(j)),
                t.text(),
            ),
            LedgerRow::Gpu(g) => (join(&gpu, &self.gpu_cells(g)), t.text()),
            LedgerRow::LostTo {
                kind,
                seconds,
                span_s,
            } => {
                let mut cells = vec![String::new(); GPU_COLS.len()];
                cells[GPU_WIDE.0] = format!("  {}", kind.title());
                cells[GPU_LOST] = time(*seconds);
                cells[GPU_LOST_SHARE] = share(*seconds, *span_s);
                (join(&gpu, &cells), t.dim())
            }
            LedgerRow::Process {
                gpu: index,
                metered,
                process,
            } => {
                let cols = fit(&PROCESS_COLS, PROCESS_WIDE, width, priced);
                let w = cols[PROCESS_WIDE.0].map_or(0, |c| c.width);
                (
                    join(&cols, &self.process_cells(*index, *metered, process, w)),
                    t.text(),
                )
            }
            LedgerRow::Dropped { gpu, count } => (
                format!("GPU {gpu}: {count} more processes, in the totals above"),
                t.dim(),
            ),
            LedgerRow::User(u) => (
                join(
                    &fit(&USER_COLS, USER_WIDE, width, priced),
                    &self.user_cells(u),
                ),
                t.text(),
            ),
            LedgerRow::Empty(s) => (s.to_string(), t.dim()),
            LedgerRow::Blank => (String::new(), t.text()),
        }
    }

    /// The block's title: since when, and over how long.
    fn title(&self) -> String {
        let gpus = &self.snapshot.gpus;
        let since = gpus
            .iter()
            .filter_map(|g| g.ledger.since)
            .min_by(f64::total_cmp);
        let until = gpus
            .iter()
            .filter_map(|g| g.ledger.until)
            .max_by(f64::total_cmp);
        match (since, until) {
            (Some(since), Some(until)) => format!(
                " Ledger since {} UTC ({}) ",
                format::clock(since),
                time(until - since)
            ),
            _ => " Ledger · nothing booked yet ".to_string(),
        }
    }
}

impl Widget for &LedgerView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        Clear.render(area, buf);
        let rows = ledger_rows(self.snapshot);
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(t.border_selected())
            .title(Line::styled(self.title(), t.title()))
            .title(Line::styled(" Esc or L closes ", t.dim()).alignment(Alignment::Right));
        let inner = block.inner(area);
        let visible = usize::from(inner.height);
        let first = self.scroll.min(rows.len().saturating_sub(visible));
        let block = if rows.len() > visible && visible > 0 {
            let last = (first + visible).min(rows.len());
            block.title_bottom(
                Line::styled(
                    format!(
                        " rows {}–{last} of {} · ↑↓ PgUp PgDn ",
                        first + 1,
                        rows.len()
                    ),
                    t.dim(),
                )
                .alignment(Alignment::Right),
            )
        } else {
            block
        };
        block.render(area, buf);
        let width = usize::from(inner.width);
        for (row, y) in rows.iter().skip(first).zip(inner.top()..inner.bottom()) {
            let (text, style) = self.line(row, width);
            buf.set_stringn(inner.x, y, text, width, style);
        }
    }
}

/// Rows of the ledger view of `snapshot` (what a page scrolls through).
pub fn row_count(snapshot: &Snapshot) -> usize {
    ledger_rows(snapshot).len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_tables_drop_their_least_kept_columns_first() {
        let titles = |cols: &[Option<Col>]| -> Vec<&str> {
            cols.iter().flatten().map(|c| c.title).collect()
        };
        let wide = fit(&PROCESS_COLS, PROCESS_WIDE, 120, true);
        assert_eq!(titles(&wide).len(), 8);
        let used: usize = wide.iter().flatten().map(|c| c.width + 1).sum();
        assert_eq!(used, 121, "the command takes the rest");
        assert_eq!(
            titles(&fit(&PROCESS_COLS, PROCESS_WIDE, 78, false)),
            ["GPU", "PID", "USER", "COMMAND", "GPU TIME", "LOST", "ENERGY"]
        );
        assert_eq!(
            titles(&fit(&PROCESS_COLS, PROCESS_WIDE, 50, true)),
            ["GPU", "PID", "COMMAND", "GPU TIME", "LOST"]
        );
        assert_eq!(
            titles(&fit(&PROCESS_COLS, PROCESS_WIDE, 8, true)),
            ["PID", "COMMAND", "LOST"]
        );
        // Without a price and at 40 columns: no cost; the user column takes the 2 spare.
        let cells = ["ana", "1.5 min", "55 s", "5.6 Wh", "$0.06"].map(String::from);
        assert_eq!(
            join(&fit(&USER_COLS, USER_WIDE, 40, false), &cells),
            format!(
                "{:<12} {:>8} {:>8} {:>9}",
                "ana", "1.5 min", "55 s", "5.6 Wh"
            )
        );
    }
}
