//! The rules: from one evaluation of a GPU (its window's [`Analysis`], its recent ticks'
//! [`TickSummary`]) to candidate findings, one file per family of patterns.

mod candidate;
mod cross_gpu;
mod fault;
mod hardware;
mod memory;
mod precision;
mod stalls;
mod throttle;
mod utilization;

pub use candidate::{advice, Candidate, Summary};
pub use cross_gpu::{cross_gpu, GpuLoad};
pub use throttle::{held_over, ThrottleShares};

use super::health_track::HealthTrack;
use super::signal::Analysis;
use super::ticks::TickSummary;
use super::DetectorConfig;
use crate::model::{DeviceInfo, FindingKind, UnixTime};

/// What the rules judge of a GPU's health: its faults and counters, and the share of busy time
/// each clock event reason held the clocks over the rules window.
pub struct HealthView<'a> {
    pub track: &'a HealthTrack,
    /// Where the current job's readings begin (an application's XID belongs to its job).
    pub job_from: Option<UnixTime>,
    pub throttle: ThrottleShares,
}

/// What the rules judge one GPU on at one evaluation.
pub struct Evaluation<'a> {
    pub cfg: &'a DetectorConfig,
    pub dev: Option<&'a DeviceInfo>,
    pub a: &'a Analysis,
    pub s: &'a TickSummary,
    pub now: UnixTime,
    /// Erratic stalls or input starvation is raised on this GPU.
    pub stalls_named: bool,
    pub health: HealthView<'a>,
}

impl Evaluation<'_> {
    /// The window holds at least `min_span_s` of data.
    pub fn enough(&self) -> bool {
        self.a.span_s >= self.cfg.min_span_s
    }

    /// Where the rules on recent readings begin judging: the last `rules_window_s` of the window.
    pub fn recent_start(&self) -> UnixTime {
        (self.now - self.a.span_s).max(self.now - self.cfg.rules_window_s)
    }
}

/// Every per-GPU rule, in the order their candidates are raised. Stalls are judged on a busy
/// window only; a GPU that is starving, copying or holding memory idle is not called host bound.
/// Tensor cores idle is judged beside all of them: a starving fp32 job has both problems.
pub fn per_gpu(e: &Evaluation) -> Vec<Candidate> {
    let mut out = Vec::new();
    let stalls = if e.enough() && e.a.busy_level >= e.cfg.idle_util {
        stalls::periodic(e).or_else(|| stalls::erratic(e))
    } else {
        None
    };
    let starving = stalls
        .as_ref()
        .is_some_and(|c| c.kind != FindingKind::PeriodicStall);
    out.extend(stalls);
    let transfer = utilization::transfer_bound(e);
    let memory_idle = memory::memory_idle(e);
    let host = (!starving && transfer.is_none() && memory_idle.is_none())
        .then(|| utilization::host_bound(e))
        .flatten();
    out.extend(transfer);
    out.extend(host);
    out.extend(utilization::busy_but_idle(e));
    out.extend(memory_idle);
    out.extend(memory::memory_pressure(e));
    out.extend(throttle::throttled(e));
    out.extend(hardware::pcie_degraded(e));
    out.extend(precision::tensor_cores_idle(e));
    out.extend(fault::gpu_fault(e));
    out
}
