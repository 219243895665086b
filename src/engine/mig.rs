//! MIG instances, each judged and booked like a GPU of its own.
//!
//! NVML reports no utilization per MIG instance (nor for a GPU in MIG mode); GPM reports SM,
//! tensor and DRAM activity per GPU instance (Hopper and newer). Each instance therefore gets a
//! detector of its own that reads its SM activity where a GPU's detector reads utilization (a
//! polled source: one reading per GPM read), and a ledger of its own booked the same way. An
//! instance without GPM readings has no verdict: there is no signal to judge. The GPU's ledger
//! takes its instances' at their share of the GPU (see [`crate::ledger::jobs::with_instances`]).

use std::collections::HashMap;
use std::sync::Arc;

use crate::detector::{Detector, FindingEvent};
use crate::history::{GpuHistory, TickMetrics};
use crate::ledger::jobs::{gpu_slices, profile_slices, with_instances};
use crate::ledger::{GpuLedger, LedgerBook, TickInput};
use crate::model::{
    DeviceInfo, Finding, FindingKind, GpuProcess, GpuReading, GpuStatus, Metrics, MigReading,
    SystemInfo, UnixTime, UtilSampling, UtilWindow,
};

use super::EngineConfig;

/// One MIG instance as the front ends see it.
#[derive(Debug, Clone)]
pub struct MigSnapshot {
    /// The newest readings (IDs, profile, memory, GPM activity).
    pub reading: MigReading,
    /// The GPU's processes that run in this instance.
    pub processes: Vec<GpuProcess>,
    /// The detector's verdict on the instance; `None` without a signal to judge (no GPM).
    pub verdict: Option<FindingKind>,
    /// Active findings on the instance (their `gpu` is the parent GPU's index).
    pub findings: Vec<Finding>,
    /// The instance's share of the GPU (its compute slices of the GPU's).
    pub share: f64,
    pub ledger: Arc<GpuLedger>,
}

/// What the engine keeps of one instance.
struct InstanceTrack {
    gpu: u32,
    key: (u32, u32),
    detector: Detector,
    history: GpuHistory,
    book: LedgerBook,
    snapshot: MigSnapshot,
}

/// Every MIG instance seen, by GPU.
#[derive(Default)]
pub(super) struct MigTracks {
    tracks: Vec<InstanceTrack>,
    /// The ledger each MIG GPU books for itself (time and energy; its instances lose the time).
    own: HashMap<u32, Arc<GpuLedger>>,
}

impl MigTracks {
    /// Take GPU `device`'s reading at `t`: judge and book each of its instances. Returns the
    /// findings raised and cleared on them.
    pub fn ingest(
        &mut self,
        t: UnixTime,
        device: &DeviceInfo,
        reading: &GpuReading,
        processes: &[GpuProcess],
        config: &EngineConfig,
    ) -> Vec<FindingEvent> {
        let mut events = Vec::new();
        let answering = !matches!(reading.status, GpuStatus::Lost { .. });
        for m in &reading.mig {
            let pos = match self
                .tracks
                .iter()
                .position(|k| k.gpu == device.index && k.key == m.key())
            {
                Some(p) => p,
                None => {
                    self.tracks.push(InstanceTrack::new(device, m, config));
                    self.tracks.len() - 1
                }
            };
            let track = &mut self.tracks[pos];
            track.snapshot.share = share_of(m, device);
            events.extend(track.take(t, m, processes, answering, reading.status == GpuStatus::Ok));
        }
        events
    }

    /// Whether GPU `index` has (had) MIG instances.
    pub fn has(&self, index: u32) -> bool {
        self.tracks.iter().any(|k| k.gpu == index)
    }

    /// The ledger GPU `index` books for itself (its instances' losses are theirs).
    pub fn own_ledger(&mut self, index: u32) -> &mut Arc<GpuLedger> {
        self.own.entry(index).or_default()
    }

    /// The GPU's ledger with its instances' added.
    pub fn composed_ledger(&self, index: u32) -> Option<GpuLedger> {
        let own = self.own.get(&index)?;
        let instances: Vec<(f64, &GpuLedger)> = self
            .tracks
            .iter()
            .filter(|k| k.gpu == index)
            .map(|k| (k.snapshot.share, k.snapshot.ledger.as_ref()))
            .collect();
        Some(with_instances(own, &instances))
    }

