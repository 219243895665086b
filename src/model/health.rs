//! A GPU's health as the driver reports it: faults (XID events), memory errors (ECC, retired
//! pages, remapped rows), link errors (PCIe replays, NVLink) and the time each clock event
//! reason held the clocks down.
//!
//! Every figure is an `Option` (or an empty list): a GPU or driver without the counter reports
//! it absent, never 0. Counters are the driver's totals (since the driver loaded for volatile
//! ECC counts and the throttle counters, over the GPU's life for aggregate counts).

use serde::{Deserialize, Serialize};

use super::{throttle, UnixTime};

/// The clock event reasons whose time gpulse measures, in the order they are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThrottleReason {
    SwPowerCap,
    HwSlowdown,
    HwThermal,
    HwPowerBrake,
    SwThermal,
}

impl ThrottleReason {
    pub const ALL: [ThrottleReason; 5] = [
        ThrottleReason::SwPowerCap,
        ThrottleReason::HwSlowdown,
        ThrottleReason::HwThermal,
        ThrottleReason::HwPowerBrake,
        ThrottleReason::SwThermal,
    ];

    /// The bits of every reason.
    pub const ALL_BITS: u64 = throttle::SW_POWER_CAP
        | throttle::HW_SLOWDOWN
        | throttle::HW_THERMAL_SLOWDOWN
        | throttle::HW_POWER_BRAKE_SLOWDOWN
        | throttle::SW_THERMAL_SLOWDOWN;

    /// The snake_case name (the exporter's `reason` label).
    pub fn as_str(self) -> &'static str {
        match self {
            ThrottleReason::SwPowerCap => "sw_power_cap",
            ThrottleReason::HwSlowdown => "hw_slowdown",
            ThrottleReason::HwThermal => "hw_thermal",
            ThrottleReason::HwPowerBrake => "hw_power_brake",
            ThrottleReason::SwThermal => "sw_thermal",
        }
    }

    /// The words people know it by (those of [`throttle::NAMES`]).
    pub fn words(self) -> &'static str {
        match self {
            ThrottleReason::SwPowerCap => "power cap",
            ThrottleReason::HwSlowdown => "HW slowdown",
            ThrottleReason::HwThermal => "HW thermal",
            ThrottleReason::HwPowerBrake => "power brake",
            ThrottleReason::SwThermal => "SW thermal",
        }
    }

    /// NVML's clock event bit of the reason.
    pub fn bit(self) -> u64 {
        match self {
            ThrottleReason::SwPowerCap => throttle::SW_POWER_CAP,
            ThrottleReason::HwSlowdown => throttle::HW_SLOWDOWN,
            ThrottleReason::HwThermal => throttle::HW_THERMAL_SLOWDOWN,
            ThrottleReason::HwPowerBrake => throttle::HW_POWER_BRAKE_SLOWDOWN,
            ThrottleReason::SwThermal => throttle::SW_THERMAL_SLOWDOWN,
        }
    }

    /// The reasons that hold a GPU back beyond the normal power management (the power cap is
    /// where a busy GPU runs: an H200 at its limit sits there).
    pub fn serious(self) -> bool {
        self != ThrottleReason::SwPowerCap
    }

    fn slot(self) -> usize {
        self as usize
    }
}

/// Per reason, the share (0–1) of the time between the last two reads of the driver's
/// counters during which the reason held the clocks down: a rate, carried between reads like
/// the other slow readings. Absent where the driver has no counter for the reason (NVML counts
/// no HW slowdown as such: its bit says when it is set).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ThrottleHeld {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sw_power_cap: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hw_slowdown: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hw_thermal: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hw_power_brake: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sw_thermal: Option<f32>,
}

impl ThrottleHeld {
    pub fn get(&self, r: ThrottleReason) -> Option<f32> {
        match r {
            ThrottleReason::SwPowerCap => self.sw_power_cap,
            ThrottleReason::HwSlowdown => self.hw_slowdown,
            ThrottleReason::HwThermal => self.hw_thermal,
            ThrottleReason::HwPowerBrake => self.hw_power_brake,
            ThrottleReason::SwThermal => self.sw_thermal,
        }
    }

    pub fn set(&mut self, r: ThrottleReason, share: Option<f32>) {
        let v = share.map(|s| s.clamp(0.0, 1.0));
        match r {
            ThrottleReason::SwPowerCap => self.sw_power_cap = v,
            ThrottleReason::HwSlowdown => self.hw_slowdown = v,
            ThrottleReason::HwThermal => self.hw_thermal = v,
            ThrottleReason::HwPowerBrake => self.hw_power_brake = v,
            ThrottleReason::SwThermal => self.sw_thermal = v,
        }
    }

