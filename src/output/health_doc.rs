//! The `health` object of a GPU in `gpulse snapshot --json` and `gpulse stream`: the newest
//! health counters, the XIDs seen with their meaning and fix, and the GPU's health in one word.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::engine::GpuSnapshot;
use crate::model::{
    xid_info, EccCounts, NvLinkHealth, RemappedRows, RetiredPages, ThrottleHeld, ThrottleReason,
    UnixTime, XidWatch,
};

/// One XID with what it means and what to do.
#[derive(Debug, Serialize)]
pub struct XidDoc {
    pub time: UnixTime,
    pub xid: u64,
    pub meaning: &'static str,
    pub fix: &'static str,
}

#[derive(Debug, Serialize)]
pub struct HealthDoc<'a> {
    /// `ok`, `warn` (a warning finding: a pending remap, corrected errors rising), `fault` (an
    /// XID, uncorrectable errors, a failed remap) or `unknown` (nothing read).
    pub state: &'static str,
    /// When the counters were read (absent before the first read).
    pub read_at: Option<UnixTime>,
    pub ecc_enabled: Option<bool>,
    pub ecc: Option<&'a EccCounts>,
    pub retired_pages: Option<&'a RetiredPages>,
    pub remapped_rows: Option<&'a RemappedRows>,
    pub pcie_replays: Option<u64>,
    /// One entry per NVLink link; empty where the GPU has no NVLink.
    pub nvlinks: &'a [NvLinkHealth],
    /// Nanoseconds each clock event reason held the clocks since the driver loaded, by reason.
    pub throttle_ns: BTreeMap<&'static str, u64>,
    /// Whether XIDs are watched, since when (earlier ones are unknown).
    pub xid_watch: Option<&'a XidWatch>,
    pub xids: Vec<XidDoc>,
}

/// The `health` object of a GPU; `None` where nothing about its health is known.
pub fn health_doc(g: &GpuSnapshot) -> Option<HealthDoc<'_>> {
    if g.health.is_none() && g.xids.is_empty() {
        return None;
    }
    let h = g.health.as_ref();
    let throttle_ns = h
        .map(|h| {
            ThrottleReason::ALL
                .into_iter()
                .filter_map(|r| h.throttle_ns.get(r).map(|ns| (r.as_str(), ns)))
                .collect()
        })
        .unwrap_or_default();
    Some(HealthDoc {
        state: g.health_state().as_str(),
        read_at: h.map(|h| h.t),
        ecc_enabled: h.and_then(|h| h.ecc_enabled),
        ecc: h.map(|h| &h.ecc),
        retired_pages: h.and_then(|h| h.retired_pages.as_ref()),
        remapped_rows: h.and_then(|h| h.remapped_rows.as_ref()),
        pcie_replays: h.and_then(|h| h.pcie_replays),
        nvlinks: h.map(|h| h.nvlinks.as_slice()).unwrap_or_default(),
        throttle_ns,
        xid_watch: h.and_then(|h| h.xid_watch.as_ref()),
        xids: g
            .xids
            .iter()
            .map(|x| {
                let info = xid_info(x.xid);
                XidDoc {
                    time: x.t,
                    xid: x.xid,
                    meaning: info.meaning,
                    fix: info.action.text(),
                }
            })
            .collect(),
    })
}

/// The share of the newest tick each reason held the clocks, by reason (empty without counters).
pub fn throttle_held_doc(held: &ThrottleHeld) -> BTreeMap<&'static str, f32> {
    ThrottleReason::ALL
        .into_iter()
        .filter_map(|r| held.get(r).map(|s| (r.as_str(), s)))
        .collect()
}
