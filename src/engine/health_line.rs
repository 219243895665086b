//! A GPU's health in one word and in one line of words, as every front end shows it: the
//! dashboard's details and GPU list, `gpulse snapshot`, the JSON documents and `doctor`.

use super::GpuSnapshot;
use crate::clock::time_of_day_utc;
use crate::model::{FindingKind, Severity, XidWatch};

/// A GPU's health in one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum HealthState {
    /// Nothing about its health is known (a source without health counters).
    Unknown,
    Ok,
    /// A warning: a remap waits for a reset, corrected errors rise.
    Warn,
    /// An XID, uncorrectable errors, a failed remap.
    Fault,
}

impl HealthState {
    pub fn as_str(self) -> &'static str {
        match self {
            HealthState::Unknown => "unknown",
            HealthState::Ok => "ok",
            HealthState::Warn => "warn",
            HealthState::Fault => "fault",
        }
    }
}

impl GpuSnapshot {
    /// The GPU's health in one word: its `gpu_fault` finding's severity, else ok where health
    /// was read.
    pub fn health_state(&self) -> HealthState {
        let fault = self
            .findings
            .iter()
            .filter(|f| f.kind == FindingKind::GpuFault)
            .map(|f| f.severity)
            .max();
        match fault {
            Some(Severity::High) => HealthState::Fault,
            Some(_) => HealthState::Warn,
            None if self.health.is_some() || !self.xids.is_empty() => HealthState::Ok,
            None => HealthState::Unknown,
        }
    }

    /// The GPU's health as parts of one line, most important first (`None` where nothing is
    /// known): XIDs, memory errors and remaps, PCIe replays, NVLink.
    pub fn health_parts(&self) -> Option<Vec<String>> {
        if self.health.is_none() && self.xids.is_empty() {
            return None;
        }
        let mut parts = vec![self.xid_part()];
        if let Some(h) = &self.health {
            match (
                h.ecc_enabled,
                h.ecc.volatile_uncorrected,
                h.ecc.volatile_corrected,
            ) {
                (Some(false), ..) => parts.push("ECC off".into()),
                (_, Some(u), Some(c)) => parts.push(format!("ECC {u} uncorr/{c} corr")),
                _ => {}
            }
            if let Some(r) = h.remapped_rows {
                if r.failed == Some(true) {
                    parts.push("row remap FAILED".into());
                } else if r.pending == Some(true) {
                    parts.push("remap pending: reset".into());
                } else if let (Some(c), Some(u)) = (r.correctable, r.uncorrectable) {
                    parts.push(format!("rows remapped {c}+{u}"));
                }
            }
            if let Some(p) = h.retired_pages.filter(|p| p.pending == Some(true)) {
                let n = p.single_bit.unwrap_or(0) + p.double_bit.unwrap_or(0);
                parts.push(format!("{n} pages retired, pending"));
            }
            if let Some(n) = h.pcie_replays {
                parts.push(format!("PCIe replays {n}"));
            }
            if !h.nvlinks.is_empty() {
                let up = h.nvlinks.iter().filter(|l| l.active == Some(true)).count();
                let mut s = format!("NVLink {up}/{} up", h.nvlinks.len());
                if let Some(b) = h.nvlink_bytes_per_s() {
                    s.push_str(&format!(" {:.0} GB/s", b / 1e9));
                }
                if let Some(e) = h.nvlink_errors().filter(|e| *e > 0) {
                    s.push_str(&format!(", {e} errors"));
                }
                parts.push(s);
            }
        }
        Some(parts)
    }

    /// The newest XID, or since when none came (XIDs before the watch began are unknown).
    fn xid_part(&self) -> String {
        if let Some(x) = self.xids.last() {
            return format!("XID {} at {}", x.xid, time_of_day_utc(x.t));
        }
        match self.health.as_ref().and_then(|h| h.xid_watch.as_ref()) {
            Some(XidWatch::Watching { since }) => {
                format!("no XID since {} (earlier unknown)", time_of_day_utc(*since))
            }
            Some(XidWatch::Unavailable { reason }) => format!("XIDs not watched: {reason}"),
            None => "XIDs not watched".into(),
        }
    }

    /// The health line: the state word, then the parts.
    pub fn health_line(&self) -> Option<String> {
        let parts = self.health_parts()?;
        Some(format!(
            "{} · {}",
            self.health_state().as_str(),
            parts.join(" · ")
        ))
    }
}
