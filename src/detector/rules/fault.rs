//! A GPU fault: an XID, uncorrectable memory errors, a failed or pending row remap, or a
//! corrected-error count that keeps rising. One `gpu_fault` finding per GPU carries the worst
//! of them, with the XID's meaning and what to do; the others are its notes.

use super::candidate::{Candidate, Summary};
use super::Evaluation;
use crate::detector::health_track::{HealthTrack, RISING_SPAN_S};
use crate::model::{xid_info, FindingKind, Severity, UnixTime, XidAction};

/// How long a hardware XID stays a finding after it arrived. An application's XID counts only
/// while the job it hit holds the GPU.
pub const XID_HOLD_S: f64 = 600.0;

/// One thing wrong with the GPU.
#[derive(Debug, Clone, PartialEq)]
struct Issue {
    severity: Severity,
    /// The evidence in a few words, before the fix ("XID 79", "remap pending").
    tag: String,
    text: String,
    action: XidAction,
}

/// The GPU's `gpu_fault` candidate, if anything is wrong with it.
pub fn gpu_fault(e: &Evaluation) -> Option<Candidate> {
    let track = e.health.track;
    let mut issues = xid_issues(track, e.now, e.health.job_from);
    issues.extend(memory_issues(track));
    // The worst first; ties keep their order (XIDs before counters).
    issues.sort_by_key(|i| std::cmp::Reverse(i.severity));
    let worst = issues.first()?;
    let mut c = Candidate::of_signals(
        FindingKind::GpuFault,
        worst.severity,
        e.recent_start(),
        &signals(track),
        Summary::GpuFault(worst.text.clone()),
    );
    if let Some(x) = track.xids.last().filter(|x| e.now - x.t <= XID_HOLD_S) {
        c.start = c.start.min(x.t);
    }
    c.evidence.fix = Some(format!("{}: {}", worst.tag, worst.action.text()));
    c.evidence.notes = issues.iter().skip(1).map(|i| i.text.clone()).collect();
    Some(c)
}

/// The XIDs still standing at `now`: hardware XIDs of the last [`XID_HOLD_S`], application
/// XIDs of the job still on the GPU (since `job_from`); each XID number once, newest time.
fn xid_issues(track: &HealthTrack, now: UnixTime, job_from: Option<UnixTime>) -> Vec<Issue> {
    let mut out: Vec<(u64, UnixTime, usize)> = Vec::new();
    for x in track.xids.iter().rev() {
        let info = xid_info(x.xid);
        let recent = now - x.t <= XID_HOLD_S;
        let in_job = job_from.is_none_or(|from| x.t >= from);
        if !recent || (info.application() && !in_job) {
            continue;
        }
        match out.iter_mut().find(|(xid, ..)| *xid == x.xid) {
            Some(seen) => seen.2 += 1,
            None => out.push((x.xid, x.t, 1)),
        }
    }
    out.into_iter()
        .map(|(xid, t, n)| {
            let info = xid_info(xid);
            let times = if n > 1 {
                format!(" ({n} times)")
            } else {
                String::new()
            };
            Issue {
                severity: info.severity,
                tag: format!("XID {xid}"),
                text: format!("XID {xid} at {}{times}: {}", clock_utc(t), info.meaning),
                action: info.action,
            }
        })
        .collect()
}

/// Memory errors: uncorrectable errors since the driver loaded, rows newly remapped after
/// uncorrectable errors, a failed remap, repairs waiting for a reset, corrected errors rising.
fn memory_issues(track: &HealthTrack) -> Vec<Issue> {
    let mut out = Vec::new();
    let Some(read) = track.latest else {
        return out;
    };
    if let Some(n) = read.uncorrectable.filter(|n| *n > 0) {
        out.push(Issue {
            severity: Severity::High,
            tag: format!("{n} uncorrectable ECC error(s)"),
            text: format!("{n} uncorrectable ECC error(s) since the driver loaded"),
            action: XidAction::DrainAndReset,
        });
    }
    let rows = track.new_uncorrectable_rows();
    if rows > 0 {
        out.push(Issue {
            severity: Severity::High,
            tag: format!("{rows} row(s) remapped"),
            text: format!("{rows} row(s) remapped after uncorrectable errors while watched"),
            action: XidAction::DrainAndReset,
        });
    }
    if read.remap_failed {
        out.push(Issue {
            severity: Severity::High,
            tag: "row remap failed".into(),
            text: "a row remap failed: no spare row was left".into(),
            action: XidAction::Rma,
        });
    }
    if read.pending {
        out.push(Issue {
            severity: Severity::Warn,
            tag: "remap pending".into(),
            text: "remapped rows wait for a GPU reset to take effect".into(),
            action: XidAction::ResetGpu,
        });
    }
    if let Some((rise, span)) = track.corrected_rise().filter(|(rise, _)| *rise > 0) {
        let total = read.corrected.unwrap_or(rise);
        out.push(Issue {
            severity: Severity::Warn,
            tag: format!("+{rise} corrected ECC errors"),
            text: format!(
                "corrected ECC errors rising: +{rise} in the last {:.0} min ({total} since the driver loaded)",
                (span / 60.0).clamp(1.0, RISING_SPAN_S / 60.0)
            ),
            action: XidAction::Watch,
        });
    }
    out
}

fn signals(track: &HealthTrack) -> Vec<(&'static str, f64)> {
    let mut out = Vec::new();
    if let Some(x) = track.xids.last() {
        out.push(("xid", x.xid as f64));
    }
    if let Some(n) = track.latest.and_then(|l| l.uncorrectable) {
        out.push(("uncorrectable_errors", n as f64));
    }
    if let Some((rise, _)) = track.corrected_rise() {
        out.push(("corrected_errors_rise", rise as f64));
    }
    out
}

/// The time of day (UTC) of a Unix time, `HH:MM:SS UTC`.
fn clock_utc(t: UnixTime) -> String {
    format!("{} UTC", crate::clock::time_of_day_utc(t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::XidEvent;

    fn track_with(xids: &[(f64, u64)]) -> HealthTrack {
        let mut t = HealthTrack::default();
        let x: Vec<XidEvent> = xids.iter().map(|&(t, xid)| XidEvent { t, xid }).collect();
        t.note(None, &x);
        t
    }

    #[test]
    fn hardware_xids_hold_and_application_xids_end_with_their_job() {
        let t = track_with(&[(100.0, 13), (200.0, 79), (210.0, 79)]);
        let issues = xid_issues(&t, 300.0, Some(150.0));
        assert_eq!(issues.len(), 1, "{issues:?}");
        assert!(issues[0]
            .text
            .starts_with("XID 79 at 00:03:30 UTC (2 times): GPU has fallen off the bus"));
        assert_eq!(issues[0].action, XidAction::DrainAndReboot);
        // The application's XID belongs to a job still on the GPU.
        let issues = xid_issues(&t, 300.0, Some(50.0));
        assert!(issues.iter().any(|i| i.text.starts_with("XID 13")));
        // Long after, nothing stands.
        assert!(xid_issues(&t, 200.0 + XID_HOLD_S + 20.0, None).is_empty());
    }
}
