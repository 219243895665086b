//! Backend samples in, immutable snapshots out.
//!
//! The engine is the one writer of history: it appends each sample to every GPU's ring buffers,
//! runs the detector, and builds an [`Snapshot`] that every front end reads. A snapshot shares the
//! full chunks of history with the engine, so publishing one every tick copies almost nothing.

use std::sync::Arc;

use crate::detector::{priority, Detector, DetectorConfig, FindingEvent};
use crate::history::{GpuHistory, TickMetrics};
use crate::ledger::LedgerBook;
use crate::model::{
    Finding, FindingKind, GpuStatus, HostReading, Metrics, Sample, SystemInfo, UnixTime,
};

mod event_text;
mod health_line;
mod ledger_feed;
mod mig;
mod snapshot;

use event_text::{cleared_text, raised_text};
pub use health_line::HealthState;
pub use mig::MigSnapshot;
pub use snapshot::{GpuSnapshot, MonitorStats, Snapshot, RECENT_XIDS};

/// The log target of findings raised and cleared: the dashboard's event panel shows them;
/// headless commands, whose output already holds the findings, log them only when asked (`-v`).
pub const FINDINGS_TARGET: &str = "gpulse::findings";
/// How the engine keeps history.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineConfig {
    /// Seconds between ticks.
    pub interval_s: f64,
    /// Seconds of history kept.
    pub retention_s: f64,
    pub detector: DetectorConfig,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            interval_s: 0.25,
            retention_s: 600.0,
            detector: DetectorConfig::default(),
        }
    }
}

/// Findings that ended kept for the snapshots, newest last.
const RECENT_FINDINGS: usize = 64;

/// Seconds between refreshes of the host evidence (DataLoader workers) of an active starvation or
/// erratic-stalls finding, between detector evaluations.
pub const EVIDENCE_REFRESH_S: f64 = 1.0;

/// Whether host evidence applies to this kind of finding.
fn wants_host_evidence(kind: FindingKind) -> bool {
    matches!(
        kind,
        FindingKind::InputStarvation | FindingKind::ErraticStalls | FindingKind::MemoryIdle
    )
}

/// Owns history and the detector.
pub struct Engine {
    system: Arc<SystemInfo>,
    config: EngineConfig,
    gpus: Vec<GpuSnapshot>,
    detector: Detector,
    /// One ledger writer per GPU, in the order of `gpus`.
    ledgers: Vec<LedgerBook>,
    host: HostReading,
    recent_findings: Vec<Finding>,
    stats: MonitorStats,
    t: UnixTime,
    seq: u64,
    last_sample: Option<Arc<Sample>>,
    /// The detector revision the per-GPU verdicts and findings were copied at.
    detector_revision: u64,
    /// When the host evidence of active findings is next refreshed.
    next_evidence: UnixTime,
    /// False when nothing reads snapshots (see [`Self::without_snapshots`]).
    snapshots: bool,
    /// Buffer for the process IDs of one GPU (no allocation per tick).
    pids: Vec<u32>,
    /// MIG instances, each judged and booked on its own.
    mig: mig::MigTracks,
}

impl Engine {
    pub fn new(system: SystemInfo, config: EngineConfig) -> Self {
        let gpus = system
            .devices
            .iter()
            .map(|d| GpuSnapshot {
                info: d.clone(),
                status: GpuStatus::Stale { since: 0.0 },
                last_ok: None,
                current: Metrics::default(),
                processes: Vec::new(),
                history: GpuHistory::new(config.retention_s, config.interval_s),
                verdict: FindingKind::Pending,
                findings: Vec::new(),
                watch: None,
                ledger: Arc::default(),
                health: None,
                xids: Vec::new(),
                mig: Vec::new(),
            })
            .collect();
        let detector = Detector::new(config.detector.clone(), &system);
        // A finding's evidence begins within the detector's window (and the rules window before
        // the tick that raised it).
        let backfill_s = config.detector.window_s + config.detector.rules_window_s;
        let ledgers = system
            .devices
            .iter()
            .map(|_| LedgerBook::new(backfill_s))
            .collect();
        Engine {
            stats: MonitorStats {
                interval_s: config.interval_s,
                ..Default::default()
            },
            system: Arc::new(system),
            config,
            gpus,
            detector,
            ledgers,
            host: HostReading::default(),
            recent_findings: Vec::new(),
            t: 0.0,
            seq: 0,
            last_sample: None,
            detector_revision: u64::MAX,
            next_evidence: f64::MIN,
            snapshots: true,
            pids: Vec::new(),
            mig: mig::MigTracks::default(),
        }
    }

