//! Memory: held while nothing computes (memory idle), and nearly full and rising (pressure).

use super::candidate::{Candidate, Summary};
use super::Evaluation;
use crate::model::{FindingKind, Severity};

/// The memory in use at the last tick and its share of the GPU's memory.
fn memory_in_use(e: &Evaluation) -> Option<(u64, f64)> {
    let used = e.s.mem_used_last?;
    let total =
        e.s.mem_total
            .or(e.dev.and_then(|d| d.memory_total_bytes))
            .filter(|t| *t > 0)?;
    Some((used, used as f64 / total as f64))
}

/// Memory idle: at least `memory_idle_share` of the memory held while the last rules window
/// computes nothing (mean utilization below `idle_util`, or SM activity below `memory_idle_sm`).
pub fn memory_idle(e: &Evaluation) -> Option<Candidate> {
    let (cfg, a) = (e.cfg, e.a);
    let (used, share) = memory_in_use(e)?;
    let computes_nothing =
        a.recent_mean < cfg.idle_util || e.s.sm_mean.is_some_and(|sm| sm < cfg.memory_idle_sm);
    (e.enough() && computes_nothing && share >= cfg.memory_idle_share).then(|| {
        Candidate::of_signals(
            FindingKind::MemoryIdle,
            Severity::Warn,
            e.recent_start(),
            &[("memory_used_share", share), ("util_gpu", a.recent_mean)],
            Summary::MemoryIdle {
                share,
                used,
                util: a.recent_mean,
            },
        )
    })
}

/// Memory pressure: at least `memory_pressure_share` of the memory in use, and more than at the
/// start of the rules window.
pub fn memory_pressure(e: &Evaluation) -> Option<Candidate> {
    let (used, share) = memory_in_use(e)?;
    let rising = e.s.mem_used_first.is_some_and(|f| used > f);
    (share >= e.cfg.memory_pressure_share && rising).then(|| {
        Candidate::of_signals(
            FindingKind::MemoryPressure,
            Severity::High,
            e.now,
            &[("memory_used_share", share)],
            Summary::MemoryPressure { share },
        )
    })
}
