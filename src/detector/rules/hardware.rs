//! The hardware holding the GPU back: a PCIe link trained below its maximum, judged on busy
//! ticks only (clock events: [`super::throttle`]).

use super::candidate::{Candidate, Summary};
use super::Evaluation;
use crate::model::{FindingKind, Severity};

/// PCIe degraded: the link below the device's maximum generation or width on at least
/// `degraded_share` of `min_busy_ticks` or more busy ticks.
pub fn pcie_degraded(e: &Evaluation) -> Option<Candidate> {
    let (cfg, s) = (e.cfg, e.s);
    if s.busy_ticks < cfg.min_busy_ticks
        || (s.degraded_ticks as f64) < cfg.degraded_share * s.busy_ticks as f64
    {
        return None;
    }
    let (g, w) = s.link_seen.unwrap_or((0, 0));
    let max = (
        e.dev.and_then(|d| d.pcie_gen_max).unwrap_or(g),
        e.dev.and_then(|d| d.pcie_width_max).unwrap_or(w),
    );
    Some(Candidate::of_signals(
        FindingKind::PcieDegraded,
        Severity::Warn,
        e.recent_start(),
        &[("pcie_gen", g as f64), ("pcie_width", w as f64)],
        Summary::PcieDegraded { link: (g, w), max },
    ))
}
