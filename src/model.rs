//! The shared vocabulary: what a backend reports and what every front end reads.
//!
//! Every reading is an `Option`: a metric the hardware or the source does not support is `None`,
//! drawn as a gap and exported as absent, never as zero.

use serde::{Deserialize, Serialize};

mod finding;
mod health;
mod job;
mod mig;
mod xid;
pub use finding::{Evidence, Finding, FindingKind, Severity, Watch};
pub use health::{
    EccCounts, GpuHealth, NvLinkHealth, RemappedRows, RetiredPages, ThrottleCounters, ThrottleHeld,
    ThrottleReason, XidEvent, XidWatch,
};
pub use job::{Job, JobKind, Runtime};
pub use mig::{profile_from_name, MigReading};
pub use xid::{xid_info, XidAction, XidInfo};

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

/// How a source measured utilization: what one reading of it stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum UtilSampling {
    /// Every driver window in turn (NVML's sample buffer): none missed.
    #[default]
    DriverWindows,
    /// One reading per poll (an nvidia-smi log, rocm-smi, sysfs): a short burst of work that
    /// falls between two polls is never read.
    Polled,
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
    /// How the source measures this GPU's utilization.
    #[serde(default)]
    pub util_sampling: UtilSampling,
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
    /// The share of the time each clock event reason held the clocks down, from the driver's
    /// counters (read on their own period and carried between reads).
    #[serde(default, skip_serializing_if = "ThrottleHeld::is_empty")]
    pub throttle_held: ThrottleHeld,
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
    /// Kernel state letter of the process (`R` running, `S` sleeping, `D` waiting on disk, ...),
    /// where the host could read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<char>,
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
    /// The pod, container or Slurm job the process belongs to, where the node tells it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<Job>,
    /// What can be said of the job where it cannot be read (a process outside this container).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_note: Option<String>,
    /// The MIG GPU and compute instance the process runs in (MIG mode only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_instance_id: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_instance_id: Option<u32>,
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
    /// The health counters, on the ticks they were read (see [`GpuHealth`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<GpuHealth>,
    /// XID events that arrived since the previous tick, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub xids: Vec<XidEvent>,
    /// The GPU's MIG instances, in MIG mode (empty otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mig: Vec<MigReading>,
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
