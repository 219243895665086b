//! The detector's word on each GPU: its verdict, and each active finding with what to do.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget, Wrap};

use crate::engine::Snapshot;
use crate::model::FindingKind;
use crate::tui::canvas::{key_of, Canvas};
use crate::tui::theme::Theme;

pub struct DetectorPanel<'a> {
    pub snapshot: &'a Snapshot,
    pub theme: Theme,
    /// Position of the selected GPU: its findings come first.
    pub selected: usize,
}

impl DetectorPanel<'_> {
    /// Draw the panel as one part of a screen.
    pub fn draw_on(&self, area: Rect, canvas: &mut dyn Canvas) {
        let t = self.theme;
        let s = self.snapshot;
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(t.border())
            .title(Line::styled(" Detector ", t.title()));
        let mut lines: Vec<Line> = Vec::new();
        // Verdicts of every GPU on one wrapped line.
        let mut verdicts = vec![Span::styled("verdict ", t.dim())];
        for (i, g) in s.gpus.iter().enumerate() {
            if i > 0 {
                verdicts.push(Span::styled(" · ", t.dim()));
            }
            let style = match g.verdict {
                FindingKind::Healthy => t.ok(),
                FindingKind::Idle => t.dim(),
                _ => g
                    .findings
                    .iter()
                    .map(|f| f.severity)
                    .max()
                    .map_or(t.warn(), |sev| t.severity(sev)),
            };
            verdicts.push(Span::raw(format!("{} ", g.info.index)));
            verdicts.push(Span::styled(g.verdict.title(), style));
        }
        lines.push(Line::from(verdicts));
        let order = s.gpus.get(self.selected).into_iter().chain(
            s.gpus
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != self.selected)
                .map(|(_, g)| g),
        );
        let mut any = false;
        let mut watching = false;
        for g in order {
            if let (true, Some(w)) = (g.findings.is_empty(), g.watch) {
                // Not a finding: what the detector sees before it names anything.
                watching = true;
                lines.push(Line::from(vec![
                    Span::styled(format!("GPU {} ", g.info.index), t.text()),
                    Span::styled("watching ", t.dim()),
                    Span::styled(w.text(), t.dim()),
                ]));
            }
            for f in &g.findings {
                any = true;
                lines.push(Line::from(vec![
                    Span::styled(format!("GPU {} ", f.gpu), t.text()),
                    Span::styled(f.kind.title(), t.severity(f.severity)),
                    Span::styled(format!(" ({}) ", f.severity.as_str()), t.dim()),
                    Span::raw(f.summary.clone()),
                ]));
                lines.push(Line::from(vec![
                    Span::styled("  → ", t.dim()),
                    Span::raw(f.advice.clone()),
                ]));
            }
        }
        if !any && !watching {
            lines.push(Line::styled("no active findings", t.dim()));
        }
        let p = Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false });
        canvas.part("detector", area, key_of(&p), &mut |buf| {
            (&p).render(area, buf)
        });
    }
}
