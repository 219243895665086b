//! The shared vocabulary: what a backend reports and what every front end reads.
//!
//! Every reading is an `Option`: a metric the hardware or the source does not support is `None`,
//! drawn as a gap and exported as absent, never as zero.

use serde::{Deserialize, Serialize};

/// Seconds since the Unix epoch, as a float (the clock every source is mapped onto).
pub type UnixTime = f64;

/// Who made the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Vendor {
    #[default]
    Nvidia,
    Amd,
    Unknown,
}

/// Facts about one GPU that do not change while it is watched; read once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct DeviceInfo {
    pub index: u32,
    pub name: String,
    #[serde(default)]
    pub vendor: Vendor,
    #[serde(default)]
    pub uuid: Option<String>,
    #[serde(default)]
    pub bus_id: Option<String>,
    #[serde(default)]
    pub architecture: Option<String>,
    #[serde(default)]
    pub memory_total_bytes: Option<u64>,
    #[serde(default)]
    pub power_limit_watts: Option<f64>,
    #[serde(default)]
    pub power_default_limit_watts: Option<f64>,
    #[serde(default)]
    pub power_max_limit_watts: Option<f64>,
    #[serde(default)]
    pub sm_clock_max_mhz: Option<u32>,
    #[serde(default)]
    pub mem_clock_max_mhz: Option<u32>,
    #[serde(default)]
    pub pcie_gen_max: Option<u32>,
    #[serde(default)]
    pub pcie_width_max: Option<u32>,
    #[serde(default)]
    pub temperature_slowdown_c: Option<f64>,
    /// Whether the GPU has fans at all (a fanless data-centre card reports no fan, not 0%).
    #[serde(default)]
    pub has_fan: Option<bool>,
    /// GPM (Hopper and newer): SM activity, tensor activity, DRAM bandwidth, PCIe from GPM.
    #[serde(default)]
    pub gpm_supported: bool,
}

/// Facts about the machine and the driver, read once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SystemInfo {
    pub hostname: String,
    /// Which backend produced the data: "nvml", "sim", "rocm", "replay", "nvidia-smi-csv".
    pub backend: String,
    #[serde(default)]
    pub driver_version: Option<String>,
    #[serde(default)]
    pub cuda_version: Option<String>,
    #[serde(default)]
    pub nvml_version: Option<String>,
    pub devices: Vec<DeviceInfo>,
}

/// The state of one GPU's sampling at one tick.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum GpuStatus {
    /// The reading was taken this tick.
    #[default]
    Ok,
    /// The last call has not answered within the tick; readings are absent this tick.
    Stale { since: UnixTime },
    /// The GPU stopped answering (fell off the bus, unknown error).
    Lost { reason: String },
}

/// One driver utilization window (NVML's sample buffer): the share of that window in which a kernel ran.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct UtilWindow {
    /// End of the window, on the wall clock.
    pub t: UnixTime,
    /// Percent, 0..=100.
    pub util: f64,
}

/// Clock event ("throttle") reasons, with NVML's bit values.
pub mod throttle {
    pub const GPU_IDLE: u64 = 0x1;
    pub const APPLICATIONS_CLOCKS_SETTING: u64 = 0x2;
    pub const SW_POWER_CAP: u64 = 0x4;
    pub const HW_SLOWDOWN: u64 = 0x8;
    pub const SYNC_BOOST: u64 = 0x10;
    pub const SW_THERMAL_SLOWDOWN: u64 = 0x20;
    pub const HW_THERMAL_SLOWDOWN: u64 = 0x40;
    pub const HW_POWER_BRAKE_SLOWDOWN: u64 = 0x80;
    pub const DISPLAY_CLOCK_SETTING: u64 = 0x100;

    /// Each bit with the words people know it by.
    pub const NAMES: &[(u64, &str)] = &[
        (GPU_IDLE, "idle"),
        (APPLICATIONS_CLOCKS_SETTING, "app clocks"),
        (SW_POWER_CAP, "power cap"),
        (HW_SLOWDOWN, "HW slowdown"),
        (SYNC_BOOST, "sync boost"),
        (SW_THERMAL_SLOWDOWN, "SW thermal"),
        (HW_THERMAL_SLOWDOWN, "HW thermal"),
        (HW_POWER_BRAKE_SLOWDOWN, "power brake"),
        (DISPLAY_CLOCK_SETTING, "display clocks"),
    ];

    /// Reasons that mean the hardware is being held back (not the normal power-cap management).
    pub const SERIOUS: u64 =
        HW_SLOWDOWN | SW_THERMAL_SLOWDOWN | HW_THERMAL_SLOWDOWN | HW_POWER_BRAKE_SLOWDOWN;

    /// The set bits in words, e.g. `["power cap", "HW thermal"]`.
    pub fn words(bits: u64) -> Vec<&'static str> {
        NAMES
            .iter()
            .filter(|(b, _)| bits & b != 0)
            .map(|(_, n)| *n)
            .collect()
    }
}

