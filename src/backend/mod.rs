//! Where readings come from. A backend never knows who reads it.
//!
//! Live backends ([`nvml`], [`sim`]) hand out one [`DeviceSampler`] per GPU; the
//! [`crate::sampler::Sampler`] runs each on its own thread so a call that hangs on one GPU cannot
//! stall the others or the screen. Recorded sources (replay, nvidia-smi CSV) implement
//! [`SampleSource`] and are fed through the same engine.

pub mod nvml;
pub mod replay;
pub mod sim;
pub mod smi_csv;

use std::fmt;

use crate::model::{GpuReading, Sample, SystemInfo, UnixTime};

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
}

/// Which backend to use.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Deserialize, serde::Serialize,
)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// NVML if an NVIDIA driver answers.
    Auto,
    /// NVIDIA's management library (libnvidia-ml.so.1), loaded at run time.
    Nvml,
    /// Simulated GPUs running named scenarios (no GPU needed).
    Sim,
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendKind::Auto => "auto",
            BackendKind::Nvml => "nvml",
            BackendKind::Sim => "sim",
        })
    }
}

/// No GPU backend could be opened: says what was tried and what to do.
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
    match kind {
        BackendKind::Sim => Ok(Box::new(sim::SimBackend::new(sim.clone()))),
        BackendKind::Nvml | BackendKind::Auto => match nvml::NvmlBackend::open() {
            Ok(b) => Ok(Box::new(b)),
            Err(e) => Err(NoGpuError {
                message: format!(
                    "gpulse: no NVIDIA GPU could be opened.\n  tried: NVML (libnvidia-ml.so.1)\n  failed: {e}\n\
                     To see the dashboard on simulated GPUs, run `gpulse demo` (or `gpulse --backend sim`)."
                ),
            }),
        },
    }
}
