//! Backend samples in, immutable snapshots out.
//!
//! The engine is the one writer of history: it appends each sample to every GPU's ring buffers,
//! runs the detector, and builds an [`Snapshot`] that every front end reads. A snapshot shares the
//! full chunks of history with the engine, so publishing one every tick copies almost nothing.

use std::sync::Arc;

use serde::Serialize;

use crate::detector::{priority, Detector, DetectorConfig, FindingEvent};
use crate::history::{GpuHistory, TickMetrics};
use crate::ledger::{GpuLedger, LedgerBook, TickInput};
use crate::model::{
    DeviceInfo, Finding, FindingKind, GpuProcess, GpuStatus, HostReading, Metrics, Sample,
    SystemInfo, UnixTime, Watch,
};

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
    /// Where the GPU's time and energy went since the engine started (kept in every mode).
    pub ledger: Arc<GpuLedger>,
}

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

/// A raised finding in one line, the lead first (a screen cuts the line at its end): the kind,
/// the share of time lost, the fix, then what was seen, the host's notes and the advice.
fn raised_text(f: &Finding) -> String {
    let lost = f
        .evidence
        .lost_fraction
        .map_or_else(String::new, |l| format!(", {:.0}% of time lost", l * 100.0));
    let fix = f
        .evidence
        .fix
        .as_deref()
        .map_or_else(String::new, |x| format!(" → {x}"));
    let notes = if f.evidence.notes.is_empty() {
        String::new()
    } else {
        format!(" [{}]", f.evidence.notes.join("; "))
    };
    format!(
        "GPU {} {}{lost}{fix} | {}{notes} → {}",
        f.gpu,
        f.kind.title(),
        f.summary,
        f.advice
    )
}

