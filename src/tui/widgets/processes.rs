//! The process table: the GPU processes of the selected GPU (or of all GPUs), sorted, filtered,
//! optionally with each one's children (DataLoader workers) under it. Commands are shortened in
//! the middle (their ends, where jobs differ, stay) or scrolled sideways (← →); a child shows
//! only where its command differs from its parent's.

use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Block, Borders, Cell, Paragraph, Row, StatefulWidget, Table, TableState, Widget,
};

use crate::host::{format_running, ProcessRow, SortKey};
use crate::tui::canvas::{key_of, Canvas};
use crate::tui::format::{self, ABSENT};
use crate::tui::process_table::ProcessTableState;
use crate::tui::theme::Theme;

pub struct ProcessTable<'a> {
    pub rows: &'a [ProcessRow],
    pub state: &'a ProcessTableState,
    /// Index of the GPU shown when not listing all GPUs.
    pub gpu_index: Option<u32>,
    /// Whether the arrow keys move the row selection.
    pub focused: bool,
    /// Position of the row on the table's first line.
    pub first: usize,
    pub theme: Theme,
}

/// What a column shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Content {
    Gpu,
    State,
    Sorted(SortKey),
}

/// A column and the width it needs; columns with the lowest `keep` go first when narrow.
struct Column {
    content: Content,
    title: &'static str,
    width: u16,
    keep: u8,
}

const COMMAND_MIN: u16 = 24;
/// Room for `pod train-7f9c/ml-team`; longer labels are cut in the middle.
const JOB_W: u16 = 22;

/// The columns for a table `width` wide: the GPU's only when listing every GPU, the job's only
/// when some row has one (a workstation's table keeps its room for the command).
fn columns(all_gpus: bool, with_jobs: bool, width: u16) -> Vec<Column> {
    let col = |content: Content, title, width, keep| Column {
        content,
        title,
        width,
        keep,
    };
    let sorted = |key: SortKey, width, keep| col(Content::Sorted(key), key.title(), width, keep);
    let mut cols = vec![
        col(Content::Gpu, "GPU", 3, 7),
        sorted(SortKey::Pid, 7, 9),
        sorted(SortKey::User, 8, 5),
        col(Content::State, "S", 1, 8),
        sorted(SortKey::GpuMemory, 9, 8),
        sorted(SortKey::SmUtil, 5, 6),
        sorted(SortKey::MemUtil, 8, 1),
        sorted(SortKey::Cpu, 5, 4),
        sorted(SortKey::Rss, 9, 2),
        sorted(SortKey::Running, 6, 3),
    ];
    if with_jobs {
        cols.push(sorted(SortKey::Job, JOB_W, 6));
    }
    if !all_gpus {
        cols.remove(0);
    }
    let used = |cols: &[Column]| cols.iter().map(|c| c.width + 1).sum::<u16>();
    while used(&cols) + COMMAND_MIN > width {
        let Some((i, _)) = cols.iter().enumerate().min_by_key(|(_, c)| c.keep) else {
            break;
        };
        if cols[i].keep >= 8 {
            break;
        }
        cols.remove(i);
    }
    cols.push(sorted(SortKey::Command, COMMAND_MIN, 10));
    cols
}

fn opt(v: Option<String>) -> String {
    v.unwrap_or_else(|| ABSENT.to_string())
}

/// A cell of a column other than the command's.
fn cell(row: &ProcessRow, c: &Column) -> String {
    match c.content {
        Content::Gpu => row.gpu.to_string(),
        Content::State => row.state.map_or_else(|| ABSENT.to_string(), String::from),
        Content::Sorted(key) => match key {
            SortKey::Pid => row.pid.to_string(),
            SortKey::User => opt(row.user.clone()),
            SortKey::GpuMemory => format::bytes(row.gpu_memory_bytes),
            SortKey::SmUtil => format::pct(row.sm_util),
            SortKey::MemUtil => format::pct(row.mem_util),
            SortKey::Cpu => format::pct(row.cpu_percent),
            SortKey::Rss => format::bytes(row.rss_bytes),
            SortKey::Running => opt(row.running_s.map(format_running)),
            SortKey::Job => opt(row
                .job
                .as_deref()
                .map(|j| format::shorten_middle(j, usize::from(JOB_W)))),
            SortKey::Command => row.command.clone(),
        },
    }
}

/// Commands as shown: a child's indented under its parent and, where it begins as its parent's
/// does, only what differs (`″` when it is the same command).
fn commands(rows: &[ProcessRow]) -> Vec<String> {
    let mut parents: Vec<&str> = Vec::new();
    rows.iter()
        .map(|row| {
            let cmd = if row.command.is_empty() {
                ABSENT
            } else {
                &row.command
            };
            parents.truncate(row.depth);
            let shown = match parents.last() {
                Some(parent) if row.depth > 0 => {
                    let indent = "  ".repeat(row.depth - 1);
                    format!("{indent}└ {}", differing(parent, cmd))
                }
                _ => cmd.to_string(),
            };
            parents.push(cmd);
            shown
        })
        .collect()
}

/// What of `cmd` differs from `parent`: `″` for the same command, `…` and the rest when it
/// shares the parent's first words, else all of it.
fn differing(parent: &str, cmd: &str) -> String {
    if cmd == parent {
        return "″ (same command)".to_string();
    }
    let shared = parent
        .split_inclusive(' ')
        .zip(cmd.split_inclusive(' '))
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| a.len())
        .sum::<usize>();
    if shared >= 8 && shared < cmd.len() {
        format!("…{}", &cmd[shared..])
    } else {
        cmd.to_string()
    }
}

