//! The detector's word on a GPU in one line: its verdict in the style of its severity (the same
//! wherever a verdict is drawn), the share of time lost and the single most specific fix. Built
//! from the findings' structured fields (kind, severity, evidence), never from their prose.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::engine::{GpuSnapshot, Snapshot};
use crate::model::{Finding, FindingKind, UnixTime};

use super::cost::CostSoFar;
use super::format;
use super::theme::Theme;

/// The finding that matters most on a GPU: the highest severity, then the most time lost.
pub fn worst_finding(g: &GpuSnapshot) -> Option<&Finding> {
    worst_position(g).and_then(|i| g.findings.get(i))
}

/// The position of [`worst_finding`] among the GPU's findings.
pub fn worst_position(g: &GpuSnapshot) -> Option<usize> {
    (0..g.findings.len()).max_by(|&a, &b| rank(&g.findings[a]).total_cmp(&rank(&g.findings[b])))
}

/// Severity first, the share of time lost second.
fn rank(f: &Finding) -> f64 {
    f64::from(f.severity as u8) * 10.0 + f.evidence.lost_fraction.unwrap_or(0.0)
}

/// The style of a GPU's verdict: its worst finding's severity; healthy in the "ok" style; idle
/// and verdicts without a finding dim.
pub fn verdict_style(t: Theme, g: &GpuSnapshot) -> Style {
    match (worst_finding(g), g.verdict) {
        (Some(f), _) => t.severity(f.severity),
        (None, FindingKind::Healthy) => t.ok(),
        (None, _) => t.dim(),
    }
}

/// "61% lost", where the detector measured it.
pub fn lost_text(f: &Finding) -> Option<String> {
    f.evidence
        .lost_fraction
        .map(|l| format!("{:.0}% lost", l * 100.0))
}

/// The fix to show: the finding's own (host evidence), else the first clause of its advice.
pub fn fix_text(f: &Finding) -> String {
    match &f.evidence.fix {
        Some(fix) => fix.clone(),
        None => first_clause(&f.advice).to_string(),
    }
}

/// The advice's first clause: what follows a leading "what it is: " up to the first full stop
/// or semicolon outside parentheses ("checkpoint, eval or logging cadence: checkpoint
/// asynchronously or less often; not a DataLoader problem" → "checkpoint asynchronously or less
/// often").
pub fn first_clause(advice: &str) -> &str {
    let ends = |text: &str| -> Vec<(usize, char)> {
        let mut depth = 0i32;
        let bytes = text.as_bytes();
        text.char_indices()
            .filter(|&(i, c)| {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ => {}
                }
                depth <= 0
                    && matches!(c, '.' | ';' | ':')
                    && bytes.get(i + 1).is_none_or(|b| *b == b' ')
            })
            .collect()
    };
    let marks = ends(advice);
    let body = match marks.first() {
        Some(&(i, ':')) => &advice[i + 1..],
        _ => advice,
    };
    let cut = ends(body)
        .into_iter()
        .find(|&(_, c)| c != ':')
        .map_or(body.len(), |(i, _)| i);
    body[..cut].trim()
}

/// One finding in one line: `GPU 0 input starvation +1 · 61% lost → fix`, with the job it
/// belongs to where known (`GPU 0 pod train-7f9c/ml-team: input starvation …`); `others` more
/// findings on the GPU are counted after the kind.
pub fn finding_line(t: Theme, f: &Finding, others: usize) -> Line<'static> {
    finding_line_costed(t, f, others, None, usize::MAX)
}

