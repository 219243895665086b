//! What share of a GPU's time is lost at one tick, and how the GPU is split between its
//! processes.

use crate::model::{Finding, FindingKind, GpuProcess};

/// Memory in use from which a GPU counts as held by a job when no process is listed (a source
/// without process lists, such as an nvidia-smi log): the detector's own test for a context.
pub const HELD_BYTES: u64 = 1 << 30;

/// The share (0–1) of a reading's window without the work of a job that reads `level` when it
/// is fed: `(level − util) / level`, none without a reading.
pub fn shortfall(util: Option<f64>, level: f64) -> Option<f64> {
    util.filter(|u| u.is_finite() && level > 0.0)
        .map(|u| ((level - u) / level).clamp(0.0, 1.0))
}

/// The lost share (0–1) at one tick and the kind that sets it, from the GPU's active `findings`,
/// its `verdict`, whether a job `held` it, its utilization `util` (percent) at the tick and the
/// `level` the detector measures lost time against (its full level; 100% when unknown):
///
/// - a finding with a measured lost fraction (starvation, erratic or periodic stalls): the
///   tick's own shortfall against `level` (the finding's lost fraction without a reading). The
///   fraction is the mean of those shortfalls over the detector's window; booking each tick's
///   own keeps a cadence's healthy stretches, and the stretch after its last stall, from being
///   booked at the window's mean;
/// - memory held idle: the whole time (a job holds the GPU and runs nothing on it);
/// - verdict `idle` or `pending` while a job holds the GPU: the share of the tick's driver
///   window without a kernel (1 − utilization; the whole time without a reading). A GPU held by
///   a job that runs nothing loses that time before the detector has the data to judge it;
/// - verdict `stalling` while a job holds the GPU: the tick's own shortfall against `level`
///   (nothing without a reading): the stalls are measured before their cause is named;
///
/// the largest of those that apply (overlapping findings never count twice), ties to the first
/// finding. Other findings measure no share and lose nothing here.
pub fn lost_share<'a>(
    findings: impl Iterator<Item = &'a Finding>,
    verdict: FindingKind,
    held: bool,
    util: Option<f64>,
    level: Option<f64>,
) -> (f64, Option<FindingKind>) {
    let level = level.filter(|l| l.is_finite() && *l > 0.0).unwrap_or(100.0);
    let mut best: (f64, Option<FindingKind>) = (0.0, None);
    let mut consider = |share: f64, kind: FindingKind| {
        let share = share.clamp(0.0, 1.0);
        if share > best.0 {
            best = (share, Some(kind));
        }
    };
    for f in findings {
        if f.kind == FindingKind::MemoryIdle {
            consider(1.0, f.kind);
        } else if let Some(l) = f.evidence.lost_fraction.filter(|l| l.is_finite()) {
            consider(shortfall(util, level).unwrap_or(l), f.kind);
        }
    }
    if held {
        match verdict {
            FindingKind::Idle | FindingKind::Pending => {
                consider(shortfall(util, 100.0).unwrap_or(1.0), verdict);
            }
            FindingKind::Stalling => consider(shortfall(util, level).unwrap_or(0.0), verdict),
            _ => {}
        }
    }
    best
}

