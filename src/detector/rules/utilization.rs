//! What utilization alone does not say: copies that hold the GPU up (transfer bound), a flat
//! low plateau of small kernels (host bound), and full utilization with the SMs or the power
//! saying otherwise (busy but idle).

use super::candidate::{Candidate, Summary};
use super::Evaluation;
use crate::model::{FindingKind, Severity};

/// PCIe bandwidth per lane per direction, bytes/s, by generation.
pub fn lane_bytes_per_s(gen: u32) -> f64 {
    match gen {
        1 => 0.25e9,
        2 => 0.5e9,
        3 => 0.985e9,
        4 => 1.969e9,
        5 => 3.938e9,
        6 => 7.563e9,
        _ => 0.0,
    }
}

/// The link's bandwidth per direction: the device's maximum generation and width, else the
/// link's current ones.
fn link_bandwidth(e: &Evaluation) -> Option<f64> {
    let gen = e
        .dev
        .and_then(|d| d.pcie_gen_max)
        .or(e.s.link_current.map(|l| l.0))?;
    let width = e
        .dev
        .and_then(|d| d.pcie_width_max)
        .or(e.s.link_current.map(|l| l.1))?;
    Some(lane_bytes_per_s(gen) * width as f64)
}

/// Transfer bound: host-to-device copies at `transfer_link_share` of the link or more while
/// utilization stays below `plateau_max_util`.
pub fn transfer_bound(e: &Evaluation) -> Option<Candidate> {
    let (rx, bw, util) = (e.s.rx_mean?, link_bandwidth(e)?, e.s.util_mean?);
    let copying = bw > 0.0 && rx / bw >= e.cfg.transfer_link_share && util < e.cfg.plateau_max_util;
    (e.enough() && copying).then(|| {
        Candidate::of_signals(
            FindingKind::TransferBound,
            Severity::Warn,
            e.recent_start(),
            &[
                ("pcie_rx_bytes_per_s", rx),
                ("link_bytes_per_s", bw),
                ("util_gpu", util),
            ],
            Summary::TransferBound { rx, link: bw, util },
        )
    })
}

/// Host bound: the last rules window is a flat plateau (10th percentile at least `idle_util`
/// and at least `plateau_flatness` of the 90th, which is below `plateau_max_util`).
pub fn host_bound(e: &Evaluation) -> Option<Candidate> {
    let (cfg, a) = (e.cfg, e.a);
    let flat = a.recent_p10 >= cfg.idle_util
        && a.recent_p90 < cfg.plateau_max_util
        && a.recent_p10 >= cfg.plateau_flatness * a.recent_p90;
    if !(e.enough() && flat) {
        return None;
    }
    let mut c = Candidate::of_signals(
        FindingKind::HostBound,
        Severity::Warn,
        e.recent_start(),
        &[("util_gpu", a.recent_mean)],
        Summary::HostBound {
            util: a.recent_mean,
            sm: e.s.sm_mean,
        },
    );
    if let Some(sm) = e.s.sm_mean {
        c.evidence.signals.insert("sm_active".into(), sm);
    }
    Some(c)
}

/// The power a busy GPU is compared with: its power limit, or the most it drew at busy
/// utilization so far, whichever is more (whether it is the limit). A source without the limit
/// (an nvidia-smi log without `power.limit`) still shows what this GPU draws when it works.
fn power_reference(limit: Option<f64>, busy_peak: Option<f64>) -> Option<(f64, bool)> {
    match (limit, busy_peak) {
        (Some(l), Some(p)) if p > l => Some((p, false)),
        (Some(l), _) => Some((l, true)),
        (None, Some(p)) => Some((p, false)),
        (None, None) => None,
    }
}

/// Busy but idle: utilization at `busy_util` or more while SM activity is below
/// `busy_but_idle_sm`, or, without SM activity, while the power is below
/// `busy_but_idle_power_share` of the GPU's reference power (see [`power_reference`]).
pub fn busy_but_idle(e: &Evaluation) -> Option<Candidate> {
    let (cfg, s) = (e.cfg, e.s);
    let util = s.util_mean.filter(|u| *u >= cfg.busy_util && e.enough())?;
    let sm_low = s.sm_mean.filter(|sm| *sm < cfg.busy_but_idle_sm);
    let limit = s.power_limit.or(e.dev.and_then(|d| d.power_limit_watts));
    let (reference, of_limit) = power_reference(limit, s.busy_power_peak)?;
    let power_low = s
        .power_mean
        .filter(|p| reference > 0.0 && *p < cfg.busy_but_idle_power_share * reference)
        .map(|p| (p, reference));
    if sm_low.is_none() && (s.sm_mean.is_some() || power_low.is_none()) {
        return None;
    }
    let power = power_low.unwrap_or((0.0, 1.0));
    let reference_key = if of_limit {
        "power_limit_w"
    } else {
        "busy_power_w"
    };
    let signals: &[(&str, f64)] = match sm_low {
        Some(sm) => &[("util_gpu", util), ("sm_active", sm)],
        None => &[
            ("util_gpu", util),
            ("power_w", power.0),
            (reference_key, power.1),
        ],
    };
    Some(Candidate::of_signals(
        FindingKind::BusyButIdle,
        Severity::Warn,
        e.recent_start(),
        signals,
        Summary::BusyButIdle {
            util,
            sm: sm_low,
            power,
            of_limit,
        },
    ))
}
