//! AMD GPUs: sysfs every tick (fast), `rocm-smi`/`amd-smi` on their own thread (slow).
//!
//! Each GPU is matched between the two sources by its PCI bus id (`0000:03:00.0`), never by card
//! number: rocm-smi's `cardN` is its own index and need not equal the DRM card number. Per metric,
//! the sysfs value wins when it is present (it is fresher); the tool fills the rest. A tool answer
//! older than `stale_after` is dropped, so a hung or failing tool leaves readings absent rather
//! than frozen.
//!
//! AMD has no driver utilization sample buffer like NVML's: each tick yields one
//! [`UtilWindow`] from `gpu_busy_percent`, so the detector works on tick resolution (250 ms by
//! default) on AMD GPUs. `temp_c` is the edge sensor, or the junction sensor where a GPU has no
//! edge sensor (MI300).

pub mod smi_parse;
pub mod smi_runner;
pub mod sysfs;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::{Backend, DeviceError, DeviceSampler};
use crate::model::{
    DeviceInfo, GpuReading, GpuStatus, Metrics, SystemInfo, UnixTime, UtilSampling, UtilWindow,
    Vendor,
};
use smi_parse::SmiGpu;
use smi_runner::{PollerConfig, SmiCache, SmiPoller, SmiTool};
use sysfs::{SysfsCard, SysfsReading};

/// Where the AMD backend looks, and how often it runs the SMI tool.
#[derive(Debug, Clone)]
pub struct RocmOptions {
    /// The sysfs mount (`/sys`); tests point it at a fixture tree.
    pub sysfs_root: PathBuf,
    /// The `PATH` used to find and run `rocm-smi`/`amd-smi`.
    pub path: OsString,
    /// How often the tool runs.
    pub smi_period: Duration,
    /// How long one run may take before it is killed.
    pub smi_timeout: Duration,
    /// How old a tool answer may be before it is dropped.
    pub stale_after: Duration,
}

impl Default for RocmOptions {
    fn default() -> Self {
        RocmOptions {
            sysfs_root: PathBuf::from("/sys"),
            path: std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/bin:/bin")),
            smi_period: Duration::from_secs(2),
            smi_timeout: Duration::from_secs(5),
            stale_after: Duration::from_secs(6),
        }
    }
}

/// Why no AMD GPU could be opened: what each source was and why it gave none.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("no AMD GPU found: {sysfs_failed}; {smi_tried}: {smi_failed}")]
pub struct RocmOpenError {
    /// The DRM directory looked at.
    pub sysfs_tried: String,
    pub sysfs_failed: String,
    /// The SMI tool run (with its path), or "rocm-smi/amd-smi" when none was found.
    pub smi_tried: String,
    pub smi_failed: String,
}

impl RocmOpenError {
    /// One "tried/failed" pair per line, as the no-GPU message shows them.
    pub fn tried_lines(&self) -> String {
        format!(
            "  tried: amdgpu sysfs ({})\n  failed: {}\n  tried: {}\n  failed: {}",
            self.sysfs_tried, self.sysfs_failed, self.smi_tried, self.smi_failed
        )
    }
}

/// AMD GPUs through sysfs and rocm-smi/amd-smi.
pub struct RocmBackend {
    system: SystemInfo,
    devices: Vec<Box<dyn DeviceSampler>>,
}

impl RocmBackend {
    /// Find the GPUs: sysfs first; where sysfs shows none, ask the SMI tool once. Starts the
    /// tool's poller thread when a tool is on `PATH`.
    pub fn open(opts: RocmOptions) -> Result<Self, RocmOpenError> {
        let cards = sysfs::find_cards(&opts.sysfs_root);
        let tool = smi_runner::find_tool(&opts.path);
        let first_answer = match &tool {
            Some(t) => Some(smi_runner::query(t, &opts.path, opts.smi_timeout)),
            None => None,
        };
        let smi_gpus: Vec<SmiGpu> = match &first_answer {
            Some(Ok(a)) => a.gpus.clone(),
            _ => Vec::new(),
        };
        let found = gpus_by_bus_id(&cards, &smi_gpus);
        if found.is_empty() {
            return Err(no_gpu_error(&opts, &tool, &first_answer));
        }
        if cards.is_empty() {
            tracing::warn!(
                "no AMD GPU in {}/class/drm; readings come from {} only (every {:?})",
                opts.sysfs_root.display(),
                tool.as_ref().map_or("the SMI tool", SmiTool::name),
                opts.smi_period
            );
        }
        let cache = SmiCache::default();
        match &first_answer {
            Some(Ok(a)) => cache.publish(a.gpus.clone()),
            Some(Err(e)) => tracing::warn!(
                "{e}; readings only it gives are absent until it answers (retried every {:?})",
                opts.smi_period
            ),
            None => {}
        }
        let poller = Arc::new(start_poller(tool.as_ref(), &opts, &cache));
        let driver_version = driver_version(first_answer.as_ref(), &opts);
        let mut infos = Vec::new();
        let mut devices: Vec<Box<dyn DeviceSampler>> = Vec::new();
        for (i, (card, bus)) in found.into_iter().enumerate() {
            let index = i as u32;
            let smi = bus
                .as_ref()
                .and_then(|b| smi_gpus.iter().find(|g| g.bus_id.as_ref() == Some(b)));
            infos.push(device_info(index, card.as_ref(), bus.as_deref(), smi));
            devices.push(Box::new(RocmDevice {
                index,
                card,
                bus_id: bus,
                cache: cache.clone(),
                stale_after: opts.stale_after,
                _poller: poller.clone(),
            }));
        }
        Ok(RocmBackend {
            system: SystemInfo {
                hostname: super::hostname(),
                backend: "rocm".to_string(),
                driver_version,
                cuda_version: None,
                nvml_version: None,
                devices: infos,
            },
            devices,
        })
    }
}