    /// For a reader of events and findings only (`analyze`): skip the work only snapshots need
    /// (per-GPU copies of the current readings, and of verdicts and findings after each
    /// evaluation; keeping the last sample)
    /// and let the detector defer refreshed summary texts. Events are the same; read the
    /// findings still active through [`Self::active_findings`]. Snapshots of such an engine
    /// carry no current readings, verdicts, findings or sample.
    pub fn without_snapshots(&mut self) {
        self.snapshots = false;
        self.detector.defer_summaries();
    }

    /// The findings still going on, with their texts up to date.
    pub fn active_findings(&mut self) -> &[Finding] {
        self.detector.refresh_summaries();
        self.detector.active()
    }

    pub fn system(&self) -> &Arc<SystemInfo> {
        &self.system
    }

    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    pub fn detector(&self) -> &Detector {
        &self.detector
    }

    /// Append one sample, run the detector, and return the events it raised or cleared.
    pub fn ingest(&mut self, sample: Sample) -> Vec<FindingEvent> {
        self.t = sample.t;
        self.seq += 1;
        self.stats.samples_total += 1;
        self.stats.sample_duration_s = sample.sample_duration_s;
        self.host = sample.host;
        self.take_readings(&sample);
        let histories: Vec<&GpuHistory> = self.gpus.iter().map(|g| &g.history).collect();
        let mut events = self.detector.update(sample.t, &histories);
        events.extend(self.take_mig(&sample));
        self.update_ledgers(&sample);
        for ev in &mut events {
            self.report_event(ev);
        }
        if !self.snapshots {
            return events;
        }
        self.copy_detector_state(sample.t);
        self.show_mig_verdicts();
        self.last_sample = Some(Arc::new(sample));
        events
    }

    /// A MIG GPU's verdict and findings are its instances': the GPU itself reports no
    /// utilization to judge.
    fn show_mig_verdicts(&mut self) {
        for g in self.gpus.iter_mut().filter(|g| !g.mig.is_empty()) {
            g.findings = g
                .mig
                .iter()
                .flat_map(|m| m.findings.iter().cloned())
                .collect();
            g.findings
                .sort_by_key(|f| (std::cmp::Reverse(f.severity), priority(f.kind)));
            let named = g
                .findings
                .iter()
                .find(|f| f.severity >= crate::model::Severity::Warn)
                .map(|f| f.kind);
            // Without a finding: stalls before a verdict not yet known, before healthy, idle.
            let order = |v: FindingKind| {
                let plain = [
                    FindingKind::Stalling,
                    FindingKind::Pending,
                    FindingKind::Healthy,
                    FindingKind::Idle,
                ];
                (priority(v), plain.iter().position(|p| *p == v))
            };
            let best = g
                .mig
                .iter()
                .filter_map(|m| m.verdict)
                .min_by_key(|v| order(*v));
            g.verdict = named.or(best).unwrap_or(FindingKind::Pending);
        }
    }

    /// Append each GPU's readings of `sample` to its history, keep its status and processes, and
    /// tell the detector which processes hold each GPU that answered.
    fn take_readings(&mut self, sample: &Sample) {
        for reading in &sample.gpus {
            let Some(pos) = self.gpus.iter().position(|g| g.info.index == reading.index) else {
                continue;
            };
            self.detector
                .note_health(pos, reading.health.as_ref(), &reading.xids);
            let g = &mut self.gpus[pos];
            take_health(g, reading);
            let ok = reading.status == GpuStatus::Ok;
            if !ok {
                self.stats.errors_total += 1;
            }
            g.history.ticks.push(TickMetrics {
                t: sample.t,
                ok,
                metrics: reading.metrics,
            });
            let last_window = g.history.util.last().map(|w| w.t);
            for w in &reading.util_windows {
                // The merger already drops repeats; stay monotonic whatever a source sends.
                if last_window.is_none_or(|lt| w.t > lt) {
                    g.history.util.push(*w);
                }
            }
            g.status = reading.status.clone();
            if ok {
                g.last_ok = Some(sample.t);
                if self.snapshots {
                    g.current = reading.metrics;
                }
                g.processes = reading.processes.clone();
            } else if let GpuStatus::Lost { .. } = reading.status {
                g.processes.clear();
            }
        }
        for (pos, g) in self.gpus.iter().enumerate() {
            if g.status == GpuStatus::Ok {
                self.pids.clear();
                self.pids.extend(g.processes.iter().map(|p| p.pid));
                self.detector.note_processes(pos, sample.t, &self.pids);
            }
        }
    }

