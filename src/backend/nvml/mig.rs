//! A GPU in MIG mode: its instances, their memory and processes, and GPM activity per GPU
//! instance. MIG mode itself is only read, never changed.
//!
//! NVML reports no utilization for a GPU in MIG mode, nor per instance; GPM samples per GPU
//! instance (`nvmlGpmMigSampleGet`, Hopper and newer) give SM, tensor and DRAM activity. The
//! instances (MIG device handles `0..nvmlDeviceGetMaxMigDeviceCount`, each with its GPU and
//! compute instance IDs, its name ending in the profile, its UUID) are listed once per
//! [`LIST_PERIOD_S`]: they change only when an administrator makes or destroys one. Memory and GPM
//! are read once per [`super::device::SLOW_PERIOD_S`] and carried between reads.

use std::collections::HashMap;
use std::time::Instant;

use nvml_wrapper::enums::gpm::GpmMetricId;
use nvml_wrapper::error::{nvml_try, NvmlError};
use nvml_wrapper::gpm::{gpm_metrics_get, GpmSample};
use nvml_wrapper::{Device, Nvml};

use super::device::{SLOW_PERIOD_S, SLOW_SLACK_S};
use super::processes::merge_processes;
use crate::model::{profile_from_name, GpuProcess, MigReading};

/// Seconds between listings of the instances.
pub const LIST_PERIOD_S: f64 = 10.0;
/// The GPM metrics read per GPU instance.
const MIG_GPM_METRICS: [GpmMetricId; 3] = [
    GpmMetricId::SmUtil,
    GpmMetricId::AnyTensorUtil,
    GpmMetricId::DramBwUtil,
];
/// GPM needs two samples at least 100 ms apart.
const GPM_MIN_GAP_S: f64 = 0.1;

/// One MIG device (a compute instance in a GPU instance).
struct Instance {
    device: Device<'static>,
    reading: MigReading,
}

/// Reads the instances of one GPU in MIG mode.
pub struct MigReader {
    nvml: &'static Nvml,
    parent: Device<'static>,
    instances: Vec<Instance>,
    listed_at: Option<Instant>,
    read_at: Option<Instant>,
    /// The last GPM sample of each GPU instance, and when it was taken.
    gpm: HashMap<u32, (GpmSample<'static>, Instant)>,
    /// Whether GPM per instance answered (none once it says it does not).
    gpm_supported: bool,
    /// Each process's instance IDs, from the MIG devices' own lists (read with the memory).
    placements: HashMap<u32, (u32, u32)>,
    /// Processes only the MIG devices' lists name.
    only_there: Vec<GpuProcess>,
}

/// `nvmlDeviceGetGpuInstanceId` or `nvmlDeviceGetComputeInstanceId` of a MIG device (nvml-wrapper
/// has no wrapper for them).
fn instance_id(nvml: &Nvml, d: &Device<'static>, compute: bool) -> Result<u32, NvmlError> {
    let lib = nvml.lib();
    let sym = if compute {
        lib.nvmlDeviceGetComputeInstanceId.as_ref()
    } else {
        lib.nvmlDeviceGetGpuInstanceId.as_ref()
    };
    let sym = sym.map_err(|e| NvmlError::FailedToLoadSymbol(e.to_string()))?;
    let mut id: std::os::raw::c_uint = 0;
    // SAFETY: the handle is a live MIG device handle of this library (it outlives the call), and
    // the function writes one unsigned int through the pointer it is given.
    nvml_try(unsafe { sym(d.handle(), &mut id) })?;
    Ok(id)
}

impl MigReader {
    /// A reader for GPU `index` when it is in MIG mode now; `None` otherwise.
    pub fn open(nvml: &'static Nvml, index: u32, gpm_supported: bool) -> Option<Self> {
        let parent = nvml.device_by_index(index).ok()?;
        let mode = parent.mig_mode().ok()?;
        (mode.current == 1).then(|| MigReader {
            nvml,
            parent,
            instances: Vec::new(),
            listed_at: None,
            read_at: None,
            gpm: HashMap::new(),
            gpm_supported,
            placements: HashMap::new(),
            only_there: Vec::new(),
        })
    }

    /// List the MIG devices again.
    fn list(&mut self) {
        let count = self.parent.mig_device_count().unwrap_or(0);
        let mut found = Vec::new();
        for i in 0..count {
            // Empty slots answer NotFound.
            let Ok(device) = self.parent.mig_device_by_index(i) else {
                continue;
            };
            let (Ok(gi), Ok(ci)) = (
                instance_id(self.nvml, &device, false),
                instance_id(self.nvml, &device, true),
            ) else {
                continue;
            };
            let reading = MigReading {
                gpu_instance_id: gi,
                compute_instance_id: ci,
                profile: device.name().ok().and_then(|n| profile_from_name(&n)),
                uuid: device.uuid().ok(),
                ..Default::default()
            };
            found.push(Instance { device, reading });
        }
        found.sort_by_key(|i| i.reading.key());
        self.instances = found;
        self.listed_at = Some(Instant::now());
    }

