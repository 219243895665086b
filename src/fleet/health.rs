//! GPU health as dcgm-exporter (any version) and `gpulse serve` export it: the last XID,
//! uncorrectable ECC errors, a failed or pending row remap. Read under both of dcgm-exporter's
//! namings, so the fleet ranks sick GPUs first whichever exporter serves them.

use serde::Serialize;

use super::api::Series;
use crate::model::xid_info;

/// The health series asked in one instant query, under the names up to dcgm-exporter 4.8 and
/// those of 4.10 and later.
pub const HEALTH_SERIES: [(&str, HealthField); 6] = [
    ("DCGM_FI_DEV_XID_ERRORS", HealthField::LastXid),
    ("DCGM_FI_DEV_XID_ERROR", HealthField::LastXid),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", HealthField::Uncorrectable),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", HealthField::RemapFailed),
    ("DCGM_FI_DEV_ROW_REMAP_FAILED", HealthField::RemapFailed),
    ("DCGM_FI_DEV_ROW_REMAP_PENDING", HealthField::RemapPending),
];

/// Which figure a health series gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HealthField {
    LastXid,
    Uncorrectable,
    RemapFailed,
    RemapPending,
}

/// The PromQL of the health query: every health series by name.
pub fn health_promql() -> String {
    let names: Vec<&str> = HEALTH_SERIES.iter().map(|(n, _)| *n).collect();
    format!("{{__name__=~\"{}\"}}", names.join("|"))
}

/// One GPU's health as its exporter publishes it; each figure absent where not exported.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct FleetHealth {
    /// The last XID (0: none since the exporter's watch began).
    pub last_xid: Option<u64>,
    /// Uncorrectable ECC errors since the driver loaded.
    pub uncorrectable_errors: Option<u64>,
    pub remap_failed: Option<bool>,
    pub remap_pending: Option<bool>,
}

impl FleetHealth {
    /// Take in one series of the health query.
    pub fn take(&mut self, s: &Series) {
        let Some(field) = s
            .label("__name__")
            .and_then(|n| HEALTH_SERIES.iter().find(|(name, _)| *name == n))
            .map(|(_, f)| *f)
        else {
            return;
        };
        let Some(v) = s.last_value().filter(|v| v.is_finite() && *v >= 0.0) else {
            return;
        };
        match field {
            HealthField::LastXid => self.last_xid = Some(v as u64),
            HealthField::Uncorrectable => self.uncorrectable_errors = Some(v as u64),
            HealthField::RemapFailed => self.remap_failed = Some(v > 0.0),
            HealthField::RemapPending => self.remap_pending = Some(v > 0.0),
        }
    }

    /// 2 for a fault (an XID, uncorrectable errors, a failed remap), 1 for a warning (a remap
    /// waiting for a reset), 0 otherwise.
    pub fn level(&self) -> u8 {
        if self.last_xid.is_some_and(|x| x > 0)
            || self.uncorrectable_errors.is_some_and(|n| n > 0)
            || self.remap_failed == Some(true)
        {
            2
        } else if self.remap_pending == Some(true) {
            1
        } else {
            0
        }
    }

    /// What is wrong and what to do, in words (nothing for a healthy GPU).
    pub fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(x) = self.last_xid.filter(|x| *x > 0) {
            let info = xid_info(x);
            out.push(format!(
                "last XID {x}: {}; {}",
                info.meaning,
                info.action.text()
            ));
        }
        if let Some(n) = self.uncorrectable_errors.filter(|n| *n > 0) {
            out.push(format!(
                "{n} uncorrectable ECC error(s) since the driver loaded: drain the node and reset the GPU"
            ));
        }
        if self.remap_failed == Some(true) {
            out.push("a row remap failed: drain the node and RMA the GPU".into());
        } else if self.remap_pending == Some(true) {
            out.push(
                "remapped rows wait for a reset: reset the GPU to apply pending remaps".into(),
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_namings_are_asked_and_a_fault_outranks_a_pending_remap() {
        let q = health_promql();
        assert!(
            q.contains("DCGM_FI_DEV_XID_ERRORS|DCGM_FI_DEV_XID_ERROR|"),
            "{q}"
        );
        let mut h = FleetHealth::default();
        assert_eq!(h.level(), 0);
        h.remap_pending = Some(true);
        assert_eq!(h.level(), 1);
        h.last_xid = Some(79);
        assert_eq!(h.level(), 2);
        let notes = h.notes();
        assert!(
            notes[0].starts_with("last XID 79: GPU has fallen off the bus"),
            "{notes:?}"
        );
        assert!(notes[1].contains("reset the GPU to apply pending remaps"));
        // No XID since the watch began is healthy.
        let quiet = FleetHealth {
            last_xid: Some(0),
            ..Default::default()
        };
        assert_eq!(quiet.level(), 0);
        assert!(quiet.notes().is_empty());
    }
}