    /// Log a raised or cleared finding; a raised one gets the host evidence the user sees at
    /// raise time, a cleared one joins the recent findings.
    fn report_event(&mut self, ev: &mut FindingEvent) {
        match ev {
            FindingEvent::Raised(f) => {
                // The evidence the user sees at raise time goes into the event (and its log line).
                if let Some(g) = self.gpus.iter().find(|g| g.info.index == f.gpu) {
                    if f.evidence.job.is_none() {
                        crate::host::annotate_finding(f, &g.processes, &self.host);
                        f.evidence.job =
                            crate::host::jobs::dominant_job(&g.processes).map(|j| j.label());
                    }
                }
                tracing::warn!(target: FINDINGS_TARGET, "{}", raised_text(f))
            }
            FindingEvent::Cleared(f) => {
                tracing::info!(target: FINDINGS_TARGET, "{}", cleared_text(f));
                if self.recent_findings.len() >= RECENT_FINDINGS {
                    self.recent_findings
                        .drain(..=self.recent_findings.len() - RECENT_FINDINGS);
                }
                self.recent_findings.push(f.clone());
            }
        }
    }

    /// Copy the detector's verdicts, watches and findings into the per-GPU snapshots when they
    /// may have changed, and refresh the host evidence of active starvation findings.
    fn copy_detector_state(&mut self, t: UnixTime) {
        let revision = self.detector.revision();
        let changed = revision != self.detector_revision;
        // Between evaluations, the workers' state still changes: refresh the host evidence of
        // active starvation findings once per EVIDENCE_REFRESH_S (no /proc reads here: the
        // processes came with the sample).
        let refresh = t >= self.next_evidence;
        if refresh {
            self.next_evidence = t + EVIDENCE_REFRESH_S;
        }
        for (pos, g) in self.gpus.iter_mut().enumerate() {
            if changed {
                g.verdict = self.detector.verdict(pos);
                g.watch = self.detector.watch(pos);
                g.findings = self
                    .detector
                    .active()
                    .iter()
                    .filter(|f| f.gpu == g.info.index)
                    .cloned()
                    .collect();
                // The most important first, as the verdict ranks them: a starving fp32 job reads
                // its starvation before its idle tensor cores.
                g.findings
                    .sort_by_key(|f| (std::cmp::Reverse(f.severity), priority(f.kind)));
            } else if !refresh {
                break;
            }
            // The job the finding belongs to: the one on the GPU now.
            let job = crate::host::jobs::dominant_job(&g.processes).map(|j| j.label());
            for f in &mut g.findings {
                f.evidence.job = job.clone();
            }
            // Host evidence (DataLoader workers) for starvation findings.
            for f in g
                .findings
                .iter_mut()
                .filter(|f| wants_host_evidence(f.kind))
            {
                crate::host::annotate_finding(f, &g.processes, &self.host);
            }
        }
        self.detector_revision = revision;
    }

    /// Judge and book the MIG instances of every GPU of `sample` that has some.
    fn take_mig(&mut self, sample: &Sample) -> Vec<FindingEvent> {
        let mut events = Vec::new();
        for reading in sample.gpus.iter().filter(|r| !r.mig.is_empty()) {
            let Some(g) = self.gpus.iter_mut().find(|g| g.info.index == reading.index) else {
                continue;
            };
            events.extend(
                self.mig
                    .ingest(sample.t, &g.info, reading, &g.processes, &self.config),
            );
            if self.snapshots {
                g.mig = self.mig.snapshots(reading);
            }
        }
        events
    }

    /// An immutable view of the current state.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        Arc::new(Snapshot {
            t: self.t,
            seq: self.seq,
            system: self.system.clone(),
            host: self.host,
            gpus: self.gpus.clone(),
            recent_findings: self.recent_findings.clone(),
            stats: self.stats,
            sample: self.last_sample.clone(),
        })
    }
}

/// Keep the newest health read and the XIDs of `reading` in the GPU's snapshot.
fn take_health(g: &mut GpuSnapshot, reading: &crate::model::GpuReading) {
    if let Some(h) = &reading.health {
        g.health = Some(h.clone());
    }
    if !reading.xids.is_empty() {
        for x in &reading.xids {
            tracing::warn!(
                target: FINDINGS_TARGET,
                "GPU {}: XID {}: {}",
                g.info.index,
                x.xid,
                crate::model::xid_info(x.xid).meaning
            );
        }
        g.xids.extend_from_slice(&reading.xids);
        if g.xids.len() > RECENT_XIDS {
            g.xids.drain(..g.xids.len() - RECENT_XIDS);
        }
    }
}

#[cfg(test)]
mod tests;
