//! Simulated GPUs running named scenarios, modelled on real H200 traces.
//!
//! Each simulated GPU runs a job whose kernel activity is a sequence of segments (busy at some
//! level, or waiting). The driver is modelled as the H200's: one utilization sample per 200 ms
//! window, each the share of the window with a kernel resident, integer percent; the sampler reads
//! them at its own interval (250 ms by default), so some ticks see two windows and some one, as on
//! the real card. Power is a 1 s average, clocks and temperature lag, and PCIe bursts arrive with
//! each batch. Everything is a deterministic function of the seed and the time since start.

mod device;
mod faults;
mod job;
mod mig;
mod rng;
mod scenario;
pub mod shared;

pub use device::{SimDevice, PROCESS_PERIOD_S};
pub use faults::{Ailment, HEALTH_PERIOD_S, OFF_BUS_AT_S, REMAP_XID_AT_S};
pub use rng::Rng;
pub use scenario::Scenario;

use super::{Backend, DeviceSampler};
use crate::model::{DeviceInfo, SystemInfo, UnixTime, UtilSampling, Vendor};

/// The driver's utilization window on the H200.
pub const DRIVER_WINDOW_S: f64 = 0.2;
const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;
const TOTAL_MEM: u64 = 143_771 * MIB;
const POWER_LIMIT_W: f64 = 700.0;
const IDLE_POWER_W: f64 = 75.0;

/// How to simulate.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    pub scenario: Scenario,
    pub gpus: u32,
    pub seed: u64,
    /// The simulated jobs start at this time (the sampler's first tick, normally now).
    pub start: Option<UnixTime>,
    /// Host name shown in the header (defaults to this machine's).
    pub hostname: Option<String>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            scenario: Scenario::Mixed,
            gpus: 4,
            seed: 1,
            start: None,
            hostname: None,
        }
    }
}

/// Simulated H200s.
pub struct SimBackend {
    system: SystemInfo,
    devices: Vec<Box<dyn DeviceSampler>>,
}

impl SimBackend {
    pub fn new(config: SimConfig) -> Self {
        let start = config.start.unwrap_or_else(crate::clock::now);
        let gpus = config.gpus.max(1);
        let devices_info = (0..gpus).map(sim_device_info).collect();
        let system = SystemInfo {
            hostname: config.hostname.clone().unwrap_or_else(super::hostname),
            backend: "sim".to_string(),
            driver_version: Some("580.159.04 (simulated)".to_string()),
            cuda_version: Some("13.0".to_string()),
            nvml_version: None,
            devices: devices_info,
        };
        let devices = (0..gpus)
            .map(|i| Box::new(SimDevice::new(i, &config, start)) as Box<dyn DeviceSampler>)
            .collect();
        SimBackend { system, devices }
    }

    /// The samplers themselves, for driving the simulation on a virtual clock (tests, benchmarks).
    pub fn devices_for(config: &SimConfig) -> Vec<SimDevice> {
        let start = config.start.unwrap_or_else(crate::clock::now);
        (0..config.gpus.max(1))
            .map(|i| SimDevice::new(i, config, start))
            .collect()
    }
}

/// The static facts of simulated GPU `index` (an H200 SXM).
pub fn sim_device_info(index: u32) -> DeviceInfo {
    DeviceInfo {
        index,
        name: "NVIDIA H200 (simulated)".to_string(),
        vendor: Vendor::Nvidia,
        uuid: Some(format!("GPU-5e1a0000-0000-4000-8000-{:012x}", index)),
        bus_id: Some(format!("00000000:{:02X}:00.0", 0x18 + index * 0x10)),
        architecture: Some("Hopper".to_string()),
        memory_total_bytes: Some(TOTAL_MEM),
        power_limit_watts: Some(POWER_LIMIT_W),
        power_default_limit_watts: Some(POWER_LIMIT_W),
        power_max_limit_watts: Some(POWER_LIMIT_W),
        sm_clock_max_mhz: Some(1980),
        mem_clock_max_mhz: Some(3201),
        pcie_gen_max: Some(5),
        pcie_width_max: Some(16),
        temperature_slowdown_c: Some(87.0),
        has_fan: Some(false),
        gpm_supported: true,
        util_sampling: UtilSampling::DriverWindows,
    }
}

impl Backend for SimBackend {
    fn system(&self) -> &SystemInfo {
        &self.system
    }

    fn take_devices(&mut self) -> Vec<Box<dyn DeviceSampler>> {
        std::mem::take(&mut self.devices)
    }
}