/// A cleared finding in one line: how long it lasted and, where the detector measured the time
/// lost, what it cost in GPU time.
fn cleared_text(f: &Finding) -> String {
    let lasted = f.end.map(|end| (end - f.start).max(0.0));
    let after = lasted.map_or_else(String::new, |s| {
        format!(" after {}", crate::host::format_running(s))
    });
    let cost = match (lasted, f.evidence.lost_fraction) {
        (Some(s), Some(l)) => format!(
            ", cost ~{} of GPU time ({:.0}%)",
            crate::host::format_running(s * l),
            l * 100.0
        ),
        _ => String::new(),
    };
    format!("GPU {} {} cleared{after}{cost}", f.gpu, f.kind.title())
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
        self.update_ledgers(&sample);
        for ev in &mut events {
            self.report_event(ev);
        }
        if !self.snapshots {
            return events;
        }
        self.copy_detector_state(sample.t);
        self.last_sample = Some(Arc::new(sample));
        events
    }

    /// Append each GPU's readings of `sample` to its history, keep its status and processes, and
    /// tell the detector which processes hold each GPU that answered.
    fn take_readings(&mut self, sample: &Sample) {
        for reading in &sample.gpus {
            let Some(g) = self.gpus.iter_mut().find(|g| g.info.index == reading.index) else {
                continue;
            };
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
                    crate::host::annotate_finding(f, &g.processes, &self.host);
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

    /// Book the interval since the previous sample in every answering GPU's ledger, under what
    /// the snapshot showed during it, and take this tick's verdict and findings.
    fn update_ledgers(&mut self, sample: &Sample) {
        let findings = self.detector.active();
        for reading in &sample.gpus {
            let Some(pos) = self.gpus.iter().position(|g| g.info.index == reading.index) else {
                continue;
            };
            let g = &mut self.gpus[pos];
            let input = TickInput {
                t: sample.t,
                gpu: reading.index,
                answering: !matches!(reading.status, GpuStatus::Lost { .. }),
                metrics: &reading.metrics,
                // Kept while the GPU is stale, cleared when it is lost.
                processes: &g.processes,
                verdict: self.detector.verdict(pos),
                full_level: self.detector.full_level(pos),
                findings,
            };
            self.ledgers[pos].tick(&mut g.ledger, &input);
        }
    }

    /// The ledger of the GPU at `pos` (in the system's device order).
    pub fn ledger(&self, pos: usize) -> Option<&GpuLedger> {
        self.gpus.get(pos).map(|g| g.ledger.as_ref())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::sim::{SimBackend, SimConfig};
    use crate::backend::DeviceSampler;
    use crate::model::GpuReading;

    fn sim_run(seconds: f64) -> Engine {
        let cfg = SimConfig {
            gpus: 2,
            start: Some(1000.0),
            hostname: Some("h".into()),
            ..Default::default()
        };
        let system = SimBackend::new(cfg.clone()).system().clone();
        let mut devs = SimBackend::devices_for(&cfg);
        let mut engine = Engine::new(system, EngineConfig::default());
        let mut t = 1000.0;
        while t < 1000.0 + seconds {
            t += 0.25;
            let gpus: Vec<GpuReading> = devs
                .iter_mut()
                .map(|d| d.sample(t).expect("sim never fails"))
                .collect();
            engine.ingest(Sample {
                t,
                gpus,
                ..Default::default()
            });
        }
        engine
    }

    use crate::backend::Backend;

    #[test]
    fn history_holds_every_tick_and_every_driver_window() {
        let e = sim_run(30.0);
        let s = e.snapshot();
        assert_eq!(s.seq, 120);
        let g = &s.gpus[0];
        assert_eq!(g.history.ticks.len(), 120);
        // 30 s of 200 ms windows.
        assert!(
            (148..=151).contains(&g.history.util.len()),
            "{}",
            g.history.util.len()
        );
        assert_eq!(g.status, GpuStatus::Ok);
        assert_eq!(g.last_ok, Some(s.t));
    }

    #[test]
    fn a_stale_tick_keeps_the_last_readings_and_records_a_gap() {
        let mut e = sim_run(2.0);
        let before = e.snapshot().gpus[1].current;
        let t = e.snapshot().t + 0.25;
        e.ingest(Sample {
            t,
            gpus: vec![
                GpuReading {
                    index: 0,
                    ..Default::default()
                },
                GpuReading::empty(1, GpuStatus::Stale { since: t - 0.25 }),
            ],
            ..Default::default()
        });
        let s = e.snapshot();
        assert_eq!(s.gpus[1].current, before);
        assert!(matches!(s.gpus[1].status, GpuStatus::Stale { .. }));
        let last = s.gpus[1].history.ticks.last().expect("a tick");
        assert!(!last.ok);
        assert_eq!(last.metrics.util_gpu, None);
        assert_eq!(s.stats.errors_total, 1);
        assert!((s.gpus[1].age(t).expect("answered once") - 0.25).abs() < 1e-9);
    }

    /// The starving scenario's GPU 0 (CPU-saturated workers) and GPU 2 (workers in D state)
    /// through the engine on a virtual clock; `calm_after` replaces every worker by an idle one
    /// from that time on.
    fn starving_run(seconds: f64, calm_after: f64) -> (Engine, Vec<FindingEvent>) {
        let cfg = SimConfig {
            scenario: crate::backend::sim::Scenario::Starving,
            gpus: 3,
            start: Some(1000.0),
            hostname: Some("h".into()),
            ..Default::default()
        };
        let system = SimBackend::new(cfg.clone()).system().clone();
        let mut devs = SimBackend::devices_for(&cfg);
        let mut engine = Engine::new(system, EngineConfig::default());
        let host = HostReading {
            cpu_count: Some(32),
            cpu_percent: Some(20.0),
            iowait_percent: Some(1.0),
            ..Default::default()
        };
        let mut events = Vec::new();
        let mut t = 1000.0;
        while t < 1000.0 + seconds {
            t += 0.25;
            let mut gpus: Vec<GpuReading> = devs
                .iter_mut()
                .map(|d| d.sample(t).expect("sim never fails"))
                .collect();
            if t >= 1000.0 + calm_after {
                for c in gpus
                    .iter_mut()
                    .flat_map(|g| g.processes.iter_mut())
                    .flat_map(|p| p.children.iter_mut())
                {
                    c.cpu_percent = Some(1.0);
                    c.state = Some('S');
                }
            }
            events.extend(engine.ingest(Sample {
                t,
                gpus,
                host,
                ..Default::default()
            }));
        }
        (engine, events)
    }

    fn starvation_notes(s: &Snapshot, gpu: usize) -> Vec<String> {
        s.gpus[gpu]
            .findings
            .iter()
            .find(|f| f.kind == FindingKind::InputStarvation)
            .map(|f| f.evidence.notes.clone())
            .unwrap_or_default()
    }

    #[test]
    fn a_raised_starvation_event_carries_the_host_evidence() {
        let (engine, events) = starving_run(25.0, f64::MAX);
        let raised: Vec<&Finding> = events
            .iter()
            .filter_map(|e| match e {
                FindingEvent::Raised(f) if f.kind == FindingKind::InputStarvation => Some(f),
                _ => None,
            })
            .collect();
        let gpu0 = raised.iter().find(|f| f.gpu == 0).expect("GPU 0 raised");
        assert!(
            gpu0.evidence
                .notes
                .iter()
                .any(|n| n.contains("CPU-saturated")),
            "{:?}",
            gpu0.evidence.notes
        );
        assert!(gpu0.advice.contains("host: "), "{}", gpu0.advice);
        let gpu2 = raised.iter().find(|f| f.gpu == 2).expect("GPU 2 raised");
        assert!(
            gpu2.evidence.notes.iter().any(|n| n.contains("pid")),
            "{:?}",
            gpu2.evidence.notes
        );
        assert_ne!(gpu0.evidence.notes, gpu2.evidence.notes);
        // The snapshot shows the same evidence.
        assert!(!starvation_notes(&engine.snapshot(), 0).is_empty());
    }

    #[test]
    fn host_evidence_follows_the_workers_while_a_finding_is_active() {
        let (calm, _) = starving_run(25.0, 20.0);
        let s = calm.snapshot();
        assert!(
            s.gpus[0]
                .findings
                .iter()
                .any(|f| f.kind == FindingKind::InputStarvation),
            "still starving by the GPU's own signal"
        );
        // 5 s after the workers went idle the note says so, not "CPU-saturated".
        let notes = starvation_notes(&s, 0);
        assert!(
            notes.iter().all(|n| !n.contains("CPU-saturated")),
            "{notes:?}"
        );
        assert!(notes.iter().any(|n| n.contains("mean 1% CPU")), "{notes:?}");
        let (busy, _) = starving_run(25.0, f64::MAX);
        let notes = starvation_notes(&busy.snapshot(), 0);
        assert!(
            notes.iter().any(|n| n.contains("CPU-saturated")),
            "{notes:?}"
        );
    }
}