    /// A serious reason held the clocks: its bit set in `bits`, or its counter above 0.
    #[inline]
    pub fn any_serious(&self, bits: Option<u64>) -> bool {
        bits.is_some_and(|b| b & throttle::SERIOUS != 0)
            || [
                self.hw_slowdown,
                self.hw_thermal,
                self.hw_power_brake,
                self.sw_thermal,
            ]
            .into_iter()
            .any(|s| s.is_some_and(|s| s > 0.0))
    }

    /// No reason measured.
    pub fn is_empty(&self) -> bool {
        ThrottleReason::ALL.iter().all(|r| self.get(*r).is_none())
    }

    /// The share of the tick reason `r` held the clocks: its counter where the driver counts it,
    /// else 1 when its bit is set in `bits` and 0 when not; absent with neither.
    pub fn share(&self, r: ThrottleReason, bits: Option<u64>) -> Option<f64> {
        self.get(r)
            .map(f64::from)
            .or_else(|| bits.map(|b| if b & r.bit() != 0 { 1.0 } else { 0.0 }))
    }
}

/// The driver's throttle counters: nanoseconds each reason has held the clocks since the
/// driver loaded. Written as an object of the reasons counted (`{"sw_power_cap": 1200, ...}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ThrottleCounters {
    ns: [Option<u64>; 5],
}

impl Serialize for ThrottleCounters {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let counted: Vec<(ThrottleReason, u64)> = ThrottleReason::ALL
            .into_iter()
            .filter_map(|r| self.get(r).map(|ns| (r, ns)))
            .collect();
        let mut map = s.serialize_map(Some(counted.len()))?;
        for (r, ns) in counted {
            map.serialize_entry(r.as_str(), &ns)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for ThrottleCounters {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = std::collections::BTreeMap::<ThrottleReason, u64>::deserialize(d)?;
        let mut out = ThrottleCounters::default();
        for (r, ns) in map {
            out.set(r, Some(ns));
        }
        Ok(out)
    }
}

impl ThrottleCounters {
    pub fn get(&self, r: ThrottleReason) -> Option<u64> {
        self.ns[r.slot()]
    }

    pub fn set(&mut self, r: ThrottleReason, ns: Option<u64>) {
        self.ns[r.slot()] = ns;
    }

    pub fn is_empty(&self) -> bool {
        self.ns.iter().all(Option::is_none)
    }
}

/// ECC error counts: volatile (since the driver loaded) and aggregate (over the GPU's life).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct EccCounts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volatile_corrected: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volatile_uncorrected: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregate_corrected: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregate_uncorrected: Option<u64>,
}

/// Pages retired after memory errors (before Ampere; later GPUs remap rows instead).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RetiredPages {
    #[serde(default)]
    pub single_bit: Option<u64>,
    #[serde(default)]
    pub double_bit: Option<u64>,
    /// Pages waiting for the next driver reload to be retired.
    #[serde(default)]
    pub pending: Option<bool>,
}

/// Rows of memory remapped after errors (Ampere and newer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RemappedRows {
    #[serde(default)]
    pub correctable: Option<u64>,
    #[serde(default)]
    pub uncorrectable: Option<u64>,
    /// A remap waits for the next GPU reset to take effect.
    #[serde(default)]
    pub pending: Option<bool>,
    /// A remap failed: the GPU has no spare row left where it needed one.
    #[serde(default)]
    pub failed: Option<bool>,
}

/// One NVLink link: its state, its error counters and its throughput.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct NvLinkHealth {
    pub link: u32,
    #[serde(default)]
    pub active: Option<bool>,
    #[serde(default)]
    pub version: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crc_flit_errors: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crc_data_errors: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_errors: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_errors: Option<u64>,
    /// Data received and sent, bytes per second, from the driver's byte counters between its
    /// last two reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_bytes_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_bytes_per_s: Option<f64>,
}

impl NvLinkHealth {
    /// Errors of every kind the link counts, absent when it counts none.
    pub fn errors(&self) -> Option<u64> {
        [
            self.crc_flit_errors,
            self.crc_data_errors,
            self.replay_errors,
            self.recovery_errors,
        ]
        .into_iter()
        .flatten()
        .reduce(|a, b| a.saturating_add(b))
    }
}

/// Whether XID events are being watched: only those since the watch began are known.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum XidWatch {
    /// Watched since `since`; XIDs before it are unknown.
    Watching { since: UnixTime },
    /// Not watched, and why (the driver refused the event set, its thread stopped).
    Unavailable { reason: String },
}

/// One XID event: a fault the driver reported, and when it arrived.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct XidEvent {
    pub t: UnixTime,
    /// NVML reports 999 for an XID it could not name.
    pub xid: u64,
}