/// The GPUs by bus id: every sysfs card, plus any the tool knows that sysfs does not show. A card
/// without a bus id is still watched, from sysfs alone.
fn gpus_by_bus_id(
    cards: &[SysfsCard],
    smi_gpus: &[SmiGpu],
) -> Vec<(Option<SysfsCard>, Option<String>)> {
    let mut found: Vec<(Option<SysfsCard>, Option<String>)> = cards
        .iter()
        .map(|c| (Some(c.clone()), c.bus_id.clone()))
        .collect();
    for g in smi_gpus {
        if let Some(b) = &g.bus_id {
            if !found.iter().any(|(_, fb)| fb.as_ref() == Some(b)) {
                found.push((None, Some(b.clone())));
            }
        }
    }
    found
}

/// Start the thread that runs the SMI tool every `smi_period`, publishing into `cache`; `None`
/// (with a note) when neither tool is on `PATH`.
fn start_poller(tool: Option<&SmiTool>, opts: &RocmOptions, cache: &SmiCache) -> Option<SmiPoller> {
    match tool {
        Some(t) => Some(SmiPoller::start(
            PollerConfig {
                tool: t.clone(),
                path: opts.path.clone(),
                period: opts.smi_period,
                timeout: opts.smi_timeout,
            },
            cache.clone(),
        )),
        None => {
            tracing::info!(
                "neither rocm-smi nor amd-smi is on PATH; AMD readings come from sysfs only"
            );
            None
        }
    }
}

/// The driver version: the tool's first answer, else the amdgpu module's version in sysfs.
fn driver_version(
    first_answer: Option<&Result<smi_runner::SmiAnswer, smi_runner::SmiRunError>>,
    opts: &RocmOptions,
) -> Option<String> {
    match first_answer {
        Some(Ok(a)) => a.driver_version.clone(),
        _ => None,
    }
    .or_else(|| {
        std::fs::read_to_string(opts.sysfs_root.join("module/amdgpu/version"))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    })
}

fn no_gpu_error(
    opts: &RocmOptions,
    tool: &Option<SmiTool>,
    answer: &Option<Result<smi_runner::SmiAnswer, smi_runner::SmiRunError>>,
) -> RocmOpenError {
    let smi_tried = match tool {
        Some(SmiTool::RocmSmi(p)) | Some(SmiTool::AmdSmi(p)) => {
            format!(
                "{} ({})",
                tool.as_ref().map_or("", SmiTool::name),
                p.display()
            )
        }
        None => "rocm-smi/amd-smi".to_string(),
    };
    let smi_failed = match (tool, answer) {
        (None, _) | (_, None) => {
            "neither rocm-smi nor amd-smi is on PATH (install rocm-smi or amd-smi to read GPUs sysfs does not show)".to_string()
        }
        (Some(_), Some(Ok(a))) if a.gpus.is_empty() => "it listed no GPU".to_string(),
        (Some(_), Some(Ok(_))) => "it listed GPUs but none with a PCI bus id".to_string(),
        (Some(_), Some(Err(e))) => e.to_string(),
    };
    RocmOpenError {
        sysfs_tried: opts.sysfs_root.join("class/drm").display().to_string(),
        sysfs_failed: format!(
            "no card with vendor {} and gpu_busy_percent (is the amdgpu driver loaded?)",
            sysfs::AMD_VENDOR
        ),
        smi_tried,
        smi_failed,
    }
}

