//! The named scenarios of `gpulse demo`, and the job each GPU runs under one.

use serde::{Deserialize, Serialize};

/// The named scenarios of `gpulse demo`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    /// Every GPU trains with its data already on the device.
    Healthy,
    /// DataLoaders that cannot keep up: bursts of work, then ~1 s waits.
    Starving,
    /// Busy, with a multi-second checkpoint pause every ~10 s.
    Checkpoint,
    /// A tiny model syncing with the host every step: a flat low plateau.
    HostBound,
    /// Memory held by a process that computes almost nothing.
    MemoryIdle,
    /// Training in plain fp32: the SMs busy on the CUDA cores, the tensor cores idle.
    Fp32,
    /// A different job on each GPU (starving, healthy, checkpoint, memory-idle, ...).
    #[default]
    Mixed,
    /// A node shared by teams: pods of two namespaces, a Docker container and a Slurm job, and
    /// GPU 3 in MIG mode with three instances.
    Shared,
    /// No process on any GPU.
    Idle,
    /// Healthy training on sick hardware: a GPU falls off the bus (XID 79), one waits for a
    /// memory row remap with corrected ECC errors rising, one runs under HW slowdown, and two
    /// exchange NVLink traffic.
    Faulty,
}

impl Scenario {
    pub fn as_str(self) -> &'static str {
        match self {
            Scenario::Healthy => "healthy",
            Scenario::Starving => "starving",
            Scenario::Checkpoint => "checkpoint",
            Scenario::HostBound => "host-bound",
            Scenario::MemoryIdle => "memory-idle",
            Scenario::Fp32 => "fp32",
            Scenario::Mixed => "mixed",
            Scenario::Shared => "shared",
            Scenario::Idle => "idle",
            Scenario::Faulty => "faulty",
        }
    }

    /// The job GPU `index` runs under this scenario.
    pub fn job_for(self, index: u32) -> Scenario {
        const MIX: [Scenario; 8] = [
            Scenario::Starving,
            Scenario::Healthy,
            Scenario::Checkpoint,
            Scenario::MemoryIdle,
            Scenario::HostBound,
            Scenario::Healthy,
            Scenario::Starving,
            Scenario::Idle,
        ];
        match self {
            Scenario::Mixed => MIX[index as usize % MIX.len()],
            // The hardware is what fails: every job trains healthily.
            Scenario::Faulty => Scenario::Healthy,
            Scenario::Shared => super::shared::job_kind(index),
            other => other,
        }
    }
}

impl std::fmt::Display for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