/// [`finding_line`] with what the finding has cost so far after the share lost
/// (`· 4.2 GPU-min, $0.18`), for `width` columns: the cost's parts go (energy, money, then the
/// lost time) where the fix's lead would not fit beside them; the evidence after the lead is
/// what the panel cuts with `…`.
pub fn finding_line_costed(
    t: Theme,
    f: &Finding,
    others: usize,
    cost: Option<&CostSoFar>,
    width: usize,
) -> Line<'static> {
    let mut spans = vec![Span::styled(format!("GPU {} ", f.gpu), t.text())];
    if let Some(job) = &f.evidence.job {
        spans.push(Span::styled(format!("{job}: "), t.emphasis()));
    }
    spans.push(Span::styled(f.kind.title(), t.severity(f.severity)));
    if others > 0 {
        spans.push(Span::styled(format!(" +{others}"), t.dim()));
    }
    if let Some(lost) = lost_text(f) {
        spans.push(Span::styled(" · ", t.dim()));
        spans.push(Span::styled(lost, t.text()));
    }
    let fix = fix_text(f);
    if let Some(c) = cost {
        // " · " before the cost, " → " before the fix.
        const SEPARATORS: usize = 6;
        let used: usize = spans.iter().map(|s| s.content.chars().count()).sum();
        // The lead, and the `…` that cuts what follows it.
        let lead = fix_lead(&fix).chars().count() + usize::from(fix_lead(&fix).len() < fix.len());
        let room = width.saturating_sub(used + SEPARATORS + lead);
        let text = c.text(room);
        if text.chars().count() <= room {
            spans.push(Span::styled(" · ", t.dim()));
            spans.push(Span::styled(text, t.text()));
        }
    }
    spans.push(Span::styled(" → ", t.dim()));
    spans.push(Span::styled(fix, t.emphasis()));
    Line::from(spans)
}

/// The part of a fix that must stay readable: what to change, before its evidence
/// (`num_workers 4→8` of `num_workers 4→8: 4 workers at 99% CPU`), or before a first comma.
fn fix_lead(fix: &str) -> &str {
    fix.split([':', ',']).next().unwrap_or(fix).trim_end()
}

/// A finding that ended, greyed: when, after how long, and what it cost in GPU time.
pub fn ended_line(t: Theme, f: &Finding, now: UnixTime) -> Line<'static> {
    let end = f.end.unwrap_or(now);
    let lasted = (end - f.start).max(0.0);
    let mut text = format!(
        "GPU {} {} · ended {} ago after {}",
        f.gpu,
        f.kind.title(),
        format::minutes((now - end).max(0.0)),
        format::seconds(lasted)
    );
    if let Some(l) = f.evidence.lost_fraction {
        text.push_str(&format!(
            " · cost ~{} of GPU time",
            format::seconds(lasted * l)
        ));
    }
    Line::styled(text, t.dim())
}

