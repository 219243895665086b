//! What `analyze` reports of a file: per GPU its verdict, verdict timeline, findings and
//! statistics, and the accounting of time over findings.

use serde::Serialize;

use crate::detector::priority;
use crate::ledger::{LedgerReport, Prices};
use crate::model::{Finding, FindingKind, Severity, UnixTime};
use crate::timeline::VerdictSegment;

/// Utilization statistics of one GPU over the file.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GpuStats {
    /// Utilization readings counted (driver windows, or polled readings).
    pub samples: u64,
    pub util_mean: Option<f64>,
    pub util_p5: Option<f64>,
    pub util_p95: Option<f64>,
    /// Share of readings below the idle threshold.
    pub idle_fraction: Option<f64>,
    /// Seconds covered by the file.
    pub span_s: f64,
    /// Seconds lost to the findings that measure it (lost fraction × duration).
    pub time_lost_s: f64,
}

/// One GPU's part of the report.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GpuReport {
    pub index: u32,
    pub name: String,
    pub verdict: FindingKind,
    /// The verdict the live detector showed at each moment: contiguous segments from the file's
    /// first sample to its last.
    pub timeline: Vec<VerdictSegment>,
    /// Every finding, in order of start; `end` is null for one still going at the end of the file.
    pub findings: Vec<Finding>,
    /// What the file cannot show of this GPU, and why (readings it lacks).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<String>,
    pub stats: GpuStats,
    /// Where the GPU's time and energy went, as the live ledger books it.
    pub ledger: LedgerReport,
}

/// What `analyze` found in one file.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Report {
    pub file: String,
    /// The reader used ("nvidia-smi-csv", ...).
    pub source: String,
    pub start: Option<UnixTime>,
    pub end: Option<UnixTime>,
    /// Samples (ticks) read.
    pub samples: u64,
    pub gpus: Vec<GpuReport>,
    /// What the reader took to be so without the file saying it (the interval of a log without
    /// clock times).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub assumptions: Vec<String>,
    pub warnings: Vec<String>,
}

impl Report {
    /// Put the cost at `prices` in every GPU's ledger (none when no price is configured).
    pub fn price(&mut self, prices: &Prices) {
        for g in &mut self.gpus {
            g.ledger.price(prices);
        }
    }
}

/// A finding's span: from its start to its end, or to `last` while it goes on.
pub fn span_of(f: &Finding, last: UnixTime) -> (f64, f64) {
    (f.start, f.end.unwrap_or(last).max(f.start))
}

/// Seconds lost to the findings that measure it: at each moment, the largest lost fraction of
/// the findings covering it. Findings overlap (one raised again after it ended begins where the
/// first began; starvation and a throttle at once), and their time is lost once.
pub fn time_lost(findings: &[Finding], last: UnixTime) -> f64 {
    let mut spans: Vec<(f64, f64, f64)> = findings
        .iter()
        .filter_map(|f| {
            let (a, b) = span_of(f, last);
            Some((a, b, f.evidence.lost_fraction?.max(0.0)))
        })
        .collect();
    spans.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut cuts: Vec<f64> = spans.iter().flat_map(|s| [s.0, s.1]).collect();
    cuts.sort_by(f64::total_cmp);
    cuts.dedup();
    // The spans begun, largest lost fraction first (non-negative floats order as their bits).
    let mut open = std::collections::BinaryHeap::new();
    let mut next = 0;
    let mut lost = 0.0;
    for w in cuts.windows(2) {
        let (a, b) = (w[0], w[1]);
        while let Some(s) = spans.get(next).filter(|s| s.0 <= a) {
            open.push((s.2.to_bits(), s.1.to_bits()));
            next += 1;
        }
        while open.peek().is_some_and(|top| f64::from_bits(top.1) <= a) {
            open.pop();
        }
        if let Some(top) = open.peek() {
            lost += f64::from_bits(top.0) * (b - a);
        }
    }
    lost
}

/// The length of the union of `spans`.
pub fn covered(mut spans: Vec<(f64, f64)>) -> f64 {
    spans.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut total = 0.0;
    let mut cur: Option<(f64, f64)> = None;
    for (a, b) in spans {
        match cur {
            Some((ca, cb)) if a <= cb => cur = Some((ca, cb.max(b))),
            _ => {
                total += cur.map_or(0.0, |(ca, cb)| cb - ca);
                cur = Some((a, b));
            }
        }
    }
    total + cur.map_or(0.0, |(ca, cb)| cb - ca)
}

