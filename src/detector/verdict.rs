//! The verdict of a GPU at each evaluation, and the stall watch: what the detector sees on a
//! GPU whose stalls are not (yet) a finding.

use super::gpu::GpuState;
use super::signal::Analysis;
use super::DetectorConfig;
use crate::model::{Finding, FindingKind, Severity, UnixTime, Watch};

/// Kinds in the order a verdict prefers them when severities tie. A GPU fault comes first (what
/// runs on a faulty GPU is not worth tuning until it is fixed); tensor cores idle, lost speed
/// rather than lost time, comes last: a starving fp32 job is starving first.
const PRIORITY: [FindingKind; 14] = [
    FindingKind::GpuFault,
    FindingKind::InputStarvation,
    FindingKind::ErraticStalls,
    FindingKind::TransferBound,
    FindingKind::HostBound,
    FindingKind::BusyButIdle,
    FindingKind::PeriodicStall,
    FindingKind::MemoryIdle,
    FindingKind::Throttled,
    FindingKind::MemoryPressure,
    FindingKind::PcieDegraded,
    FindingKind::SingleGpuBusy,
    FindingKind::Imbalance,
    FindingKind::TensorCoresIdle,
];

/// Rank of a kind in the verdict's order of preference (lower is preferred).
pub fn priority(kind: FindingKind) -> usize {
    PRIORITY
        .iter()
        .position(|k| *k == kind)
        .unwrap_or(PRIORITY.len())
}

/// The verdict of `gpu` before the stall watch: its active warn or high finding of the highest
/// severity, then by [`priority`]. Without one: `idle` when no process holds a context on it;
/// `pending` while the current job has less than `min_span_s` of readings (too little to
/// judge); when busy on enough evidence (a mean at or above `idle_util` from at least
/// `busy_evidence_s` of activity, not a lone blip), `tensor_cores_idle` while that information
/// finding is active (busy, but slower than it could be), else `healthy`; `stalling` when work
/// keeps coming in bursts (`min_bursts`) to a GPU holding a context (a job waiting between
/// batches is neither idle nor healthy); else `idle`.
fn base_verdict(
    active: &[Finding],
    gpu: u32,
    state: &GpuState,
    cfg: &DetectorConfig,
) -> FindingKind {
    let named = active
        .iter()
        .filter(|f| f.gpu == gpu && f.severity >= Severity::Warn)
        .min_by_key(|f| (std::cmp::Reverse(f.severity), priority(f.kind)))
        .map(|f| f.kind);
    if let Some(kind) = named {
        return kind;
    }
    if state.job.no_context() {
        return FindingKind::Idle;
    }
    if state.job_span() < cfg.min_span_s {
        return FindingKind::Pending;
    }
    let r = &state.recent;
    let busy = r.mean.is_some_and(|m| m >= cfg.idle_util) && r.active_s >= cfg.busy_evidence_s;
    let tensor_idle = || {
        active
            .iter()
            .any(|f| f.gpu == gpu && f.kind == FindingKind::TensorCoresIdle)
    };
    if busy && tensor_idle() {
        FindingKind::TensorCoresIdle
    } else if busy {
        FindingKind::Healthy
    } else if state.holds_memory && r.bursts >= cfg.min_bursts {
        FindingKind::Stalling
    } else {
        FindingKind::Idle
    }
}

/// The verdict of `gpu` at `t`, with its stall watch updated. The verdict never contradicts the
/// watch: a GPU without a warn or high finding whose watch shows stalls is `stalling` until their
/// cause is named, however busy it reads between them (tensor cores idle stays among its
/// findings).
pub(super) fn decide(
    active: &[Finding],
    gpu: u32,
    state: &mut GpuState,
    t: UnixTime,
    cfg: &DetectorConfig,
) -> FindingKind {
    let base = base_verdict(active, gpu, state, cfg);
    let unnamed = matches!(
        base,
        FindingKind::Healthy | FindingKind::TensorCoresIdle | FindingKind::Stalling
    ) || (base == FindingKind::Idle && state.holds_memory && !state.job.no_context());
    update_watch(state, unnamed, t, cfg);
    if unnamed && state.watch.is_some() {
        FindingKind::Stalling
    } else {
        base
    }
}

/// Update the watch of a GPU. A GPU without a finding (`unnamed`: healthy or stalling, or idle
/// while a process holds its memory) shows the stalls its rules window holds; stalls already
/// shown stay while a longer span (`named_stalls_windows` rules windows) still holds enough of
/// them, and an evaluation that sees too few does not hide them at once: they stay up to
/// `watch_hold_s` unless a finding came.
fn update_watch(state: &mut GpuState, unnamed: bool, t: UnixTime, cfg: &DetectorConfig) {
    let window = cfg.rules_window_s;
    let seen = match &state.analysis {
        Some(a) if unnamed && a.span_s >= cfg.min_span_s => {
            watch_of(a, t, window, cfg).or_else(|| {
                state
                    .watch
                    .and_then(|_| watch_of(a, t, cfg.named_stalls_windows * window, cfg))
            })
        }
        _ => None,
    };
    state.watch = match (seen, state.watch) {
        (Some(w), _) => {
            state.watch_at = t;
            Some(w)
        }
        (None, Some(w)) if unnamed && t - state.watch_at < cfg.watch_hold_s => Some(w),
        _ => None,
    };
}

/// The stalls of the last `span_s` before `now` in analysis `a`: dips that began in it, and the
/// share of it spent in any dip (one that began before it counts from its start), when there are
/// at least `watch_min_stalls` taking at least `watch_min_stalled` of it.
fn watch_of(a: &Analysis, now: UnixTime, span_s: f64, cfg: &DetectorConfig) -> Option<Watch> {
    let span = span_s.min(a.span_s);
    let from = now - span;
    if span <= 0.0 || a.busy_level <= 0.0 {
        return None;
    }
    let mut stalls = 0usize;
    let mut stalled = 0.0f64;
    for d in &a.dips {
        let end = d.end.unwrap_or(now).min(now);
        if end <= from {
            continue;
        }
        if !d.open_start && d.start >= from {
            stalls += 1;
        }
        stalled += end - d.start.max(from);
    }
    let fraction = (stalled / span).clamp(0.0, 1.0);
    (stalls >= cfg.watch_min_stalls && fraction >= cfg.watch_min_stalled).then_some(Watch {
        stalls: stalls as u32,
        stalled_fraction: fraction,
        span_s: span,
    })
}