    /// The instances of GPU `index` present in `reading`, for a snapshot.
    pub fn snapshots(&self, reading: &GpuReading) -> Vec<MigSnapshot> {
        reading
            .mig
            .iter()
            .filter_map(|m| {
                self.tracks
                    .iter()
                    .find(|k| k.gpu == reading.index && k.key == m.key())
                    .map(|k| k.snapshot.clone())
            })
            .collect()
    }
}

/// An instance's share of its GPU: its compute slices of the GPU's; where the profile does not
/// say, its memory's share.
fn share_of(m: &MigReading, device: &DeviceInfo) -> f64 {
    let slices = m.profile.as_deref().and_then(profile_slices);
    match (slices, m.memory_total_bytes, device.memory_total_bytes) {
        (Some(s), _, _) => f64::from(s) / f64::from(gpu_slices(&device.name)),
        (None, Some(part), Some(all)) if all > 0 => part as f64 / all as f64,
        _ => 0.0,
    }
}

impl InstanceTrack {
    fn new(device: &DeviceInfo, m: &MigReading, config: &EngineConfig) -> Self {
        let pseudo = DeviceInfo {
            index: device.index,
            name: format!(
                "{} MIG {}",
                device.name,
                m.profile.as_deref().unwrap_or("?")
            ),
            memory_total_bytes: m.memory_total_bytes,
            gpm_supported: device.gpm_supported,
            util_sampling: UtilSampling::Polled,
            ..Default::default()
        };
        let system = SystemInfo {
            devices: vec![pseudo],
            ..Default::default()
        };
        let backfill_s = config.detector.window_s + config.detector.rules_window_s;
        InstanceTrack {
            gpu: device.index,
            key: m.key(),
            detector: Detector::new(config.detector.clone(), &system),
            history: GpuHistory::new(config.retention_s, config.interval_s),
            book: LedgerBook::new(backfill_s),
            snapshot: MigSnapshot {
                reading: m.clone(),
                processes: Vec::new(),
                verdict: None,
                findings: Vec::new(),
                share: 0.0,
                ledger: Arc::default(),
            },
        }
    }

    /// Take the instance's tick: its SM activity as its utilization, its processes, its memory.
    fn take(
        &mut self,
        t: UnixTime,
        m: &MigReading,
        gpu_processes: &[GpuProcess],
        answering: bool,
        ok: bool,
    ) -> Vec<FindingEvent> {
        let metrics = Metrics {
            util_gpu: m.sm_active,
            mem_used_bytes: m.memory_used_bytes,
            mem_total_bytes: m.memory_total_bytes,
            sm_active: m.sm_active,
            tensor_active: m.tensor_active,
            dram_active: m.dram_active,
            ..Default::default()
        };
        self.history.ticks.push(TickMetrics { t, ok, metrics });
        if let Some(util) = m.sm_active.filter(|_| ok) {
            self.history.util.push(UtilWindow { t, util });
        }
        let processes: Vec<GpuProcess> = gpu_processes
            .iter()
            .filter(|p| m.pids.contains(&p.pid))
            .cloned()
            .collect();
        let pids: Vec<u32> = processes.iter().map(|p| p.pid).collect();
        if ok {
            self.detector.note_processes(0, t, &pids);
        }
        let mut events = self.detector.update(t, &[&self.history]);
        let verdict = self.detector.verdict(0);
        let input = TickInput {
            t,
            gpu: self.gpu,
            answering,
            metrics: &metrics,
            processes: &processes,
            verdict,
            full_level: self.detector.full_level(0),
            findings: self.detector.active(),
            // Faults and throttling are the whole GPU's: its own ledger books them.
            xids: &[],
            sm_clock_max_mhz: None,
        };
        self.book.tick(&mut self.snapshot.ledger, &input);
        let job = crate::host::jobs::dominant_job(&processes).map(|j| j.label());
        for ev in &mut events {
            if let FindingEvent::Raised(f) = ev {
                f.evidence.job = f.evidence.job.take().or_else(|| job.clone());
            }
        }
        self.snapshot.reading = m.clone();
        self.snapshot.verdict = m.has_signal().then_some(verdict);
        self.snapshot.findings = self
            .detector
            .active()
            .iter()
            .cloned()
            .map(|mut f| {
                f.evidence.job = f.evidence.job.take().or_else(|| job.clone());
                f
            })
            .collect();
        self.snapshot.processes = processes;
        events
    }
}