/// The file's verdict over `(first, last)`: the kind of warn or high finding covering most of
/// it; with none, `tensor_cores_idle` when that information finding covers at least half of it
/// (a busy job slower than it could be), else healthy if busy, else idle.
pub fn verdict_over(
    findings: &[Finding],
    (first, last): (UnixTime, UnixTime),
    busy: bool,
) -> FindingKind {
    let mut spans: Vec<(FindingKind, Vec<(f64, f64)>)> = Vec::new();
    for f in findings.iter().filter(|f| f.severity >= Severity::Warn) {
        let span = span_of(f, last);
        match spans.iter_mut().find(|c| c.0 == f.kind) {
            Some(c) => c.1.push(span),
            None => spans.push((f.kind, vec![span])),
        }
    }
    let named = spans
        .into_iter()
        .map(|(kind, s)| (kind, covered(s)))
        .max_by(|a, b| {
            a.1.total_cmp(&b.1)
                .then_with(|| priority(b.0).cmp(&priority(a.0)))
        })
        .map(|c| c.0);
    if let Some(kind) = named {
        return kind;
    }
    let tensor_idle = covered(
        findings
            .iter()
            .filter(|f| f.kind == FindingKind::TensorCoresIdle)
            .map(|f| span_of(f, last))
            .collect(),
    );
    if busy && tensor_idle >= 0.5 * (last - first) && tensor_idle > 0.0 {
        FindingKind::TensorCoresIdle
    } else if busy {
        FindingKind::Healthy
    } else {
        FindingKind::Idle
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Evidence;

    fn finding(kind: FindingKind, start: f64, end: Option<f64>, lost: Option<f64>) -> Finding {
        Finding {
            kind,
            severity: Severity::High,
            gpu: 0,
            start,
            end,
            detected_at: start,
            evidence: Evidence {
                lost_fraction: lost,
                ..Default::default()
            },
            summary: String::new(),
            advice: String::new(),
        }
    }

    #[test]
    fn overlapping_findings_lose_their_time_once_at_the_largest_share() {
        let erratic = FindingKind::ErraticStalls;
        // Raised again from the same start after it ended: 0..20 at 0.3, then 0..90 at 0.3.
        let again = [
            finding(erratic, 0.0, Some(20.0), Some(0.3)),
            finding(erratic, 0.0, None, Some(0.3)),
        ];
        assert!((time_lost(&again, 90.0) - 27.0).abs() < 1e-9);
        // A larger share over part of it wins there: 10..30 at 0.7, the rest at 0.3.
        let mut mixed = again.to_vec();
        mixed.push(finding(
            FindingKind::InputStarvation,
            10.0,
            Some(30.0),
            Some(0.7),
        ));
        let want = 0.3 * 10.0 + 0.7 * 20.0 + 0.3 * 60.0;
        assert!((time_lost(&mixed, 90.0) - want).abs() < 1e-9);
        // Apart, they add up; a finding without a share adds nothing.
        let apart = [
            finding(erratic, 0.0, Some(10.0), Some(0.5)),
            finding(erratic, 20.0, Some(30.0), Some(0.2)),
            finding(FindingKind::Throttled, 0.0, Some(30.0), None),
        ];
        assert!((time_lost(&apart, 30.0) - 7.0).abs() < 1e-9);
        assert_eq!(time_lost(&[], 30.0), 0.0);
    }

    #[test]
    fn a_verdict_counts_overlapping_findings_of_a_kind_once() {
        // Erratic stalls raised twice over the same 0..40 s against 30 s of periodic stalls:
        // summed, erratic's 70 s would win; covered, 40 s against 30 s still does, and against
        // 50 s it loses.
        let mut f = vec![
            finding(FindingKind::ErraticStalls, 0.0, Some(30.0), Some(0.3)),
            finding(FindingKind::ErraticStalls, 0.0, Some(40.0), Some(0.3)),
            finding(FindingKind::PeriodicStall, 40.0, Some(70.0), Some(0.1)),
        ];
        assert_eq!(
            verdict_over(&f, (0.0, 100.0), true),
            FindingKind::ErraticStalls
        );
        f[2].end = Some(90.0);
        assert_eq!(
            verdict_over(&f, (0.0, 100.0), true),
            FindingKind::PeriodicStall
        );
        assert_eq!(covered(vec![(0.0, 1.0), (0.5, 2.0), (3.0, 4.0)]), 3.0);
    }

    #[test]
    fn idle_tensor_cores_over_most_of_a_busy_file_are_its_verdict_unless_worse_is_found() {
        let mut tensor = finding(FindingKind::TensorCoresIdle, 10.0, Some(70.0), None);
        tensor.severity = Severity::Info;
        let span = (0.0, 100.0);
        assert_eq!(
            verdict_over(&[tensor.clone()], span, true),
            FindingKind::TensorCoresIdle
        );
        // Under half of the file: healthy.
        tensor.end = Some(40.0);
        assert_eq!(
            verdict_over(&[tensor.clone()], span, true),
            FindingKind::Healthy
        );
        // A starving fp32 job: starvation first, tensor cores idle among its findings.
        tensor.end = None;
        let starving = finding(FindingKind::InputStarvation, 20.0, Some(30.0), Some(0.5));
        assert_eq!(
            verdict_over(&[tensor, starving], span, true),
            FindingKind::InputStarvation
        );
    }
}