/// A GPU's health counters at one read (read on their own period, not every tick).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct GpuHealth {
    /// When these counters were read.
    pub t: UnixTime,
    /// ECC mode as the GPU runs now (absent on GPUs without ECC).
    #[serde(default)]
    pub ecc_enabled: Option<bool>,
    #[serde(default)]
    pub ecc: EccCounts,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retired_pages: Option<RetiredPages>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remapped_rows: Option<RemappedRows>,
    /// PCIe replays (a link retrying packets) since the driver loaded.
    #[serde(default)]
    pub pcie_replays: Option<u64>,
    /// One entry per NVLink link; empty where the GPU has no NVLink.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nvlinks: Vec<NvLinkHealth>,
    #[serde(default, skip_serializing_if = "ThrottleCounters::is_empty")]
    pub throttle_ns: ThrottleCounters,
    /// Whether XID events are watched (absent where the source does not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xid_watch: Option<XidWatch>,
}

impl GpuHealth {
    /// Total bytes per second over every NVLink link (absent without a throughput reading).
    pub fn nvlink_bytes_per_s(&self) -> Option<f64> {
        self.nvlinks
            .iter()
            .flat_map(|l| [l.rx_bytes_per_s, l.tx_bytes_per_s])
            .flatten()
            .reduce(|a, b| a + b)
    }

    /// NVLink errors of every link (absent without an error counter).
    pub fn nvlink_errors(&self) -> Option<u64> {
        self.nvlinks
            .iter()
            .filter_map(NvLinkHealth::errors)
            .reduce(|a, b| a.saturating_add(b))
    }

    /// Uncorrectable errors of any kind: ECC (volatile), rows remapped for them.
    pub fn uncorrectable(&self) -> Option<u64> {
        let rows = self.remapped_rows.and_then(|r| r.uncorrectable);
        let pages = self.retired_pages.and_then(|p| p.double_bit);
        [self.ecc.volatile_uncorrected, rows, pages]
            .into_iter()
            .flatten()
            .reduce(|a, b| a.saturating_add(b))
    }

    /// Remaps (or page retirements) waiting for a reset.
    pub fn pending_repair(&self) -> bool {
        self.remapped_rows.and_then(|r| r.pending) == Some(true)
            || self.retired_pages.and_then(|p| p.pending) == Some(true)
    }

    /// A row remap failed.
    pub fn remap_failed(&self) -> bool {
        self.remapped_rows.and_then(|r| r.failed) == Some(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_without_a_counter_is_measured_by_its_bit() {
        let mut held = ThrottleHeld::default();
        assert!(held.is_empty());
        held.set(ThrottleReason::HwThermal, Some(0.4));
        let bits = Some(throttle::HW_SLOWDOWN | throttle::HW_THERMAL_SLOWDOWN);
        assert_eq!(
            held.share(ThrottleReason::HwThermal, bits),
            Some(0.4000000059604645)
        );
        assert_eq!(held.share(ThrottleReason::HwSlowdown, bits), Some(1.0));
        assert_eq!(held.share(ThrottleReason::SwThermal, bits), Some(0.0));
        assert_eq!(held.share(ThrottleReason::SwThermal, None), None);
        held.set(ThrottleReason::SwPowerCap, Some(1.7));
        assert_eq!(held.sw_power_cap, Some(1.0), "clamped to a share");
    }

    #[test]
    fn absent_counters_sum_to_absent_not_zero() {
        let h = GpuHealth::default();
        assert_eq!(h.uncorrectable(), None);
        assert_eq!(h.nvlink_bytes_per_s(), None);
        assert_eq!(h.nvlink_errors(), None);
        let h = GpuHealth {
            ecc: EccCounts {
                volatile_uncorrected: Some(2),
                ..Default::default()
            },
            remapped_rows: Some(RemappedRows {
                uncorrectable: Some(1),
                pending: Some(true),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(h.uncorrectable(), Some(3));
        assert!(h.pending_repair() && !h.remap_failed());
    }

    #[test]
    fn throttle_counters_are_written_by_reason() {
        let mut c = ThrottleCounters::default();
        c.set(ThrottleReason::HwThermal, Some(42));
        c.set(ThrottleReason::SwPowerCap, Some(7));
        let text = serde_json::to_string(&c).unwrap();
        assert_eq!(text, r#"{"sw_power_cap":7,"hw_thermal":42}"#);
        assert_eq!(serde_json::from_str::<ThrottleCounters>(&text).unwrap(), c);
    }

    #[test]
    fn xid_events_read_back_as_written() {
        let e = XidEvent {
            t: 1_796_224_289.111,
            xid: 79,
        };
        let text = serde_json::to_string(&e).unwrap();
        assert_eq!(text, r#"{"t":1796224289.111,"xid":79}"#);
        assert_eq!(serde_json::from_str::<XidEvent>(&text).unwrap(), e);
    }
}