    /// The instances now, with the processes of `procs` (the GPU's) each runs, whose instance IDs
    /// are filled in where the GPU's list lacked them.
    pub fn read(&mut self, procs: &mut Vec<GpuProcess>) -> Vec<MigReading> {
        let due = |at: Option<Instant>, period: f64| {
            at.is_none_or(|t| t.elapsed().as_secs_f64() >= period - SLOW_SLACK_S)
        };
        if due(self.listed_at, LIST_PERIOD_S) {
            self.list();
        }
        if due(self.read_at, SLOW_PERIOD_S) {
            self.read_at = Some(Instant::now());
            self.read_memory();
            self.read_gpm();
            self.list_processes(procs);
        }
        self.place_processes(procs);
        self.instances
            .iter()
            .map(|i| {
                let mut r = i.reading.clone();
                r.pids = procs
                    .iter()
                    .filter(|p| {
                        p.gpu_instance_id == Some(r.gpu_instance_id)
                            && p.compute_instance_id
                                .is_none_or(|c| c == r.compute_instance_id)
                    })
                    .map(|p| p.pid)
                    .collect();
                r
            })
            .collect()
    }

    fn read_memory(&mut self) {
        for i in &mut self.instances {
            let mem = i.device.memory_info().ok();
            i.reading.memory_used_bytes = mem.as_ref().map(|m| m.used);
            i.reading.memory_total_bytes = mem.as_ref().map(|m| m.total);
        }
    }

    /// GPM activity of each GPU instance since its previous sample.
    fn read_gpm(&mut self) {
        if !self.gpm_supported {
            return;
        }
        let now = Instant::now();
        let mut gis: Vec<u32> = self
            .instances
            .iter()
            .map(|i| i.reading.gpu_instance_id)
            .collect();
        gis.dedup();
        for gi in gis {
            let new = match self.parent.gpm_mig_sample(gi) {
                Ok(s) => s,
                Err(
                    NvmlError::NotSupported
                    | NvmlError::FunctionNotFound
                    | NvmlError::FailedToLoadSymbol(_),
                ) => {
                    self.gpm_supported = false;
                    return;
                }
                Err(_) => continue,
            };
            let values = match self.gpm.remove(&gi) {
                Some((prev, at)) if now.duration_since(at).as_secs_f64() >= GPM_MIN_GAP_S => {
                    gpm_metrics_get(self.nvml, &prev, &new, &MIG_GPM_METRICS).ok()
                }
                Some(kept) => {
                    self.gpm.insert(gi, kept);
                    continue;
                }
                None => None,
            };
            self.gpm.insert(gi, (new, now));
            let Some(values) = values else {
                continue;
            };
            for i in self
                .instances
                .iter_mut()
                .filter(|i| i.reading.gpu_instance_id == gi)
            {
                for v in values.iter().flatten().filter(|v| v.value.is_finite()) {
                    match v.metric_id {
                        GpmMetricId::SmUtil => i.reading.sm_active = Some(v.value),
                        GpmMetricId::AnyTensorUtil => i.reading.tensor_active = Some(v.value),
                        GpmMetricId::DramBwUtil => i.reading.dram_active = Some(v.value),
                        _ => {}
                    }
                }
            }
        }
    }

    /// Where the GPU's list does not name every process's instance (the driver names them only
    /// to some callers), each MIG device's own list does.
    fn list_processes(&mut self, procs: &[GpuProcess]) {
        self.placements.clear();
        self.only_there.clear();
        if !procs.is_empty() && procs.iter().all(|p| p.gpu_instance_id.is_some()) {
            return;
        }
        for i in &self.instances {
            let Ok(own) = i.device.running_compute_processes() else {
                continue;
            };
            let ids = (i.reading.gpu_instance_id, i.reading.compute_instance_id);
            for p in merge_processes(&own, &[]) {
                self.placements.insert(p.pid, ids);
                if !procs.iter().any(|q| q.pid == p.pid) {
                    self.only_there.push(p);
                }
            }
        }
    }

    /// Give each process its instance (as last listed); add those only a MIG device lists.
    fn place_processes(&self, procs: &mut Vec<GpuProcess>) {
        for p in &self.only_there {
            if !procs.iter().any(|q| q.pid == p.pid) {
                procs.push(p.clone());
            }
        }
        for p in procs.iter_mut().filter(|p| p.gpu_instance_id.is_none()) {
            if let Some((gi, ci)) = self.placements.get(&p.pid) {
                p.gpu_instance_id = Some(*gi);
                p.compute_instance_id = Some(*ci);
            }
        }
    }
}