/// Positions of the GPUs with findings, in the order their lines are shown: the worst first,
/// then the selected one, then the others by severity and time lost.
pub fn ranked_gpus(s: &Snapshot, selected: usize) -> Vec<usize> {
    let mut with: Vec<usize> = (0..s.gpus.len())
        .filter(|&i| !s.gpus[i].findings.is_empty())
        .collect();
    let score = |i: usize| worst_finding(&s.gpus[i]).map_or(0.0, rank);
    with.sort_by(|&a, &b| score(b).total_cmp(&score(a)).then(a.cmp(&b)));
    if let Some(pos) = with.iter().position(|&i| i == selected).filter(|&p| p > 1) {
        let sel = with.remove(pos);
        with.insert(1, sel);
    }
    with
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Evidence, Severity};

    fn finding(fix: Option<&str>, advice: &str) -> Finding {
        Finding {
            kind: FindingKind::InputStarvation,
            severity: Severity::High,
            gpu: 0,
            start: 100.0,
            end: None,
            detected_at: 108.0,
            evidence: Evidence {
                lost_fraction: Some(0.613),
                fix: fix.map(str::to_string),
                ..Default::default()
            },
            summary: String::new(),
            advice: advice.to_string(),
        }
    }

    fn text(l: &Line) -> String {
        l.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn the_line_leads_with_verdict_lost_share_and_fix() {
        let f = finding(
            Some("num_workers 4→8: 4 workers at 100% CPU, 11 cores idle"),
            "more DataLoader workers (num_workers), pin_memory=True",
        );
        assert_eq!(
            text(&finding_line(Theme::colored(), &f, 0)),
            "GPU 0 input starvation · 61% lost → num_workers 4→8: 4 workers at 100% CPU, 11 cores idle"
        );
        // Without a fix, the advice's first clause.
        let f = finding(None, "input waits: more DataLoader workers, prefetch; or x");
        assert_eq!(
            text(&finding_line(Theme::colored(), &f, 1)),
            "GPU 0 input starvation +1 · 61% lost → more DataLoader workers, prefetch"
        );
    }

    #[test]
    fn the_cost_so_far_goes_before_the_fix_and_gives_way_to_its_lead() {
        let f = finding(
            Some("num_workers 4→8: 4 workers at 99% CPU, 11 cores idle"),
            "",
        );
        let cost = CostSoFar {
            lost: "4.2 GPU-min".into(),
            energy: Some("56 Wh".into()),
            money: Some("$0.18".into()),
        };
        let line = |w: usize| {
            text(&finding_line_costed(
                Theme::colored(),
                &f,
                0,
                Some(&cost),
                w,
            ))
        };
        assert_eq!(
            line(usize::MAX),
            "GPU 0 input starvation · 61% lost · 4.2 GPU-min, 56 Wh, $0.18 → num_workers 4→8: 4 workers at 99% CPU, 11 cores idle"
        );
        // 78 columns: the energy goes; the fix's lead still fits.
        let l = line(78);
        assert!(
            l.starts_with(
                "GPU 0 input starvation · 61% lost · 4.2 GPU-min, $0.18 → num_workers 4→8"
            ),
            "{l}"
        );
        // Room for the lost time only, the lead and the `…` after it.
        let cut = format::fit_line(
            finding_line_costed(Theme::colored(), &f, 0, Some(&cost), 66),
            66,
        );
        assert_eq!(
            text(&cut),
            "GPU 0 input starvation · 61% lost · 4.2 GPU-min → num_workers 4→8…"
        );
        // Too narrow for any cost beside the lead: the line is as before.
        assert_eq!(
            text(&format::fit_line(
                finding_line_costed(Theme::colored(), &f, 0, Some(&cost), 50),
                50
            )),
            text(&format::fit_line(finding_line(Theme::colored(), &f, 0), 50))
        );
    }

    #[test]
    fn the_line_names_the_job_the_finding_belongs_to() {
        let mut f = finding(Some("num_workers 4→8"), "");
        f.evidence.job = Some("pod train-7f9c/ml-team".into());
        assert_eq!(
            text(&finding_line(Theme::colored(), &f, 0)),
            "GPU 0 pod train-7f9c/ml-team: input starvation · 61% lost → num_workers 4→8"
        );
    }

    #[test]
    fn first_clauses() {
        assert_eq!(first_clause("Storage is slow: move it. Then x"), "move it");
        assert_eq!(
            first_clause("cadence: checkpoint less often; not a DataLoader problem"),
            "checkpoint less often"
        );
        assert_eq!(
            first_clause("more workers (num_workers; or threads), pin_memory=True"),
            "more workers (num_workers; or threads), pin_memory=True"
        );
        assert_eq!(first_clause("raise num_workers."), "raise num_workers");
        assert_eq!(first_clause("use 1.5x more"), "use 1.5x more");
        assert_eq!(first_clause(""), "");
    }

    #[test]
    fn ended_findings_say_when_how_long_and_what_they_cost() {
        let mut f = finding(None, "");
        f.end = Some(220.0);
        let l = ended_line(Theme::colored(), &f, 400.0);
        assert_eq!(
            text(&l),
            "GPU 0 input starvation · ended 3 min ago after 2 min · cost ~74 s of GPU time"
        );
    }
}
