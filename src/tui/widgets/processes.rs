//! The process table: the GPU processes of the selected GPU (or of all GPUs), sorted, filtered,
//! optionally with each one's children (DataLoader workers) under it.

use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Block, Borders, Cell, Paragraph, Row, StatefulWidget, Table, TableState, Widget,
};

use crate::host::{format_running, state_name, ProcessRow, SortKey};
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
    pub theme: Theme,
}

/// A column and the width it needs; columns with the lowest `keep` go first when narrow.
struct Column {
    key: Option<SortKey>,
    title: &'static str,
    width: u16,
    keep: u8,
}

const COMMAND_MIN: u16 = 24;

fn columns(all_gpus: bool, width: u16) -> Vec<Column> {
    let col = |key: Option<SortKey>, title, width, keep| Column {
        key,
        title,
        width,
        keep,
    };
    let mut cols = vec![
        col(None, "GPU", 3, 7),
        col(Some(SortKey::Pid), "PID", 7, 9),
        col(Some(SortKey::User), "USER", 8, 5),
        col(Some(SortKey::GpuMemory), "GPU MEM", 9, 8),
        col(Some(SortKey::SmUtil), "SM%", 5, 6),
        col(Some(SortKey::MemUtil), "MEMBW%", 6, 1),
        col(Some(SortKey::Cpu), "CPU%", 6, 4),
        col(Some(SortKey::Rss), "RSS", 9, 2),
        col(Some(SortKey::Running), "TIME", 6, 3),
    ];
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
    cols.push(col(Some(SortKey::Command), "COMMAND", COMMAND_MIN, 10));
    cols
}

fn opt(v: Option<String>) -> String {
    v.unwrap_or_else(|| ABSENT.to_string())
}

fn cell(row: &ProcessRow, c: &Column) -> String {
    match c.key {
        None => row.gpu.to_string(),
        Some(SortKey::Pid) => row.pid.to_string(),
        Some(SortKey::User) => opt(row.user.clone()),
        Some(SortKey::GpuMemory) => format::bytes(row.gpu_memory_bytes),
        Some(SortKey::SmUtil) => format::pct(row.sm_util),
        Some(SortKey::MemUtil) => format::pct(row.mem_util),
        Some(SortKey::Cpu) => format::pct(row.cpu_percent),
        Some(SortKey::Rss) => format::bytes(row.rss_bytes),
        Some(SortKey::Running) => opt(row.running_s.map(format_running)),
        Some(SortKey::Command) => command(row),
    }
}

/// The command, indented under its GPU process in tree mode, with the state of a child.
fn command(row: &ProcessRow) -> String {
    let cmd = if row.command.is_empty() {
        ABSENT
    } else {
        &row.command
    };
    if row.depth == 0 {
        return cmd.to_string();
    }
    let indent = "  ".repeat(row.depth - 1);
    match row.state {
        Some(s) => format!("{indent}└ [{}] {cmd}", state_name(s)),
        None => format!("{indent}└ {cmd}"),
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
        match &self.state.prompt {
            Some(p) => spans.push(Span::styled(format!("filter: {p}█ "), t.key())),
            None if !v.filter.is_empty() => {
                spans.push(Span::styled(format!("filter \"{}\" ", v.filter), t.warn()))
            }
            None => {}
        }
        Line::from(spans)
    }
}

impl ProcessTable<'_> {
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
        let cols = columns(self.state.all_gpus, area.width.saturating_sub(2));
        let sort = self.state.view.sort;
        let header = Row::new(cols.iter().map(|c| {
            if c.key == Some(sort) {
                Cell::from(Span::styled(c.title, t.title()))
            } else {
                Cell::from(c.title)
            }
        }))
        .style(t.dim());
        let rows = self.rows.iter().map(|r| {
            let style = if r.depth > 0 || !r.resolved {
                t.dim()
            } else {
                t.text()
            };
            Row::new(cols.iter().map(|c| Cell::from(cell(r, c)))).style(style)
        });
        let widths = cols.iter().map(|c| match c.key {
            Some(SortKey::Command) => Constraint::Min(c.width),
            _ => Constraint::Length(c.width),
        });
        let table = Table::new(rows, widths)
            .header(header)
            .block(block)
            .row_highlight_style(t.selected());
        let mut state = TableState::default();
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
        let titles = |all, w| -> Vec<&str> { columns(all, w).iter().map(|c| c.title).collect() };
        assert_eq!(
            titles(false, 118),
            ["PID", "USER", "GPU MEM", "SM%", "MEMBW%", "CPU%", "RSS", "TIME", "COMMAND"]
        );
        assert_eq!(
            titles(false, 78),
            ["PID", "USER", "GPU MEM", "SM%", "CPU%", "TIME", "COMMAND"]
        );
        assert_eq!(
            titles(true, 56),
            ["GPU", "PID", "GPU MEM", "SM%", "COMMAND"]
        );
    }

    #[test]
    fn children_are_indented_with_their_state() {
        let mut row = ProcessRow {
            gpu: 0,
            depth: 2,
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
            command: "pt_data_worker".into(),
            resolved: true,
        };
        assert_eq!(command(&row), "  └ [disk wait] pt_data_worker");
        row.depth = 0;
        row.command.clear();
        assert_eq!(command(&row), ABSENT);
    }
}
