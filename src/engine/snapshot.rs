//! What the engine publishes: every GPU's readings, history, verdict, findings and ledger, and
//! the monitor's health, at one instant.

use std::sync::Arc;

use serde::Serialize;

use super::mig::MigSnapshot;
use crate::history::GpuHistory;
use crate::ledger::GpuLedger;
use crate::model::{
    DeviceInfo, Finding, FindingKind, GpuHealth, GpuProcess, GpuStatus, HostReading, Metrics,
    Sample, SystemInfo, UnixTime, Watch, XidEvent,
};

/// One GPU as the front ends see it.
#[derive(Debug, Clone)]
pub struct GpuSnapshot {
    pub info: DeviceInfo,
    /// This tick's sampling state.
    pub status: GpuStatus,
    /// When the GPU last answered.
    pub last_ok: Option<UnixTime>,
    /// The latest readings this GPU gave (kept while it is stale, so the panel can show their age).
    pub current: Metrics,
    pub processes: Vec<GpuProcess>,
    pub history: GpuHistory,
    /// The detector's current verdict.
    pub verdict: FindingKind,
    /// Active findings on this GPU.
    pub findings: Vec<Finding>,
    /// Stalls the detector sees on the GPU while it has no finding (not yet one).
    pub watch: Option<Watch>,
    /// Where the GPU's time and energy went since the engine started (kept in every mode); a
    /// MIG GPU's holds its instances' at their share.
    pub ledger: Arc<GpuLedger>,
    /// The newest health counters read (they are read on their own period).
    pub health: Option<GpuHealth>,
    /// The XIDs seen since the engine started, oldest first (the newest [`RECENT_XIDS`]).
    pub xids: Vec<XidEvent>,
    /// The GPU's MIG instances (MIG mode only).
    pub mig: Vec<MigSnapshot>,
}

/// XIDs a snapshot keeps per GPU.
pub const RECENT_XIDS: usize = 32;

impl GpuSnapshot {
    /// Seconds since the GPU last answered, at `now`.
    pub fn age(&self, now: UnixTime) -> Option<f64> {
        self.last_ok.map(|t| (now - t).max(0.0))
    }
}

/// The monitor's own health.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct MonitorStats {
    pub samples_total: u64,
    /// GPU readings that failed (stale, lost or errors) since start.
    pub errors_total: u64,
    pub sample_duration_s: Option<f64>,
    pub interval_s: f64,
}

/// Everything a front end draws or writes, at one instant.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Time of the newest sample (0 before the first).
    pub t: UnixTime,
    /// Increases by one with every sample ingested.
    pub seq: u64,
    pub system: Arc<SystemInfo>,
    pub host: HostReading,
    pub gpus: Vec<GpuSnapshot>,
    /// Findings that ended, newest last (bounded).
    pub recent_findings: Vec<Finding>,
    pub stats: MonitorStats,
    /// The newest sample as read (for recorders and streams).
    pub sample: Option<Arc<Sample>>,
}

impl Snapshot {
    /// All active findings across GPUs.
    pub fn active_findings(&self) -> impl Iterator<Item = &Finding> {
        self.gpus.iter().flat_map(|g| g.findings.iter())
    }
}
