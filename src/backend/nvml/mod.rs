//! NVIDIA GPUs through NVML (libnvidia-ml.so.1, loaded at run time by nvml-wrapper, so the binary
//! builds and starts on machines without NVIDIA software).
//!
//! Static facts are read once when the backend opens. Each tick reads memory and the current
//! utilization; the driver's utilization sample buffer (every 200 ms window, once) every 2 s; the
//! processes every second and their utilization every 5 s; power, clocks, link, throttle reasons
//! and GPM metrics (Hopper and newer) every second. Where GPM is absent, PCIe throughput (each call
//! blocks ~20 ms) is read on its own thread once a second. The clock event counters are read every
//! second and the health counters (ECC, remapped rows, PCIe replays, NVLink) every 5 s
//! ([`health`]); XID events arrive on a thread of their own ([`xid_events`]). See `docs/NVML.md`
//! for every call, its cadence and its cost.

mod calls;
mod device;
pub use device::GPM_METRICS;
pub mod errors;
pub mod fields;
pub mod health;
pub mod merge;
mod mig;
mod pcie;
mod processes;
mod values;
pub mod xid_events;

use std::sync::OnceLock;

use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureThreshold};
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, Nvml};

use super::{Backend, DeviceSampler};
use crate::model::{DeviceInfo, SystemInfo, UtilSampling, Vendor};
pub use device::NvmlDeviceSampler;
use errors::open_error;
pub use errors::NvmlOpenError;
pub use merge::SampleBufferMerger;
pub use values::sample_value;

/// The library, initialised once per process and kept for its lifetime: device handles and GPM
/// samples borrow it, and they live on the sampler's threads until the process exits.
static NVML: OnceLock<Nvml> = OnceLock::new();

/// Load and initialise NVML (once per process).
pub fn library() -> Result<&'static Nvml, NvmlOpenError> {
    if let Some(n) = NVML.get() {
        return Ok(n);
    }
    let nvml = Nvml::init().map_err(|e| open_error("nvmlInit", e))?;
    // If another thread won the race, its instance is kept and this one shuts down on drop
    // (NVML counts initialisations).
    let _ = NVML.set(nvml);
    NVML.get().ok_or(NvmlOpenError::Call {
        call: "nvmlInit",
        detail: "the library handle could not be kept".to_string(),
    })
}

/// CUDA driver version as NVML reports it (`13000`) in the usual words (`"13.0"`).
pub fn cuda_version_string(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

pub struct NvmlBackend {
    system: SystemInfo,
    devices: Vec<Box<dyn DeviceSampler>>,
}

impl NvmlBackend {
    /// Load NVML, read the static facts of every GPU and prepare one sampler per GPU.
    pub fn open() -> Result<Self, NvmlOpenError> {
        let nvml = library()?;
        let count = nvml
            .device_count()
            .map_err(|e| open_error("device_count", e))?;
        if count == 0 {
            return Err(NvmlOpenError::NoDevices);
        }
        let mut infos = Vec::new();
        let mut handles = Vec::new();
        for index in 0..count {
            let device = nvml
                .device_by_index(index)
                .map_err(|e| open_error("device_by_index", e))?;
            infos.push(device_info_of(index, &device));
            handles.push((index, device));
        }
        let watched = handles
            .iter()
            .filter_map(|(i, _)| nvml.device_by_index(*i).ok().map(|d| (*i, d)))
            .collect();
        let feed = xid_events::start(nvml, watched);
        let mut devices: Vec<Box<dyn DeviceSampler>> = Vec::new();
        for (pos, ((_, device), info)) in handles.into_iter().zip(&infos).enumerate() {
            let xids = feed.gpus.get(pos).cloned().map(|g| (g, feed.clone()));
            devices.push(Box::new(NvmlDeviceSampler::new(
                nvml,
                device,
                info.clone(),
                xids,
            )));
        }
        let system = SystemInfo {
            hostname: super::hostname(),
            backend: "nvml".to_string(),
            driver_version: nvml.sys_driver_version().ok(),
            cuda_version: nvml.sys_cuda_driver_version().ok().map(cuda_version_string),
            nvml_version: nvml.sys_nvml_version().ok(),
            devices: infos,
        };
        Ok(NvmlBackend { system, devices })
    }
}

impl Backend for NvmlBackend {
    fn system(&self) -> &SystemInfo {
        &self.system
    }
    fn take_devices(&mut self) -> Vec<Box<dyn DeviceSampler>> {
        std::mem::take(&mut self.devices)
    }
}

/// Whether a fan reading means "this card has fans": fanless cards answer InvalidArg or
/// NotSupported for fan 0 (the H200 answers InvalidArg).
pub fn has_fan(answer: &Result<u32, NvmlError>) -> Option<bool> {
    match answer {
        Ok(_) => Some(true),
        Err(NvmlError::InvalidArg | NvmlError::NotSupported) => Some(false),
        Err(_) => None,
    }
}

/// The static facts of one GPU, each absent where the call fails.
pub fn device_info_of(index: u32, d: &Device<'static>) -> DeviceInfo {
    let mw = |r: Result<u32, NvmlError>| r.ok().map(|v| v as f64 / 1000.0);
    DeviceInfo {
        index,
        name: d.name().unwrap_or_else(|_| format!("NVIDIA GPU {index}")),
        vendor: Vendor::Nvidia,
        uuid: d.uuid().ok(),
        bus_id: d.pci_info().ok().map(|p| p.bus_id),
        architecture: d.architecture().ok().map(|a| a.to_string()),
        memory_total_bytes: d.memory_info().ok().map(|m| m.total),
        power_limit_watts: mw(d.enforced_power_limit()),
        power_default_limit_watts: mw(d.power_management_limit_default()),
        power_max_limit_watts: mw(d.power_management_limit_constraints().map(|c| c.max_limit)),
        sm_clock_max_mhz: d.max_clock_info(Clock::SM).ok(),
        mem_clock_max_mhz: d.max_clock_info(Clock::Memory).ok(),
        pcie_gen_max: d.max_pcie_link_gen().ok(),
        pcie_width_max: d.max_pcie_link_width().ok(),
        temperature_slowdown_c: d
            .temperature_threshold(TemperatureThreshold::Slowdown)
            .ok()
            .map(f64::from),
        has_fan: has_fan(&d.fan_speed(0)),
        gpm_supported: d.gpm_support().unwrap_or(false),
        util_sampling: UtilSampling::DriverWindows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_versions_read_as_people_write_them() {
        assert_eq!(cuda_version_string(13000), "13.0");
        assert_eq!(cuda_version_string(12040), "12.4");
        assert_eq!(cuda_version_string(11080), "11.8");
    }

    #[test]
    fn fanless_cards_have_no_fan_rather_than_a_zero_fan() {
        assert_eq!(has_fan(&Err(NvmlError::InvalidArg)), Some(false));
        assert_eq!(has_fan(&Err(NvmlError::NotSupported)), Some(false));
        assert_eq!(has_fan(&Ok(0)), Some(true));
        assert_eq!(has_fan(&Err(NvmlError::Unknown)), None);
    }
}
