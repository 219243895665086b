//! Rules across the GPUs of a host: one GPU working while the others hold memory and wait, and
//! GPUs of one job whose loads differ.

use super::candidate::{Candidate, Summary};
use crate::detector::DetectorConfig;
use crate::model::{FindingKind, Severity, UnixTime};

/// What the cross-GPU rules know of one GPU.
#[derive(Debug, Clone, Copy, Default)]
pub struct GpuLoad {
    /// Mean utilization over the last rules window (`None` before a full window of data).
    pub mean: Option<f64>,
    /// Holds a context's worth of memory (`holds_memory_mib`).
    pub holds_memory: bool,
    /// Has a warn or high finding of its own (an imbalance is then explained).
    pub explained: bool,
}

/// Single GPU busy: one GPU at least half of `busy_util` busy, every other one below `idle_util`
/// yet holding memory. Imbalance: GPUs at least four times `idle_util` busy whose mean is more
/// than `imbalance_points` below the busiest, on a GPU without a finding that explains it.
/// Returns each candidate with the position of its GPU.
pub fn cross_gpu(
    cfg: &DetectorConfig,
    gpus: &[GpuLoad],
    now: UnixTime,
    window_s: f64,
) -> Vec<(usize, Candidate)> {
    let mut out = Vec::new();
    if gpus.len() < 2 {
        return out;
    }
    let busy: Vec<usize> = (0..gpus.len())
        .filter(|&i| gpus[i].mean.is_some_and(|m| m >= cfg.busy_util * 0.5))
        .collect();
    let idle_holding = gpus
        .iter()
        .filter(|g| g.mean.is_some_and(|m| m < cfg.idle_util) && g.holds_memory)
        .count();
    if busy.len() == 1 && idle_holding + 1 == gpus.len() {
        out.push((
            busy[0],
            Candidate::of_signals(
                FindingKind::SingleGpuBusy,
                Severity::Warn,
                now - window_s,
                &[("idle_gpus_holding_memory", idle_holding as f64)],
                Summary::SingleGpuBusy { idle_holding },
            ),
        ));
    }
    let active: Vec<(usize, f64)> = (0..gpus.len())
        .filter_map(|i| {
            gpus[i]
                .mean
                .filter(|m| *m >= cfg.idle_util * 4.0)
                .map(|m| (i, m))
        })
        .collect();
    if active.len() < 2 {
        return out;
    }
    let top = active.iter().map(|x| x.1).fold(f64::MIN, f64::max);
    for &(i, m) in &active {
        if top - m > cfg.imbalance_points && !gpus[i].explained {
            out.push((
                i,
                Candidate::of_signals(
                    FindingKind::Imbalance,
                    Severity::Warn,
                    now - window_s,
                    &[("util_gpu", m), ("busiest_util_gpu", top)],
                    Summary::Imbalance {
                        util: m,
                        busiest: top,
                    },
                ),
            ));
        }
    }
    out
}