/// Scalar readings of one GPU at one tick. Small and `Copy`: this is what history keeps.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Metrics {
    /// Percent of the last driver window with a kernel resident.
    pub util_gpu: Option<f64>,
    /// Percent of the last window in which device memory was read or written.
    pub util_mem: Option<f64>,
    pub mem_used_bytes: Option<u64>,
    pub mem_total_bytes: Option<u64>,
    pub power_w: Option<f64>,
    pub power_limit_w: Option<f64>,
    pub temp_c: Option<f64>,
    pub sm_clock_mhz: Option<u32>,
    pub mem_clock_mhz: Option<u32>,
    pub fan_pct: Option<u32>,
    pub pstate: Option<u32>,
    pub pcie_gen: Option<u32>,
    pub pcie_width: Option<u32>,
    pub pcie_rx_bytes_per_s: Option<f64>,
    pub pcie_tx_bytes_per_s: Option<f64>,
    /// GPM SM activity, percent.
    pub sm_active: Option<f64>,
    /// GPM SM occupancy, percent.
    pub sm_occupancy: Option<f64>,
    /// GPM tensor-core activity, percent.
    pub tensor_active: Option<f64>,
    /// GPM DRAM bandwidth utilization, percent.
    pub dram_active: Option<f64>,
    /// Clock event reasons bitmask (see [`throttle`]).
    pub throttle: Option<u64>,
    /// The GPU's energy counter, joules (NVML's total energy since the driver loaded; amdgpu's
    /// hwmon `energy1_input`). Only differences between two readings mean anything; it is read
    /// on its own period and carried between reads.
    #[serde(default)]
    pub energy_j: Option<f64>,
}

/// What kind of GPU context a process holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ProcessKind {
    #[default]
    Compute,
    Graphics,
}

/// A process using a GPU, as the backend reports it, enriched from the host where possible.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct GpuProcess {
    pub pid: u32,
    #[serde(default)]
    pub kind: ProcessKind,
    #[serde(default)]
    pub user: Option<String>,
    #[serde(default)]
    pub gpu_memory_bytes: Option<u64>,
    /// Per-process SM utilization, percent (absent where unsupported).
    #[serde(default)]
    pub sm_util: Option<f64>,
    /// Per-process memory-bandwidth utilization, percent.
    #[serde(default)]
    pub mem_util: Option<f64>,
    #[serde(default)]
    pub cpu_percent: Option<f64>,
    #[serde(default)]
    pub rss_bytes: Option<u64>,
    #[serde(default)]
    pub running_s: Option<f64>,
    #[serde(default)]
    pub command: Option<String>,
    /// False when the PID could not be found on this host (e.g. inside a container).
    #[serde(default = "default_true")]
    pub resolved: bool,
    /// This process's PID as seen here, when it differs from `pid` (NVML reports host PIDs; inside
    /// a container the same process has another PID).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_pid: Option<u32>,
    /// The PID inside the process's own (innermost) PID namespace, when it differs from `pid`
    /// (e.g. `7` for a job running in a container, seen from the host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_pid: Option<u32>,
    /// Host processes started by this one (DataLoader workers are children of the training process).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<HostProcess>,
    /// When the process (at its PID here) started, in clock ticks after boot: with the PID it
    /// names one process, so a signal is never sent to another that reused the PID. Known only
    /// for this machine's processes; not written out (it means nothing elsewhere).
    #[serde(skip)]
    pub start_ticks: Option<u64>,
}

/// A host process without a GPU context of its own (e.g. a DataLoader worker).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct HostProcess {
    pub pid: u32,
    #[serde(default)]
    pub ppid: Option<u32>,
    #[serde(default)]
    pub cpu_percent: Option<f64>,
    /// Kernel state letter: `R` running, `S` sleeping, `D` waiting on disk, ...
    #[serde(default)]
    pub state: Option<char>,
    #[serde(default)]
    pub rss_bytes: Option<u64>,
    #[serde(default)]
    pub command: Option<String>,
    /// When the process started, in clock ticks after boot (see [`GpuProcess::start_ticks`]).
    #[serde(skip)]
    pub start_ticks: Option<u64>,
}

fn default_true() -> bool {
    true
}

/// One GPU's readings at one tick.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct GpuReading {
    pub index: u32,
    #[serde(default)]
    pub status: GpuStatus,
    #[serde(flatten)]
    pub metrics: Metrics,
    /// Driver utilization windows completed since the previous tick, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub util_windows: Vec<UtilWindow>,
    #[serde(default)]
    pub processes: Vec<GpuProcess>,
}

impl GpuReading {
    /// A reading with every metric absent.
    pub fn empty(index: u32, status: GpuStatus) -> Self {
        GpuReading {
            index,
            status,
            ..Default::default()
        }
    }
}

/// Whole-host figures that give context to the GPU readings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct HostReading {
    /// Whole-machine CPU busy, percent of all cores.
    pub cpu_percent: Option<f64>,
    pub cpu_count: Option<u32>,
    pub memory_used_bytes: Option<u64>,
    pub memory_total_bytes: Option<u64>,
    pub load1: Option<f64>,
    pub iowait_percent: Option<f64>,
}

/// Host figures that do not fit the small `Copy` [`HostReading`] (the host panel's detail).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct HostDetail {
    /// Busy percent of each core since the previous tick, in `/proc/stat` order (`cpu0`, `cpu1`, ...).
    /// Empty before the second reading or when the host is not read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_core_percent: Vec<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load5: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load15: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap_used_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap_total_bytes: Option<u64>,
}

/// Everything read at one tick.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Sample {
    pub t: UnixTime,
    pub gpus: Vec<GpuReading>,
    #[serde(default)]
    pub host: HostReading,
    /// Per-core CPU and other host-panel detail.
    #[serde(default)]
    pub host_detail: HostDetail,
    /// Wall time the sampler spent on this tick, seconds (the monitor's own cost).
    #[serde(default)]
    pub sample_duration_s: Option<f64>,
}

/// The detector's vocabulary; these strings are also the JSON and Prometheus vocabulary.
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
}

impl FindingKind {
    pub const ALL: [FindingKind; 14] = [
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
}

/// What the detector sees on a GPU without a finding (healthy, or idle while a process holds its
/// memory) whose work stops and starts: stalls in the last `span_s` seconds that are not (yet) a
/// finding (too few, or no pattern yet). Shown so a job that is starving before it is named does
/// not read as merely healthy.
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
