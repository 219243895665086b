//! The facts doctor judges, behind a trait so the simulator and NVML both provide them.

use crate::backend::sim::{SimBackend, SimConfig};
use crate::backend::{Backend, DeviceSampler};
use crate::model::{DeviceInfo, GpuHealth, SystemInfo, XidEvent};

/// The driver as seen at start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DriverFacts {
    /// The facts come from the simulator, not a driver.
    pub simulated: bool,
    /// Where libnvidia-ml was loaded from.
    pub library_path: Option<String>,
    pub driver_version: Option<String>,
    pub nvml_version: Option<String>,
    /// The highest CUDA version the driver supports ("13.0").
    pub cuda_version: Option<String>,
    /// Why the driver could not be opened.
    pub error: Option<String>,
}

/// A process holding GPU memory.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcessFacts {
    pub pid: u32,
    pub user: Option<String>,
    /// Whether it belongs to someone other than the user running doctor.
    pub other_user: Option<bool>,
    pub memory_bytes: Option<u64>,
}

/// One GPU's facts at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GpuFacts {
    pub index: u32,
    pub name: String,
    pub persistence: Option<bool>,
    pub power_limit_w: Option<f64>,
    pub power_default_w: Option<f64>,
    pub power_max_w: Option<f64>,
    pub throttle: Option<u64>,
    pub util: Option<f64>,
    pub pcie_gen: Option<u32>,
    pub pcie_width: Option<u32>,
    pub pcie_gen_max: Option<u32>,
    pub pcie_width_max: Option<u32>,
    pub compute_mode: Option<String>,
    /// CUDA compute capability (major, minor).
    pub compute_capability: Option<(u32, u32)>,
    /// (current, pending after reset); `None` where the GPU has no MIG.
    pub mig: Option<(bool, bool)>,
    /// Uncorrected ECC errors since the driver loaded (volatile).
    pub ecc_uncorrected: Option<u64>,
    /// Pages retired for double-bit errors (pre-Ampere).
    pub retired_pages: Option<u64>,
    /// Rows remapped for uncorrectable errors (Ampere and newer).
    pub remapped_uncorrectable: Option<u64>,
    pub remap_pending: Option<bool>,
    pub remap_failed: Option<bool>,
    pub temp_c: Option<f64>,
    pub temp_slowdown_c: Option<f64>,
    pub processes: Vec<ProcessFacts>,
    /// The health counters (absent where the source reads none).
    pub health: Option<GpuHealth>,
    /// XIDs that arrived while doctor ran.
    pub xids: Vec<XidEvent>,
}

impl GpuFacts {
    /// The static part, from the backend's device facts.
    pub fn from_info(d: &DeviceInfo) -> GpuFacts {
        GpuFacts {
            index: d.index,
            name: d.name.clone(),
            power_limit_w: d.power_limit_watts,
            power_default_w: d.power_default_limit_watts,
            power_max_w: d.power_max_limit_watts,
            pcie_gen_max: d.pcie_gen_max,
            pcie_width_max: d.pcie_width_max,
            temp_slowdown_c: d.temperature_slowdown_c,
            ..Default::default()
        }
    }
}

/// Where doctor's facts come from.
pub trait DoctorFacts {
    fn driver(&self) -> DriverFacts;
    /// Every GPU now (called repeatedly with `--under-load`).
    fn gpus(&mut self) -> Vec<GpuFacts>;
}

/// Facts from simulated GPUs: the device facts and readings of the simulator, and the modes a
/// healthy data-centre machine has (persistence on, default compute mode, MIG off, no ECC errors).
pub struct SimFacts {
    system: SystemInfo,
    devices: Vec<Box<dyn DeviceSampler>>,
}

impl SimFacts {
    pub fn new(config: &SimConfig) -> SimFacts {
        let mut backend = SimBackend::new(config.clone());
        SimFacts {
            system: backend.system().clone(),
            devices: backend.take_devices(),
        }
    }
}

impl DoctorFacts for SimFacts {
    fn driver(&self) -> DriverFacts {
        DriverFacts {
            simulated: true,
            library_path: None,
            driver_version: self.system.driver_version.clone(),
            nvml_version: self.system.nvml_version.clone(),
            cuda_version: self.system.cuda_version.clone(),
            error: None,
        }
    }

    fn gpus(&mut self) -> Vec<GpuFacts> {
        let now = crate::clock::now();
        let mut out = Vec::new();
        for (info, dev) in self.system.devices.iter().zip(self.devices.iter_mut()) {
            let mut g = GpuFacts::from_info(info);
            g.persistence = Some(true);
            g.compute_mode = Some("Default".to_string());
            // The simulator models H200s.
            g.compute_capability = Some((9, 0));
            g.mig = Some((false, false));
            g.ecc_uncorrected = Some(0);
            g.remapped_uncorrectable = Some(0);
            g.remap_pending = Some(false);
            g.remap_failed = Some(false);
            if let Ok(r) = dev.sample(now) {
                g.health = r.health.clone();
                g.xids = r.xids.clone();
                let m = r.metrics;
                g.throttle = m.throttle;
                g.util = m.util_gpu;
                g.pcie_gen = m.pcie_gen;
                g.pcie_width = m.pcie_width;
                g.temp_c = m.temp_c;
                g.power_limit_w = m.power_limit_w.or(g.power_limit_w);
                g.processes = r
                    .processes
                    .iter()
                    .map(|p| ProcessFacts {
                        pid: p.pid,
                        user: p.user.clone(),
                        other_user: Some(false),
                        memory_bytes: p.gpu_memory_bytes,
                    })
                    .collect();
            }
            out.push(g);
        }
        out
    }
}
