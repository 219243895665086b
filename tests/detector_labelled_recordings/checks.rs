//! The checks of one labelled job from one input, a row each: every field of the label that
//! bounds what the detector may find (`tests/data/README.md`).

use crate::support::api::{Finding, FindingKind, Report};
use crate::support::detector::STARVING;
use crate::support::labels::{Folder, Input, Label};

/// One check of one job from one input.
pub struct Row {
    job: String,
    input: &'static str,
    /// The label field checked.
    check: &'static str,
    expected: String,
    found: String,
    /// Seconds from the job's onset (else start) to the finding that names it (see
    /// `first_named`).
    after: Option<f64>,
    pub ok: bool,
}

impl Row {
    pub fn new(
        folder: &Folder,
        input: &'static str,
        check: &'static str,
        expected: String,
        found: String,
        after: Option<f64>,
        ok: bool,
    ) -> Row {
        Row {
            job: folder.name.clone(),
            input,
            check,
            expected,
            found,
            after,
            ok,
        }
    }

    pub fn error(&self) -> String {
        format!(
            "{} ({}): {}: expected {}, found {}",
            self.job, self.input, self.check, self.expected, self.found
        )
    }

    pub fn table(rows: &[Row]) -> String {
        let mut out = vec![
            "| job | input | check | expected | found | detected after s | |".to_string(),
            "|---|---|---|---|---|---|---|".to_string(),
        ];
        out.extend(rows.iter().map(|r| {
            format!(
                "| {} | {} | {} | {} | {} | {} | {} |",
                r.job,
                r.input,
                r.check,
                r.expected,
                r.found,
                r.after.map_or("-".to_string(), |a| format!("{a:.1}")),
                if r.ok { "ok" } else { "FAIL" }
            )
        }));
        out.join("\n")
    }
}

/// What one input of one job gave, and the rows of its checks.
struct Checks<'a> {
    folder: &'a Folder,
    label: &'a Label,
    input: Input,
    report: &'a Report,
    /// The job's true period: its own count, or the burst spacing in its readings.
    truth: Option<f64>,
    /// Seconds from the onset (else start) to the first stall finding.
    after: Option<f64>,
    rows: Vec<Row>,
}

impl<'a> Checks<'a> {
    fn row(&mut self, check: &'static str, expected: String, found: String, ok: bool) {
        let row = Row::new(
            self.folder,
            self.input.name(),
            check,
            expected,
            found,
            self.after,
            ok,
        );
        self.rows.push(row);
    }

    fn findings(&self) -> &'a [Finding] {
        &self.report.gpus[0].findings
    }

    /// The first input-starvation finding: the one whose period and end are checked.
    fn starvation(&self) -> Option<&'a Finding> {
        self.findings()
            .iter()
            .find(|f| f.kind == FindingKind::InputStarvation)
    }

    fn stalls(&self) -> Vec<&'a Finding> {
        self.findings()
            .iter()
            .filter(|f| STARVING.contains(&f.kind))
            .collect()
    }
}

/// Every check of `label` on what `input` of its job gave.
pub fn check_input(
    folder: &Folder,
    label: &Label,
    input: Input,
    report: &Report,
    truth: Option<f64>,
) -> Vec<Row> {
    let after = first_named(label, report).map(|f| f.detected_at - label.begin());
    let mut c = Checks {
        folder,
        label,
        input,
        report,
        truth,
        after,
        rows: Vec::new(),
    };
    readings(&mut c);
    verdict(&mut c);
    findings_allowed(&mut c);
    named_in_time(&mut c);
    verdict_in_time(&mut c);
    period(&mut c);
    cleared(&mut c);
    counted(&mut c);
    lost_fraction(&mut c);
    c.rows
}

/// The finding that names the job: its first stall finding where the label is a stall kind,
/// else its first finding of the label's verdict.
fn first_named<'a>(label: &Label, report: &'a Report) -> Option<&'a Finding> {
    let kinds: Vec<FindingKind> = match label.verdict {
        Some(v) if STARVING.contains(&v) => STARVING.to_vec(),
        Some(v) => vec![v],
        None => Vec::new(),
    };
    report.gpus[0]
        .findings
        .iter()
        .find(|f| kinds.contains(&f.kind))
}

