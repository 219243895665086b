//! The processes on one GPU.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table, Widget};

use crate::engine::GpuSnapshot;
use crate::model::GpuProcess;
use crate::tui::format::{self, ABSENT};
use crate::tui::theme::Theme;

/// What an unresolved field shows (the PID is not visible from this host, e.g. a container).
const UNRESOLVED: &str = "?";

pub struct ProcessTable<'a> {
    pub gpu: &'a GpuSnapshot,
    pub theme: Theme,
}

fn text(v: &Option<String>, p: &GpuProcess) -> String {
    match v {
        Some(s) => s.clone(),
        None if !p.resolved => UNRESOLVED.to_string(),
        None => ABSENT.to_string(),
    }
}

impl Widget for &ProcessTable<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let g = self.gpu;
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(t.border())
            .title(Line::styled(
                format!(" Processes · GPU {} ", g.info.index),
                t.title(),
            ));
        if g.processes.is_empty() {
            Paragraph::new(Line::styled("no processes on this GPU", t.dim()))
                .block(block)
                .render(area, buf);
            return;
        }
        let header = Row::new(["PID", "USER", "GPU MEM", "SM", "CPU", "COMMAND"]).style(t.dim());
        let rows = g.processes.iter().map(|p| {
            Row::new([
                Cell::from(p.pid.to_string()),
                Cell::from(text(&p.user, p)),
                Cell::from(format::bytes(p.gpu_memory_bytes)),
                Cell::from(format::pct(p.sm_util)),
                Cell::from(format::pct(p.cpu_percent)),
                Cell::from(text(&p.command, p)),
            ])
        });
        Table::new(
            rows,
            [
                Constraint::Length(8),
                Constraint::Length(10),
                Constraint::Length(10),
                Constraint::Length(5),
                Constraint::Length(5),
                Constraint::Min(10),
            ],
        )
        .header(header)
        .block(block)
        .render(area, buf);
    }
}