fn device_info(
    index: u32,
    card: Option<&SysfsCard>,
    bus: Option<&str>,
    smi: Option<&SmiGpu>,
) -> DeviceInfo {
    let st = card.map(SysfsCard::read_static).unwrap_or_default();
    let name = smi
        .and_then(|g| g.name.clone())
        .or(st.name.clone())
        .or_else(|| st.device_id.as_ref().map(|d| format!("AMD GPU {d}")))
        .unwrap_or_else(|| "AMD GPU".to_string());
    DeviceInfo {
        index,
        name,
        vendor: Vendor::Amd,
        uuid: None,
        bus_id: bus.map(str::to_string),
        architecture: None,
        memory_total_bytes: st.vram_total_bytes.or(smi.and_then(|g| g.vram_total_bytes)),
        power_limit_watts: st.power_cap_w.or(smi.and_then(|g| g.power_cap_w)),
        power_default_limit_watts: st.power_cap_default_w,
        power_max_limit_watts: st.power_cap_max_w,
        sm_clock_max_mhz: st.sclk_max_mhz.or(smi.and_then(|g| g.sclk_max_mhz)),
        mem_clock_max_mhz: st.mclk_max_mhz.or(smi.and_then(|g| g.mclk_max_mhz)),
        pcie_gen_max: st.pcie_gen_max,
        pcie_width_max: st.pcie_width_max,
        temperature_slowdown_c: None,
        has_fan: st.has_fan,
        gpm_supported: false,
        util_sampling: UtilSampling::Polled,
    }
}

/// Merge one tick: sysfs where present, the tool's answer for the rest.
pub fn merge(sys: &SysfsReading, smi: Option<&SmiGpu>) -> Metrics {
    let s = |f: fn(&SmiGpu) -> Option<f64>| smi.and_then(f);
    let su = |f: fn(&SmiGpu) -> Option<u32>| smi.and_then(f);
    let temp_edge = sys.temp_edge_c.or(s(|g| g.temp_edge_c));
    let temp_junction = sys.temp_junction_c.or(s(|g| g.temp_junction_c));
    Metrics {
        util_gpu: sys.util_gpu.or(s(|g| g.util_gpu)),
        util_mem: sys.util_mem.or(s(|g| g.util_mem)),
        mem_used_bytes: sys.vram_used_bytes.or(smi.and_then(SmiGpu::vram_used)),
        mem_total_bytes: sys
            .vram_total_bytes
            .or(smi.and_then(|g| g.vram_total_bytes)),
        power_w: sys.power_w.or(s(|g| g.power_w)),
        power_limit_w: sys.power_cap_w.or(s(|g| g.power_cap_w)),
        temp_c: temp_edge.or(temp_junction),
        sm_clock_mhz: sys.sclk_mhz.or(su(|g| g.sclk_mhz)),
        mem_clock_mhz: sys.mclk_mhz.or(su(|g| g.mclk_mhz)),
        fan_pct: sys.fan_pct,
        energy_j: sys.energy_j,
        pcie_gen: sys.pcie_gen.or(su(|g| g.pcie_gen)),
        pcie_width: sys.pcie_width.or(su(|g| g.pcie_width)),
        ..Metrics::default()
    }
}

/// One AMD GPU.
pub struct RocmDevice {
    index: u32,
    card: Option<SysfsCard>,
    /// The key into the tool's answers; `None` when sysfs gave no bus id (sysfs values only).
    bus_id: Option<String>,
    cache: SmiCache,
    stale_after: Duration,
    /// Keeps the SMI thread running while any device is sampled.
    _poller: Arc<Option<SmiPoller>>,
}

impl DeviceSampler for RocmDevice {
    fn index(&self) -> u32 {
        self.index
    }

    fn sample(&mut self, now: UnixTime) -> Result<GpuReading, DeviceError> {
        let sys = match &self.card {
            Some(card) => card.read().map_err(|e| {
                DeviceError::Lost(format!(
                    "{} is gone from sysfs ({e})",
                    card.device_dir.display()
                ))
            })?,
            None => SysfsReading::default(),
        };
        let smi = self
            .bus_id
            .as_deref()
            .and_then(|b| self.cache.get(b, self.stale_after));
        let metrics = merge(&sys, smi.as_ref());
        let util_windows = metrics
            .util_gpu
            .map(|util| vec![UtilWindow { t: now, util }])
            .unwrap_or_default();
        Ok(GpuReading {
            index: self.index,
            status: GpuStatus::Ok,
            metrics,
            util_windows,
            ..Default::default()
        })
    }
}

impl Backend for RocmBackend {
    fn system(&self) -> &SystemInfo {
        &self.system
    }
    fn take_devices(&mut self) -> Vec<Box<dyn DeviceSampler>> {
        std::mem::take(&mut self.devices)
    }
}
