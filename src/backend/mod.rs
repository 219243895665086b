//! Where readings come from. A backend never knows who reads it.
//!
//! Live backends ([`nvml`], [`sim`]) hand out one [`DeviceSampler`] per GPU; the
//! [`crate::sampler::Sampler`] runs each on its own thread so a call that hangs on one GPU cannot
//! stall the others or the screen. Recorded sources (replay, nvidia-smi CSV) implement
//! [`SampleSource`] and are fed through the same engine.

pub mod input;
pub mod nvml;
pub mod rocm;
pub mod sim;
pub mod smi_csv;
pub mod tick_times;

use std::fmt;

use crate::model::{GpuReading, Sample, SystemInfo, UnixTime, XidEvent};

/// Why one GPU could not be read this tick.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DeviceError {
    /// The GPU is gone (fell off the bus, driver reports it lost): marked lost until it answers again.
    #[error("GPU lost: {0}")]
    Lost(String),
    /// A call failed this time; the next tick tries again.
    #[error("{0}")]
    Transient(String),
}

/// Samples one GPU. Runs on its own thread; may block.
pub trait DeviceSampler: Send {
    fn index(&self) -> u32;
    /// Read every metric now. Unsupported metrics are `None`; only a failure of the device itself
    /// is an error.
    fn sample(&mut self, now: UnixTime) -> Result<GpuReading, DeviceError>;
    /// From now on, count what each kind of driver call costs (a benchmark asks; sources without
    /// driver calls count nothing).
    fn measure_calls(&mut self) {}
    /// What each kind of driver call cost since [`Self::measure_calls`], by name.
    fn call_costs(&self) -> Vec<(String, CallCost)> {
        Vec::new()
    }
    /// XID events that arrived since the last call (the sampler asks after every reading, a
    /// failed one too: an XID 79 comes as the GPU falls off the bus).
    fn take_events(&mut self) -> Vec<XidEvent> {
        Vec::new()
    }
}

/// The cost of one kind of driver call over a run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CallCost {
    pub calls: u32,
    /// Wall time, and this thread's CPU time, over all the calls (seconds).
    pub wall_s: f64,
    pub cpu_s: f64,
}

/// A live source of GPUs.
pub trait Backend: Send {
    fn system(&self) -> &SystemInfo;
    /// The per-GPU samplers, moved out to run on their own threads (called once).
    fn take_devices(&mut self) -> Vec<Box<dyn DeviceSampler>>;
}

/// A recorded source: samples with their recorded timestamps, read as fast as asked.
pub trait SampleSource {
    fn system(&self) -> &SystemInfo;
    /// The next sample, or `None` at the end.
    fn next_sample(&mut self) -> Option<Sample>;
    /// Problems met so far (skipped lines, a cut-off end), each naming where.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
    /// What the source took to be so without the file saying it (a log without clock times:
    /// the interval assumed), each said in the report.
    fn assumptions(&self) -> Vec<String> {
        Vec::new()
    }
    /// For a source read from a file: its data lines read so far and those skipped as unreadable.
    fn line_counts(&self) -> Option<LineCounts> {
        None
    }
}

/// Data lines of a file read so far: how many were read, how many skipped as unreadable, and the
/// first skipped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LineCounts {
    pub read: u64,
    pub skipped: u64,
    pub first_skipped: Option<u64>,
}

impl LineCounts {
    /// More lines skipped than read: what was read is more likely chance than data.
    pub fn mostly_unreadable(&self) -> bool {
        self.skipped > self.read
    }

    /// The share of data lines read, percent.
    pub fn read_percent(&self) -> f64 {
        let total = self.read + self.skipped;
        if total == 0 {
            100.0
        } else {
            self.read as f64 * 100.0 / total as f64
        }
    }
}

/// Which backend to use.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Deserialize, serde::Serialize,
)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// NVML if an NVIDIA driver answers, else AMD GPUs (amdgpu sysfs, then rocm-smi/amd-smi).
    Auto,
    /// NVIDIA's management library (libnvidia-ml.so.1), loaded at run time.
    Nvml,
    /// Simulated GPUs running named scenarios (no GPU needed).
    Sim,
    /// AMD GPUs: amdgpu sysfs every tick, rocm-smi (or amd-smi) every 2 s.
    Rocm,
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendKind::Auto => "auto",
            BackendKind::Nvml => "nvml",
            BackendKind::Sim => "sim",
            BackendKind::Rocm => "rocm",
        })
    }
}

/// No GPU backend could be opened: says what was tried (the command that failed adds what to do
/// instead).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct NoGpuError {
    pub message: String,
}

/// The machine's host name.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".to_string())
}

/// Open the backend the user asked for.
pub fn open(kind: BackendKind, sim: &sim::SimConfig) -> Result<Box<dyn Backend>, NoGpuError> {
    open_with(kind, sim, rocm::RocmOptions::default())
}

/// [`open`] with the AMD backend's sysfs root and `PATH` given (tests point them at fixtures).
pub fn open_with(
    kind: BackendKind,
    sim: &sim::SimConfig,
    rocm_opts: rocm::RocmOptions,
) -> Result<Box<dyn Backend>, NoGpuError> {
    match kind {
        BackendKind::Sim => Ok(Box::new(sim::SimBackend::new(sim.clone()))),
        BackendKind::Nvml => match nvml::NvmlBackend::open() {
            Ok(b) => Ok(Box::new(b)),
            Err(e) => Err(NoGpuError {
                message: format!(
                    "gpulse: no NVIDIA GPU could be opened.\n  tried: NVML (libnvidia-ml.so.1)\n  failed: {e}"
                ),
            }),
        },
        BackendKind::Rocm => match rocm::RocmBackend::open(rocm_opts) {
            Ok(b) => Ok(Box::new(b)),
            Err(e) => Err(NoGpuError {
                message: format!(
                    "gpulse: no AMD GPU could be opened.\n{}",
                    e.tried_lines()
                ),
            }),
        },
        BackendKind::Auto => {
            let nvml_err = match nvml::NvmlBackend::open() {
                Ok(b) => return Ok(Box::new(b)),
                Err(e) => e,
            };
            // The AMD side asks sysfs and, where sysfs shows no GPU, rocm-smi/amd-smi once.
            let amd_err = match rocm::RocmBackend::open(rocm_opts) {
                Ok(b) => return Ok(Box::new(b)),
                Err(e) => e,
            };
            Err(NoGpuError {
                message: format!(
                    "gpulse: no GPU could be opened.\n  tried: NVML (libnvidia-ml.so.1)\n  failed: {nvml_err}\n{}",
                    amd_err.tried_lines()
                ),
            })
        }
    }
}
