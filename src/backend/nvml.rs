//! NVIDIA GPUs through NVML (libnvidia-ml.so.1, loaded at run time).

use super::{Backend, DeviceSampler};
use crate::model::SystemInfo;

pub struct NvmlBackend {
    system: SystemInfo,
    devices: Vec<Box<dyn DeviceSampler>>,
}

impl NvmlBackend {
    pub fn open() -> Result<Self, String> {
        match nvml_wrapper::Nvml::init() {
            Ok(_) => Err("NVML backend not built yet".to_string()),
            Err(e) => Err(e.to_string()),
        }
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