/// The label's verdict is raised within `verdict_within_s` of the onset (else start), from each
/// input the label bounds.
fn verdict_in_time(c: &mut Checks) {
    let bound = c.label.verdict_within_s.as_ref();
    let Some(limit) = bound.and_then(|b| b.of(c.input)) else {
        return;
    };
    let ok = c.after.is_some_and(|a| a <= limit);
    c.row(
        "verdict_within_s",
        format!("<= {limit:.1}"),
        fmt(c.after, 1),
        ok,
    );
}

/// The finding that names the job measures the share of time lost within
/// `lost_fraction_between` (the job's own count of its waiting, with the sampling's margin).
fn lost_fraction(c: &mut Checks) {
    let Some([lo, hi]) = c.label.lost_fraction_between else {
        return;
    };
    let lost = first_named(c.label, c.report).and_then(|f| f.evidence.lost_fraction);
    c.row(
        "lost_fraction_between",
        format!("{lo:.2}..={hi:.2}"),
        fmt(lost, 2),
        lost.is_some_and(|l| (lo..=hi).contains(&l)),
    );
}

/// A file read without warnings, and holding as many readings as the label says.
fn readings(c: &mut Checks) {
    let warnings = &c.report.warnings;
    c.row(
        "warnings",
        "none".into(),
        format!("{warnings:?}"),
        warnings.is_empty(),
    );
    if let Some(over) = c.label.readings_over {
        let n = c.report.samples;
        c.row(
            "readings_over",
            format!("> {over}"),
            n.to_string(),
            n > over,
        );
    }
}

fn kinds(k: &[FindingKind]) -> String {
    let names: Vec<&str> = k.iter().map(|k| k.as_str()).collect();
    if names.is_empty() {
        "-".to_string()
    } else {
        names.join(" / ")
    }
}

/// The verdict is the label's or one of `also`, and never one of `not`.
fn verdict(c: &mut Checks) {
    let g = &c.report.gpus[0];
    let accepted = c.label.accepted_from(c.input);
    let found = g
        .findings
        .iter()
        .map(|f| format!("{}:{}", f.kind, f.severity.as_str()))
        .collect::<Vec<_>>()
        .join(" ");
    let ok = accepted.contains(&g.verdict) && !c.label.not.contains(&g.verdict);
    c.row(
        "verdict",
        kinds(&accepted),
        format!("{} ({found})", g.verdict),
        ok,
    );
}

/// No finding of a kind the label excludes (`not`), none with a period on stalls without a
/// cadence (`aperiodic`), none above `severity_at_most`, and no tensor cores idle from an input
/// that does not read tensor-core activity.
fn findings_allowed(c: &mut Checks) {
    let kinds_found: Vec<FindingKind> = c.findings().iter().map(|f| f.kind).collect();
    if !c.input.reads_tensor_activity() {
        let ok = !kinds_found.contains(&FindingKind::TensorCoresIdle);
        c.row(
            "no tensor activity",
            "no tensor_cores_idle".into(),
            kinds(&kinds_found),
            ok,
        );
    }
    if !c.label.not.is_empty() {
        let ok = !kinds_found.iter().any(|k| c.label.not.contains(k));
        c.row(
            "not",
            format!("none of {}", kinds(&c.label.not)),
            kinds(&kinds_found),
            ok,
        );
    }
    if c.label.aperiodic {
        let periods: Vec<String> = c
            .findings()
            .iter()
            .filter_map(|f| f.evidence.period_s.map(|p| format!("{} {p:.2} s", f.kind)))
            .collect();
        let ok = periods.is_empty();
        c.row("aperiodic", "no period".into(), periods.join(", "), ok);
    }
    if let Some(most) = c.label.severity_at_most {
        let worst = c.findings().iter().map(|f| f.severity).max();
        let ok = worst.is_none_or(|w| w <= most);
        let found = worst.map_or("-", |w| w.as_str()).to_string();
        c.row("severity_at_most", most.as_str().into(), found, ok);
    }
}

