//! Doctor's facts from NVML on a real machine.

use std::path::Path;

use nvml_wrapper::enum_wrappers::device::{
    EccCounter, MemoryError, RetirementCause, TemperatureSensor,
};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::structs::device::FieldId;
use nvml_wrapper::sys_exports::field_id::{
    NVML_FI_DEV_REMAPPED_FAILURE, NVML_FI_DEV_REMAPPED_PENDING, NVML_FI_DEV_REMAPPED_UNC,
};
use nvml_wrapper::{Device, Nvml};

use super::env::DoctorEnv;
use super::facts::{DoctorFacts, DriverFacts, GpuFacts, ProcessFacts};
use crate::backend::nvml::health::HealthReader;
use crate::backend::nvml::sample_value;
use crate::backend::nvml::{cuda_version_string, device_info_of, library};

/// NVML, or why it could not be opened.
pub struct NvmlFacts {
    nvml: Result<&'static Nvml, String>,
    env: DoctorEnv,
}

impl NvmlFacts {
    pub fn open(env: &DoctorEnv) -> NvmlFacts {
        NvmlFacts {
            nvml: library().map_err(|e| e.to_string()),
            env: env.clone(),
        }
    }
}

/// The path of the loaded libnvidia-ml, from this process's memory map.
pub fn loaded_library_path(maps: &str) -> Option<String> {
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| {
            Path::new(p)
                .file_name()
                .and_then(|f| f.to_str())
                .is_some_and(|f| f.starts_with("libnvidia-ml.so"))
        })
        .map(str::to_string)
}

impl DoctorFacts for NvmlFacts {
    fn driver(&self) -> DriverFacts {
        match self.nvml {
            Ok(nvml) => DriverFacts {
                simulated: false,
                library_path: self
                    .env
                    .proc_file("self/maps")
                    .and_then(|m| loaded_library_path(&m)),
                driver_version: nvml.sys_driver_version().ok(),
                nvml_version: nvml.sys_nvml_version().ok(),
                cuda_version: nvml.sys_cuda_driver_version().ok().map(cuda_version_string),
                error: None,
            },
            Err(ref e) => DriverFacts {
                error: Some(e.clone()),
                ..Default::default()
            },
        }
    }

    fn gpus(&mut self) -> Vec<GpuFacts> {
        let Ok(nvml) = self.nvml else {
            return Vec::new();
        };
        let count = nvml.device_count().unwrap_or(0);
        (0..count)
            .filter_map(|i| nvml.device_by_index(i).ok().map(|d| (i, d)))
            .map(|(i, d)| gpu_facts(nvml, i, &d, &self.env))
            .collect()
    }
}

fn gpu_facts(nvml: &'static Nvml, index: u32, d: &Device<'static>, env: &DoctorEnv) -> GpuFacts {
    let mut g = GpuFacts::from_info(&device_info_of(index, d));
    g.persistence = d.is_in_persistent_mode().ok();
    g.throttle = d.current_throttle_reasons().ok().map(|r| r.bits());
    g.util = d.utilization_rates().ok().map(|u| f64::from(u.gpu));
    g.pcie_gen = d.current_pcie_link_gen().ok();
    g.pcie_width = d.current_pcie_link_width().ok();
    g.compute_mode = d.compute_mode().ok().map(|m| format!("{m:?}"));
    g.compute_capability = d
        .cuda_compute_capability()
        .ok()
        .and_then(|c| Some((u32::try_from(c.major).ok()?, u32::try_from(c.minor).ok()?)));
    g.mig = d.mig_mode().ok().map(|m| (m.current == 1, m.pending == 1));
    g.ecc_uncorrected = d
        .total_ecc_errors(MemoryError::Uncorrected, EccCounter::Volatile)
        .ok();
    g.retired_pages = d
        .retired_pages(RetirementCause::DoubleBitEccError)
        .ok()
        .map(|p| p.len() as u64);
    let ids = [
        FieldId(NVML_FI_DEV_REMAPPED_UNC),
        FieldId(NVML_FI_DEV_REMAPPED_PENDING),
        FieldId(NVML_FI_DEV_REMAPPED_FAILURE),
    ];
    if let Ok(values) = d.field_values_for(&ids) {
        let v: Vec<Option<f64>> = values
            .into_iter()
            .map(|r| r.ok().and_then(|s| s.value.ok()).map(|v| sample_value(&v)))
            .collect();
        g.remapped_uncorrectable = v.first().copied().flatten().map(|x| x as u64);
        g.remap_pending = v.get(1).copied().flatten().map(|x| x != 0.0);
        g.remap_failed = v.get(2).copied().flatten().map(|x| x != 0.0);
    }
    g.temp_c = d.temperature(TemperatureSensor::Gpu).ok().map(f64::from);
    // The same reader the sampler runs, once: XIDs are not watched (doctor's check says where
    // earlier ones are).
    g.health = HealthReader::new(nvml, d, Default::default())
        .tick(d, crate::clock::now())
        .ok()
        .and_then(|(_, h)| h);
    let mut procs = d.running_compute_processes().unwrap_or_default();
    procs.extend(d.running_graphics_processes().unwrap_or_default());
    procs.sort_by_key(|p| p.pid);
    procs.dedup_by_key(|p| p.pid);
    g.processes = procs
        .iter()
        .map(|p| {
            let uid = env.process_uid(p.pid);
            ProcessFacts {
                pid: p.pid,
                user: uid.map(|u| u.to_string()),
                other_user: uid.map(|u| u != env.uid),
                memory_bytes: match p.used_gpu_memory {
                    UsedGpuMemory::Used(b) => Some(b),
                    UsedGpuMemory::Unavailable => None,
                },
            }
        })
        .collect();
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loaded_library_is_found_in_the_memory_map() {
        let maps = "\
7f00-7f01 r-xp 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libc.so.6
7f02-7f03 r-xp 00000000 08:01 2 /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.580.159.04
7f04-7f05 rw-p 00000000 00:00 0
";
        assert_eq!(
            loaded_library_path(maps).as_deref(),
            Some("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.580.159.04")
        );
        assert_eq!(
            loaded_library_path("7f04-7f05 rw-p 00000000 00:00 0\n"),
            None
        );
    }
}