/// Each process's weight (summing to 1) in the GPU's time, lost time and energy at one tick, in
/// the order of `processes`: by the driver's per-process SM utilization where it reports some,
/// else by GPU memory held, else equal. Empty without processes.
pub fn process_weights(processes: &[GpuProcess], out: &mut Vec<f64>) {
    out.clear();
    let n = processes.len();
    if n == 0 {
        return;
    }
    let by = |read: &dyn Fn(&GpuProcess) -> f64, out: &mut Vec<f64>| {
        let sum: f64 = processes.iter().map(read).sum();
        if sum > 0.0 && sum.is_finite() {
            out.extend(processes.iter().map(|p| read(p) / sum));
            true
        } else {
            false
        }
    };
    let sm = |p: &GpuProcess| p.sm_util.filter(|u| *u > 0.0).unwrap_or(0.0);
    let memory = |p: &GpuProcess| p.gpu_memory_bytes.map_or(0.0, |b| b as f64);
    if !by(&sm, out) && !by(&memory, out) {
        out.extend(std::iter::repeat_n(1.0 / n as f64, n));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Evidence, Severity};

    fn finding(kind: FindingKind, lost: Option<f64>) -> Finding {
        Finding {
            kind,
            severity: Severity::Warn,
            gpu: 0,
            start: 0.0,
            end: None,
            detected_at: 0.0,
            evidence: Evidence {
                lost_fraction: lost,
                ..Default::default()
            },
            summary: String::new(),
            advice: String::new(),
        }
    }

    #[test]
    fn the_largest_share_applies_and_overlaps_count_once() {
        let f = [
            finding(FindingKind::ErraticStalls, Some(0.3)),
            finding(FindingKind::InputStarvation, Some(0.6)),
            finding(FindingKind::Throttled, None),
        ];
        let healthy = FindingKind::Healthy;
        // Without a reading, the findings' own fractions.
        assert_eq!(
            lost_share(f.iter(), healthy, true, None, None),
            (0.6, Some(FindingKind::InputStarvation))
        );
        assert_eq!(
            lost_share(f[2..].iter(), healthy, true, None, None),
            (0.0, None)
        );
        let idle = FindingKind::MemoryIdle;
        assert_eq!(
            lost_share([finding(idle, None)].iter(), idle, true, None, None),
            (1.0, Some(idle))
        );
    }

    #[test]
    fn a_stall_finding_books_each_ticks_own_shortfall_against_the_full_level() {
        let f = [finding(FindingKind::PeriodicStall, Some(0.25))];
        let v = FindingKind::PeriodicStall;
        // A busy tick of a job whose full level is 80% loses nothing; a stalled one all of it.
        assert_eq!(
            lost_share(f.iter(), v, true, Some(80.0), Some(80.0)),
            (0.0, None)
        );
        assert_eq!(
            lost_share(f.iter(), v, true, Some(20.0), Some(80.0)),
            (0.75, Some(v))
        );
        assert_eq!(
            lost_share(f.iter(), v, true, Some(0.0), None),
            (1.0, Some(v))
        );
    }

    #[test]
    fn a_held_gpu_loses_its_idle_time_before_a_verdict_and_while_stalling() {
        for v in [FindingKind::Idle, FindingKind::Pending] {
            assert_eq!(lost_share([].iter(), v, false, None, None), (0.0, None));
            assert_eq!(lost_share([].iter(), v, true, None, None), (1.0, Some(v)));
            let (share, kind) = lost_share([].iter(), v, true, Some(30.0), Some(60.0));
            assert!((share - 0.7).abs() < 1e-12 && kind == Some(v));
            assert_eq!(
                lost_share([].iter(), v, true, Some(100.0), None),
                (0.0, None)
            );
        }
        let s = FindingKind::Stalling;
        assert_eq!(
            lost_share([].iter(), s, false, Some(0.0), None),
            (0.0, None)
        );
        assert_eq!(lost_share([].iter(), s, true, None, None), (0.0, None));
        let (share, kind) = lost_share([].iter(), s, true, Some(30.0), Some(60.0));
        assert!((share - 0.5).abs() < 1e-12 && kind == Some(s));
        // Healthy loses nothing, held or not.
        let h = FindingKind::Healthy;
        assert_eq!(lost_share([].iter(), h, true, Some(0.0), None), (0.0, None));
    }

    fn process(sm: Option<f64>, memory: Option<u64>) -> GpuProcess {
        GpuProcess {
            sm_util: sm,
            gpu_memory_bytes: memory,
            ..Default::default()
        }
    }

    #[test]
    fn processes_split_by_utilization_then_memory_then_equally() {
        let mut w = Vec::new();
        process_weights(
            &[process(Some(30.0), Some(1)), process(Some(10.0), Some(9))],
            &mut w,
        );
        assert_eq!(w, [0.75, 0.25]);
        process_weights(
            &[process(Some(0.0), Some(1)), process(None, Some(3))],
            &mut w,
        );
        assert_eq!(w, [0.25, 0.75]);
        process_weights(&[process(None, None), process(None, None)], &mut w);
        assert_eq!(w, [0.5, 0.5]);
        process_weights(&[], &mut w);
        assert!(w.is_empty());
    }
}