/// A job labelled starving, named starving, is named within its bound of its onset (else
/// start): 15 s unless the label says otherwise (`named_within_s`); and its input starvation
/// within `named_within_periods` true periods where the label bounds it so.
fn named_in_time(c: &mut Checks) {
    let g = &c.report.gpus[0];
    let labelled = c.label.verdict.is_some_and(|v| STARVING.contains(&v));
    if labelled && STARVING.contains(&g.verdict) {
        let limit = c.label.named_within_s_from(c.input);
        let ok = c.after.is_some_and(|a| a <= limit);
        c.row(
            "named_within_s",
            format!("<= {limit:.1}"),
            fmt(c.after, 1),
            ok,
        );
    }
    let periods = c.label.named_within_periods.as_ref();
    if let Some(n) = periods.and_then(|p| p.of(c.input)) {
        let after = c.starvation().map(|f| f.detected_at - c.label.begin());
        let limit = c.truth.map(|t| n * t);
        let ok = matches!((after, limit), (Some(a), Some(l)) if a <= l);
        c.row(
            "named_within_periods",
            format!("{n} x {} = {}", fmt(c.truth, 2), fmt(limit, 1)),
            fmt(after, 1),
            ok,
        );
    }
}

fn fmt(x: Option<f64>, digits: usize) -> String {
    x.map_or("-".to_string(), |x| format!("{x:.digits$}"))
}

/// The input starvation's period: within `period_tolerance` of the true period (at least 1 s),
/// and within `named_period` where the label names one.
fn period(c: &mut Checks) {
    let period = c.starvation().and_then(|f| f.evidence.period_s);
    if let (Some(p), Some(tp)) = (period, c.truth.filter(|t| *t >= 1.0)) {
        let tol = c.label.period_tolerance();
        let ok = (p - tp).abs() <= tol * tp;
        c.row(
            "period_s",
            format!("{tp:.2} ± {:.0}%", 100.0 * tol),
            format!("{p:.2}"),
            ok,
        );
    }
    if let Some(np) = c.label.named_period {
        c.row(
            "named_period",
            format!("{:.2} ± {:.2}", np.s, np.within_s),
            fmt(period, 2),
            np.holds(period),
        );
    }
}

/// The input starvation ends within `cleared_within_periods` true periods of `recovered`, and
/// not before `held_for_share_of_starving` of the time from onset to recovered.
fn cleared(c: &mut Checks) {
    let end = c.starvation().and_then(|f| f.end);
    if let Some(n) = c.label.cleared_within_periods {
        let recovered = c
            .label
            .recovered
            .expect("cleared_within_periods needs recovered");
        let limit = c.truth.map(|t| recovered + n * t);
        let ok = matches!((end, limit), (Some(e), Some(l)) if e <= l);
        c.row(
            "cleared_within_periods",
            format!("{n} x {} after recovered", fmt(c.truth, 2)),
            fmt(end.map(|e| e - recovered), 1),
            ok,
        );
    }
    if let Some(share) = c.label.held_for_share_of_starving {
        let (onset, recovered) = (c.label.begin(), c.label.recovered.expect("recovered"));
        let from = onset + share * (recovered - onset);
        let ok = end.is_some_and(|e| e > from);
        c.row(
            "held_for_share_of_starving",
            format!("ends > {:.1} s after onset", from - onset),
            fmt(end.map(|e| e - onset), 1),
            ok,
        );
    }
}

/// How many findings (`findings_at_most`) and stall findings (`stall_findings`), how long the
/// stall findings last (`lasts_to_end_within_s`), and the share of the job lost (`lost_share`).
fn counted(c: &mut Checks) {
    if let Some(most) = c.label.findings_at_most {
        let n = c.findings().len();
        c.row(
            "findings_at_most",
            most.to_string(),
            n.to_string(),
            n <= most,
        );
    }
    let stalls = c.stalls();
    if let Some(n) = c.label.stall_findings {
        let found = stalls.len();
        c.row(
            "stall_findings",
            n.to_string(),
            found.to_string(),
            found == n,
        );
    }
    if let Some(within) = c.label.lasts_to_end_within_s {
        let end = c.label.end();
        let ends: Vec<Option<f64>> = stalls.iter().map(|f| f.end.map(|e| e - end)).collect();
        let ok = stalls
            .iter()
            .all(|f| f.end.is_none_or(|e| e >= end - within));
        c.row(
            "lasts_to_end_within_s",
            format!("ends >= {within:.1} s before the end"),
            format!("{ends:?}"),
            ok,
        );
    }
    if let Some([lo, hi]) = c.label.lost_share {
        let lost = c.report.gpus[0].stats.time_lost_s / (c.label.end() - c.label.start);
        c.row(
            "lost_share",
            format!("{lo:.2}..={hi:.2}"),
            format!("{lost:.2}"),
            (lo..=hi).contains(&lost),
        );
    }
}