impl ProcessTable<'_> {
    fn title(&self) -> Line<'static> {
        let t = self.theme;
        let v = &self.state.view;
        let mut spans = vec![Span::styled(
            match (self.state.all_gpus, self.gpu_index) {
                (false, Some(i)) => format!(" Processes · GPU {i} "),
                _ => " Processes · all GPUs ".to_string(),
            },
            if self.focused {
                t.title().add_modifier(ratatui::style::Modifier::REVERSED)
            } else {
                t.title()
            },
        )];
        let arrow = if v.descending { "▼" } else { "▲" };
        spans.push(Span::styled(
            format!("· sort {} {arrow} ", v.sort.title()),
            t.dim(),
        ));
        if v.tree {
            spans.push(Span::styled("tree ", t.dim()));
        }
        if self.state.hscroll > 0 {
            spans.push(Span::styled(
                format!("· command +{} → ", self.state.hscroll),
                t.dim(),
            ));
        }
        match &self.state.prompt {
            Some(p) => spans.push(Span::styled(format!("filter: {p}█ "), t.key())),
            None if !v.filter.is_empty() => {
                spans.push(Span::styled(format!("filter \"{}\" ", v.filter), t.warn()))
            }
            None => {}
        }
        Line::from(spans)
    }

    /// Draw the table as one part of a screen.
    pub fn draw_on(&self, area: Rect, canvas: &mut dyn Canvas) {
        let t = self.theme;
        let border = if self.focused {
            t.border_selected()
        } else {
            t.border()
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(border)
            .title(self.title());
        if self.rows.is_empty() {
            let filter = self.state.effective_view().filter;
            let msg = if filter.trim().is_empty() {
                "no processes on this GPU".to_string()
            } else {
                format!("no process matches \"{}\"", filter.trim())
            };
            let p = Paragraph::new(Line::styled(msg, t.dim())).block(block);
            canvas.part("processes", area, key_of(&p), &mut |buf| {
                (&p).render(area, buf)
            });
            return;
        }
        let inner_w = area.width.saturating_sub(2);
        let with_jobs = self.rows.iter().any(|r| r.job.is_some());
        let cols = columns(self.state.all_gpus, with_jobs, inner_w);
        let command_w = usize::from(
            inner_w.saturating_sub(cols.iter().rev().skip(1).map(|c| c.width + 1).sum()),
        );
        let sort = self.state.view.sort;
        let header = Row::new(cols.iter().map(|c| {
            if c.content == Content::Sorted(sort) {
                Cell::from(Span::styled(c.title, t.title()))
            } else {
                Cell::from(c.title)
            }
        }))
        .style(t.dim());
        let shown = commands(self.rows);
        let rows = self.rows.iter().zip(&shown).map(|(r, cmd)| {
            let style = if r.depth > 0 || !r.resolved {
                t.dim()
            } else {
                t.text()
            };
            let command = if self.state.hscroll > 0 {
                format::window_of(cmd, self.state.hscroll, command_w)
            } else {
                format::shorten_middle(cmd, command_w)
            };
            Row::new(cols.iter().map(|c| match c.content {
                Content::Sorted(SortKey::Command) => Cell::from(command.clone()),
                _ => Cell::from(cell(r, c)),
            }))
            .style(style)
        });
        let widths = cols.iter().map(|c| match c.content {
            Content::Sorted(SortKey::Command) => Constraint::Min(c.width),
            _ => Constraint::Length(c.width),
        });
        let table = Table::new(rows, widths)
            .header(header)
            .block(block)
            .row_highlight_style(t.selected());
        let mut state = TableState::default().with_offset(self.first);
        if self.focused {
            state.select(self.state.selected_index(self.rows));
        }
        canvas.part("processes", area, key_of(&(&table, state)), &mut |buf| {
            let mut state = state;
            StatefulWidget::render(&table, area, buf, &mut state);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_tables_drop_the_least_needed_columns_first() {
        let titles =
            |all, w| -> Vec<&str> { columns(all, false, w).iter().map(|c| c.title).collect() };
        assert_eq!(
            titles(false, 118),
            [
                "PID", "USER", "S", "GPU MEM", "UTIL%", "MEMBUSY%", "CPU%", "RSS", "TIME",
                "COMMAND"
            ]
        );
        assert_eq!(
            titles(false, 78),
            ["PID", "USER", "S", "GPU MEM", "UTIL%", "CPU%", "TIME", "COMMAND"]
        );
        assert_eq!(
            titles(true, 56),
            ["GPU", "PID", "S", "GPU MEM", "UTIL%", "COMMAND"]
        );
        // On a shared node the job outranks the user, the times and the rates.
        let with_jobs: Vec<&str> = columns(false, true, 78).iter().map(|c| c.title).collect();
        assert_eq!(
            with_jobs,
            ["PID", "S", "GPU MEM", "UTIL%", "JOB", "COMMAND"]
        );
    }

    fn row(depth: usize, command: &str) -> ProcessRow {
        ProcessRow {
            gpu: 0,
            depth,
            pid: 7,
            signal_target: None,
            user: None,
            gpu_memory_bytes: None,
            sm_util: None,
            mem_util: None,
            cpu_percent: Some(99.0),
            rss_bytes: None,
            running_s: None,
            state: Some('D'),
            command: command.into(),
            resolved: true,
            job: None,
        }
    }

    #[test]
    fn children_show_what_differs_from_their_parent() {
        let rows = [
            row(0, "python train.py --epochs 90"),
            row(1, "python train.py --epochs 90"),
            row(1, "python train.py --worker 3"),
            row(2, "pt_data_worker"),
            row(0, ""),
        ];
        assert_eq!(
            commands(&rows),
            [
                "python train.py --epochs 90",
                "└ ″ (same command)",
                "└ …--worker 3",
                "  └ pt_data_worker",
                ABSENT,
            ]
        );
    }
}
