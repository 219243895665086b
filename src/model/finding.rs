//! The detector's vocabulary: what a finding is, how bad, on what evidence, and the verdicts.

use serde::{Deserialize, Serialize};

use super::UnixTime;

/// The detector's vocabulary: the kinds of finding and the verdicts of a GPU. A verdict is the
/// kind of the GPU's most important finding, or, without one, one of the verdicts that are no
/// finding: `pending` (too little data of the current job to judge), `idle`, `healthy`, and
/// `stalling` (stalls seen, their cause not named yet). These strings are also the JSON and
/// Prometheus vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    Idle,
    Healthy,
    InputStarvation,
    ErraticStalls,
    HostBound,
    PeriodicStall,
    BusyButIdle,
    TransferBound,
    MemoryIdle,
    MemoryPressure,
    Throttled,
    PcieDegraded,
    SingleGpuBusy,
    Imbalance,
    Pending,
    Stalling,
    TensorCoresIdle,
    GpuFault,
}

impl FindingKind {
    pub const ALL: [FindingKind; 18] = [
        FindingKind::Idle,
        FindingKind::Healthy,
        FindingKind::InputStarvation,
        FindingKind::ErraticStalls,
        FindingKind::HostBound,
        FindingKind::PeriodicStall,
        FindingKind::BusyButIdle,
        FindingKind::TransferBound,
        FindingKind::MemoryIdle,
        FindingKind::MemoryPressure,
        FindingKind::Throttled,
        FindingKind::PcieDegraded,
        FindingKind::SingleGpuBusy,
        FindingKind::Imbalance,
        FindingKind::Pending,
        FindingKind::Stalling,
        FindingKind::TensorCoresIdle,
        FindingKind::GpuFault,
    ];

    /// The verdicts that are no finding: the detector never raises them.
    pub const VERDICTS_ONLY: [FindingKind; 4] = [
        FindingKind::Pending,
        FindingKind::Idle,
        FindingKind::Healthy,
        FindingKind::Stalling,
    ];

    /// The snake_case name (`input_starvation`).
    pub fn as_str(self) -> &'static str {
        match self {
            FindingKind::Idle => "idle",
            FindingKind::Healthy => "healthy",
            FindingKind::InputStarvation => "input_starvation",
            FindingKind::ErraticStalls => "erratic_stalls",
            FindingKind::HostBound => "host_bound",
            FindingKind::PeriodicStall => "periodic_stall",
            FindingKind::BusyButIdle => "busy_but_idle",
            FindingKind::TransferBound => "transfer_bound",
            FindingKind::MemoryIdle => "memory_idle",
            FindingKind::MemoryPressure => "memory_pressure",
            FindingKind::Throttled => "throttled",
            FindingKind::PcieDegraded => "pcie_degraded",
            FindingKind::SingleGpuBusy => "single_gpu_busy",
            FindingKind::Imbalance => "imbalance",
            FindingKind::Pending => "pending",
            FindingKind::Stalling => "stalling",
            FindingKind::TensorCoresIdle => "tensor_cores_idle",
            FindingKind::GpuFault => "gpu_fault",
        }
    }

    /// Words for people ("input starvation").
    pub fn title(self) -> &'static str {
        match self {
            FindingKind::Idle => "idle",
            FindingKind::Healthy => "healthy",
            FindingKind::InputStarvation => "input starvation",
            FindingKind::ErraticStalls => "erratic stalls",
            FindingKind::HostBound => "host bound",
            FindingKind::PeriodicStall => "periodic stall",
            FindingKind::BusyButIdle => "busy but idle",
            FindingKind::TransferBound => "transfer bound",
            FindingKind::MemoryIdle => "memory held idle",
            FindingKind::MemoryPressure => "memory pressure",
            FindingKind::Throttled => "throttled",
            FindingKind::PcieDegraded => "PCIe link degraded",
            FindingKind::SingleGpuBusy => "single GPU busy",
            FindingKind::Imbalance => "imbalance",
            FindingKind::Pending => "no verdict yet",
            FindingKind::Stalling => "stalling",
            FindingKind::TensorCoresIdle => "tensor cores idle",
            FindingKind::GpuFault => "GPU fault",
        }
    }

    /// How bad the kind is as a verdict: information for `pending`, `idle`, `healthy` and
    /// `tensor_cores_idle` (a busy GPU that could run faster, not one losing time), high
    /// for the hardware and memory findings that threaten the job (`throttled`,
    /// `memory_pressure`, `gpu_fault`), a warning for the others. A finding carries its own severity, which
    /// may differ (a short periodic stall is information).
    pub fn severity(self) -> Severity {
        match self {
            FindingKind::Pending
            | FindingKind::Idle
            | FindingKind::Healthy
            | FindingKind::TensorCoresIdle => Severity::Info,
            FindingKind::MemoryPressure | FindingKind::Throttled | FindingKind::GpuFault => {
                Severity::High
            }
            _ => Severity::Warn,
        }
    }

    pub fn parse(s: &str) -> Option<FindingKind> {
        FindingKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

impl std::fmt::Display for FindingKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warn,
    High,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warn => "warn",
            Severity::High => "high",
        }
    }
}

/// Evidence numbers behind a finding; only those that apply are present.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Evidence {
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub period_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub dip_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub lost_fraction: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub speedup_bound: Option<f64>,
    /// 0..=1.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub confidence: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cycles: Option<u32>,
    /// Other signal values that triggered the rule, by name (e.g. `"sm_active": 8.0`).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty", default)]
    pub signals: std::collections::BTreeMap<String, f64>,
    /// Host-side evidence in words (e.g. "4 DataLoader workers, all near 100% CPU").
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub notes: Vec<String>,
    /// The single most specific change to make, with the evidence for it, in one short line
    /// ("num_workers 4→8: 4 workers at 100% CPU, 11 cores idle"); absent where the host shows
    /// nothing more specific than the advice.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub fix: Option<String>,
    /// The job on the GPU when the finding was raised, in words (`pod train-7f9c/ml-team`):
    /// the job that shows the pattern; absent where no process on the GPU has one.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub job: Option<String>,
}

/// What the detector sees on a GPU without a finding (busy, or idle while a process holds its
/// memory) whose work stops and starts: stalls in the last `span_s` seconds that are not (yet) a
/// finding (too few, or no pattern yet). While it is shown the GPU's verdict is `stalling`, so a
/// job that is starving before it is named never reads as healthy.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Watch {
    /// Stalls (utilization below half the busy level) that began in the span.
    pub stalls: u32,
    /// Share of the span spent in them.
    pub stalled_fraction: f64,
    pub span_s: f64,
}

impl Watch {
    /// One line in words.
    pub fn text(&self) -> String {
        format!(
            "{} stalls in the last {:.0} s, {:.0}% of the time stalled, no pattern yet",
            self.stalls,
            self.span_s,
            100.0 * self.stalled_fraction
        )
    }
}

/// A named bottleneck on one GPU over a span of time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub kind: FindingKind,
    pub severity: Severity,
    pub gpu: u32,
    pub start: UnixTime,
    /// `None` while ongoing.
    pub end: Option<UnixTime>,
    /// When the live detector first raised it.
    pub detected_at: UnixTime,
    #[serde(flatten)]
    pub evidence: Evidence,
    /// One line of what was seen ("idle ~1.1 s every 1.7 s, 64% of time lost").
    pub summary: String,
    /// What to do about it.
    pub advice: String,
}

impl Finding {
    pub fn is_active(&self) -> bool {
        self.end.is_none()
    }
}
