//! The diagnosis panel: one line per GPU with a finding (verdict, share of time lost, what it
//! has cost so far, the fix), then what was seen and what to do for the selected GPU's finding,
//! then findings that ended. Every line is cut with `…` at the panel's width; when rows are
//! short, the lines at the end go first, so the worst GPU's fix is the last to go.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Widget};

use crate::engine::Snapshot;
use crate::ledger::Prices;
use crate::model::{Finding, UnixTime};
use crate::tui::canvas::{key_of, Canvas};
use crate::tui::cost::CostSoFar;
use crate::tui::diagnosis::{self, ranked_gpus, worst_finding};
use crate::tui::format;
use crate::tui::theme::Theme;

pub struct DiagnosisPanel<'a> {
    pub snapshot: &'a Snapshot,
    pub theme: Theme,
    /// Position of the selected GPU: its finding's details are shown.
    pub selected: usize,
    /// Whether the GPU list is on screen (it shows every verdict: GPUs without a finding need no
    /// line here).
    pub list_shown: bool,
    pub now: UnixTime,
    /// What GPU time and energy cost (the cost so far shows money only when one is set).
    pub prices: &'a Prices,
}

/// Lines of advice shown at most.
const ADVICE_LINES: usize = 3;
/// Ended findings shown at most.
const ENDED_LINES: usize = 4;

impl DiagnosisPanel<'_> {
    /// Every line the panel would show with room enough, most important first, for an inner
    /// width of `width` columns.
    pub fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let t = self.theme;
        let s = self.snapshot;
        let w = usize::from(width);
        let ranked = ranked_gpus(s, self.selected);
        let mut lines: Vec<Line<'static>> = ranked
            .iter()
            .filter_map(|&i| {
                let g = &s.gpus[i];
                let f = worst_finding(g)?;
                let cost = CostSoFar::of(&g.ledger, f.kind, self.prices);
                let others = g.findings.len() - 1;
                Some(diagnosis::finding_line_costed(
                    t,
                    f,
                    others,
                    cost.as_ref(),
                    w,
                ))
            })
            .collect();
        lines.extend(self.quiet_lines());
        let focus = s
            .gpus
            .get(self.selected)
            .and_then(worst_finding)
            .or_else(|| ranked.first().and_then(|&i| worst_finding(&s.gpus[i])));
        if let Some(f) = focus {
            lines.extend(self.detail_lines(f, w));
        }
        for &i in &ranked {
            let g = &s.gpus[i];
            let top = diagnosis::worst_position(g);
            for (_, f) in g
                .findings
                .iter()
                .enumerate()
                .filter(|(j, _)| Some(*j) != top)
            {
                lines.push(diagnosis::finding_line(t, f, 0));
            }
        }
        lines.extend(
            s.recent_findings
                .iter()
                .rev()
                .take(ENDED_LINES)
                .map(|f| diagnosis::ended_line(t, f, self.now)),
        );
        lines.into_iter().map(|l| format::fit_line(l, w)).collect()
    }

    /// GPUs without a finding: the stalls the detector watches before it names anything, and,
    /// without the GPU list, each GPU's verdict.
    fn quiet_lines(&self) -> Vec<Line<'static>> {
        let t = self.theme;
        let s = self.snapshot;
        let mut lines = Vec::new();
        for g in s.gpus.iter().filter(|g| g.findings.is_empty()) {
            let mut spans = vec![
                Span::styled(format!("GPU {} ", g.info.index), t.text()),
                Span::styled(g.verdict.title(), diagnosis::verdict_style(t, g)),
            ];
            match g.watch {
                // Not a finding: what the detector sees before it names anything.
                Some(w) => {
                    spans.push(Span::styled(", watching ", t.dim()));
                    spans.push(Span::styled(w.text(), t.dim()));
                }
                None if self.list_shown => continue,
                None => spans.push(Span::styled(" · no finding", t.dim())),
            }
            lines.push(Line::from(spans));
        }
        if lines.is_empty() && s.gpus.iter().all(|g| g.findings.is_empty()) {
            lines.push(Line::styled("no active findings", t.dim()));
        }
        lines
    }

    /// What was seen, since when, and the advice in full (wrapped), for one finding.
    fn detail_lines(&self, f: &Finding, width: usize) -> Vec<Line<'static>> {
        let t = self.theme;
        let mut lines = vec![
            Line::from(vec![
                Span::styled(format!("  GPU {} ", f.gpu), t.dim()),
                Span::raw(f.summary.clone()),
            ]),
            Line::styled(
                format!(
                    "  {} severity · since {} UTC ({} ago)",
                    f.severity.as_str(),
                    format::clock(f.start),
                    format::minutes((self.now - f.start).max(0.0))
                ),
                t.dim(),
            ),
        ];
        let wrapped = format::wrap(&f.advice, width.saturating_sub(4).max(8));
        let cut = wrapped.len() > ADVICE_LINES;
        for (i, text) in wrapped.into_iter().take(ADVICE_LINES).enumerate() {
            let lead = if i == 0 { "  → " } else { "    " };
            let text = if cut && i + 1 == ADVICE_LINES {
                format!("{text}…")
            } else {
                text
            };
            lines.push(Line::from(vec![
                Span::styled(lead, t.dim()),
                Span::raw(text),
            ]));
        }
        lines
    }

    /// Draw the first of `lines` ([`DiagnosisPanel::lines`] at this area's inner width) that
    /// fit, as one part of a screen.
    pub fn draw_on(&self, area: Rect, mut lines: Vec<Line<'static>>, canvas: &mut dyn Canvas) {
        let t = self.theme;
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(t.border())
            .title(Line::styled(" Diagnosis ", t.title()));
        let inner = block.inner(area);
        lines.truncate(usize::from(inner.height));
        canvas.part("diagnosis", area, key_of(&(&lines, area)), &mut |buf| {
            (&block).render(area, buf);
            for (line, y) in lines.iter().zip(inner.top()..inner.bottom()) {
                buf.set_line(inner.x, y, line, inner.width);
            }
        });
    }
}
