//! MIG instances: a GPU split into GPU instances (memory and SMs of their own), each holding
//! compute instances that processes run in. Utilization is not reported per instance; GPM's SM,
//! tensor and DRAM activity are (Hopper and newer), and are all the detector has per instance.

use serde::{Deserialize, Serialize};

/// One MIG compute instance at one tick.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct MigReading {
    /// The GPU instance ID (`GPU_I_ID` in dcgm-exporter's labels).
    pub gpu_instance_id: u32,
    /// The compute instance ID within the GPU instance.
    pub compute_instance_id: u32,
    /// The profile, as `nvidia-smi mig -lgi` names it (`3g.71gb`, `1g.18gb`): `GPU_I_PROFILE`.
    #[serde(default)]
    pub profile: Option<String>,
    /// The MIG device's UUID (`MIG-…`).
    #[serde(default)]
    pub uuid: Option<String>,
    #[serde(default)]
    pub memory_used_bytes: Option<u64>,
    #[serde(default)]
    pub memory_total_bytes: Option<u64>,
    /// GPM SM activity of the GPU instance, percent (absent without GPM).
    #[serde(default)]
    pub sm_active: Option<f64>,
    /// GPM tensor-core activity of the GPU instance, percent.
    #[serde(default)]
    pub tensor_active: Option<f64>,
    /// GPM DRAM bandwidth utilization of the GPU instance, percent.
    #[serde(default)]
    pub dram_active: Option<f64>,
    /// PIDs of the GPU's processes that run in this instance (as in `GpuReading::processes`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pids: Vec<u32>,
}

impl MigReading {
    /// `GPU 0 · MIG 1/0` style key: the GPU instance and compute instance IDs.
    pub fn key(&self) -> (u32, u32) {
        (self.gpu_instance_id, self.compute_instance_id)
    }

    /// Whether the instance gave an activity reading the detector can run on.
    pub fn has_signal(&self) -> bool {
        self.sm_active.is_some()
    }
}

/// The profile in a MIG device's name (`NVIDIA H200 MIG 3g.71gb` → `3g.71gb`).
pub fn profile_from_name(name: &str) -> Option<String> {
    let tail = name.rsplit_once(" MIG ").map(|(_, t)| t)?.trim();
    let looks_right =
        tail.contains('g') && tail.contains('.') && !tail.is_empty() && !tail.contains(' ');
    looks_right.then(|| tail.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_come_from_the_mig_device_name() {
        assert_eq!(
            profile_from_name("NVIDIA H200 MIG 3g.71gb").as_deref(),
            Some("3g.71gb")
        );
        assert_eq!(
            profile_from_name("NVIDIA A100-SXM4-80GB MIG 1c.3g.40gb").as_deref(),
            Some("1c.3g.40gb")
        );
        assert_eq!(profile_from_name("NVIDIA H200"), None);
        assert_eq!(profile_from_name("NVIDIA H200 MIG "), None);
    }
}
