//! `gpulse analyze`: run a recorded file through the same engine and detector, as fast as it reads,
//! and report per GPU the verdict, the verdict timeline, the findings and statistics.
//!
//! Any [`SampleSource`] works; [`open_source`] picks the reader from the file's first line.

use std::io::Read;
use std::path::{Path, PathBuf};

mod piped;
mod report;
mod text;

pub use report::{time_lost, verdict_over, GpuReport, GpuStats, Report};
pub use text::{local_time, render_text, verdict_mark, verdict_strip};

use crate::backend::smi_csv::{open_log, LogOptions, SmiCsvError};
use crate::backend::{LineCounts, SampleSource};
use crate::detector::signal::{bin, percentile_hist};
use crate::detector::{DetectorConfig, FindingEvent};
use crate::engine::{Engine, EngineConfig};
use crate::ledger::LedgerReport;
use crate::model::{DeviceInfo, Finding, FindingKind, GpuReading, Sample, SystemInfo, UnixTime};
use crate::printable;
use crate::recording::{RecordingError, RecordingReader};
use crate::timeline::VerdictTimeline;

/// Why a file cannot be analysed.
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    #[error(transparent)]
    Csv(#[from] SmiCsvError),
    #[error(transparent)]
    Recording(#[from] RecordingError),
    #[error("cannot read '{}': {cause}", printable::path(.path))]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("'{}' is mostly unreadable: {:.1}% of its data lines could be read ({} of {}, the first unreadable at line {}); check that it is an nvidia-smi CSV log matching its header (or --fields), or a gpulse recording", printable::path(.path), .counts.read_percent(), .counts.read, .counts.read + .counts.skipped, .counts.first_skipped.unwrap_or(0))]
    MostlyUnreadable { path: PathBuf, counts: LineCounts },
}

/// The kinds of file `analyze` tells apart by their first line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    /// A JSON header line: a gpulse recording (`gpulse record`).
    Recording,
    /// Anything else is read as a GPU log (nvidia-smi CSV, dmon or table, `dcgmi dmon`).
    SmiCsv,
}

/// Look at the first non-empty line (JSON or not) of `path`, uncompressed.
pub fn sniff(path: &Path) -> Result<FileFormat, AnalyzeError> {
    let read_err = |cause| AnalyzeError::Read {
        path: path.to_path_buf(),
        cause,
    };
    let (reader, _) = crate::backend::input::open_decompressed(path).map_err(read_err)?;
    let mut head = Vec::new();
    // A damaged compressed stream is reported by the reader that reads it whole.
    let _ = reader.take(64 * 1024).read_to_end(&mut head);
    let first = head
        .split(|b| *b == b'\n')
        .map(|l| l.trim_ascii())
        .find(|l| !l.is_empty());
    Ok(match first {
        Some(l) if l.starts_with(b"{") => FileFormat::Recording,
        _ => FileFormat::SmiCsv,
    })
}

/// Open the reader for `path`, with what a log does not say itself in `options`. Either reader
/// drops ticks and driver windows whose times are damaged (see [`crate::backend::tick_times`]).
pub fn open_source(
    path: &Path,
    options: &LogOptions,
) -> Result<Box<dyn SampleSource + Send>, AnalyzeError> {
    match sniff(path)? {
        FileFormat::SmiCsv => Ok(open_log(path, options)?),
        FileFormat::Recording => Ok(Box::new(RecordingReader::open(path)?)),
    }
}

/// Utilization readings of one GPU counted by whole percent, and what the file holds of the
/// readings that tell a busy GPU's work apart.
#[derive(Clone)]
struct UtilCounts {
    hist: [u32; 101],
    n: u32,
    sum: f64,
    idle: u64,
    /// Ticks at or above `busy_util`, and the most power drawn on one.
    busy_ticks: u64,
    busy_power_w: Option<f64>,
    /// Any SM activity reading; any power limit.
    sm_read: bool,
    limit_read: bool,
    /// Any tick reading SM, tensor-core and DRAM activity together (what tensor cores idle
    /// needs).
    tensor_read: bool,
}

impl UtilCounts {
    fn new() -> Self {
        UtilCounts {
            hist: [0; 101],
            n: 0,
            sum: 0.0,
            idle: 0,
            busy_ticks: 0,
            busy_power_w: None,
            sm_read: false,
            limit_read: false,
            tensor_read: false,
        }
    }

    /// What a busy tick's readings can tell: SM activity, the power limit, the power drawn.
    fn add_tick(&mut self, g: &GpuReading, busy_util: f64) {
        let m = &g.metrics;
        self.sm_read |= m.sm_active.is_some();
        self.limit_read |= m.power_limit_w.is_some();
        self.tensor_read |=
            m.sm_active.is_some() && m.tensor_active.is_some() && m.dram_active.is_some();
        if m.util_gpu.is_some_and(|u| u >= busy_util) {
            self.busy_ticks += 1;
            if let Some(p) = m.power_w {
                self.busy_power_w = Some(self.busy_power_w.map_or(p, |b| b.max(p)));
            }
        }
    }

    /// What the file cannot show of a GPU (described by `dev`) that was busy: without SM
    /// activity or a power limit, whether full utilization is real work is judged only against
    /// the most power the GPU drew busy in the file; without tensor-core activity (`active`: the
    /// GPU worked at all), whether its work used the tensor cores is not judged.
    fn limits(&self, dev: &DeviceInfo, active: bool) -> Vec<String> {
        let mut out = Vec::new();
        let blind = self.busy_ticks >= 8
            && !self.sm_read
            && !self.limit_read
            && dev.power_limit_watts.is_none();
        if let (true, Some(p)) = (blind, self.busy_power_w) {
            out.push(format!(
                "no SM activity or power limit in the file: busy but idle is judged only against the most power this GPU drew at full utilization here ({p:.0} W); log power.limit (or record with gpulse) to judge it from the first job"
            ));
        }
        if active && !self.tensor_read {
            out.push(
                "no tensor-core activity in the file (an nvidia-smi log, AMD and GPUs before Hopper do not report it): whether the work used the tensor cores (tensor_cores_idle) is not judged; record with gpulse on a Hopper or newer GPU to judge it"
                    .to_string(),
            );
        }
        out
    }

    /// The reading's driver windows, or its tick reading without them.
    fn add_reading(&mut self, g: &GpuReading, idle_util: f64) {
        let mut add = |u: f64| {
            self.hist[bin(u as f32)] += 1;
            self.n += 1;
            self.sum += u;
            if u < idle_util {
                self.idle += 1;
            }
        };
        if g.util_windows.is_empty() {
            if let Some(u) = g.metrics.util_gpu {
                add(u);
            }
        } else {
            g.util_windows.iter().for_each(|w| add(w.util));
        }
    }

    fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / self.n as f64)
    }

    fn stats(&self, span_s: f64, time_lost_s: f64) -> GpuStats {
        let some = self.n > 0;
        GpuStats {
            samples: self.n as u64,
            util_mean: self.mean(),
            util_p5: some.then(|| percentile_hist(&self.hist, self.n, 0.05)),
            util_p95: some.then(|| percentile_hist(&self.hist, self.n, 0.95)),
            idle_fraction: some.then(|| self.idle as f64 / self.n as f64),
            span_s,
            time_lost_s,
        }
    }
}

/// The host evidence (DataLoader workers, from the recorded processes) a finding was raised with:
/// the engine adds it to the raised event, the detector's own copies lack it.
struct HostNotes {
    gpu: u32,
    kind: FindingKind,
    detected_at: UnixTime,
    notes: Vec<String>,
    advice: String,
}

impl HostNotes {
    /// Whether these are the notes of finding `f` (the same raise).
    fn of(&self, f: &Finding) -> bool {
        (self.gpu, self.kind) == (f.gpu, f.kind)
            && self.detected_at.to_bits() == f.detected_at.to_bits()
    }
}

/// What a run of the engine over a file gathers.
struct Run {
    system: SystemInfo,
    counts: Vec<UtilCounts>,
    timelines: Vec<VerdictTimeline>,
    /// Findings that ended, then those still going at the end.
    found: Vec<Finding>,
    /// The host evidence of each finding as it was raised.
    host_notes: Vec<HostNotes>,
    start: Option<UnixTime>,
    end: Option<UnixTime>,
    samples: u64,
}

impl Run {
    fn new(system: SystemInfo) -> Self {
        let n = system.devices.len();
        Run {
            counts: vec![UtilCounts::new(); n],
            timelines: vec![VerdictTimeline::new(); n],
            system,
            found: Vec::new(),
            host_notes: Vec::new(),
            start: None,
            end: None,
            samples: 0,
        }
    }

    /// Count the readings of `sample` and put it through `engine`.
    fn ingest(&mut self, engine: &mut Engine, sample: Sample, cfg: &DetectorConfig) {
        self.samples += 1;
        self.start.get_or_insert(sample.t);
        self.end = Some(sample.t);
        let t = sample.t;
        for g in &sample.gpus {
            if let Some(pos) = self.system.devices.iter().position(|d| d.index == g.index) {
                self.counts[pos].add_reading(g, cfg.idle_util);
                self.counts[pos].add_tick(g, cfg.busy_util);
            }
        }
        for ev in engine.ingest(sample) {
            match ev {
                FindingEvent::Raised(f) if !f.evidence.notes.is_empty() => {
                    self.host_notes.push(HostNotes {
                        gpu: f.gpu,
                        kind: f.kind,
                        detected_at: f.detected_at,
                        notes: f.evidence.notes,
                        advice: f.advice,
                    });
                }
                FindingEvent::Raised(_) => {}
                FindingEvent::Cleared(f) => self.found.push(f),
            }
        }
        for (pos, timeline) in self.timelines.iter_mut().enumerate() {
            timeline.observe(t, engine.detector().verdict(pos));
        }
    }

    /// The findings in order of start, each with the host evidence it was raised with.
    fn findings(&mut self, engine: &mut Engine) -> Vec<Finding> {
        let mut found = std::mem::take(&mut self.found);
        found.extend(engine.active_findings().iter().cloned());
        for f in found.iter_mut().filter(|f| f.evidence.notes.is_empty()) {
            if let Some(h) = self.host_notes.iter().find(|h| h.of(f)) {
                f.evidence.notes = h.notes.clone();
                f.advice = h.advice.clone();
            }
        }
        found.sort_by(|a, b| a.start.total_cmp(&b.start));
        found
    }
}

/// Run `source` through an engine with `detector` and build the report.
pub fn analyze(file: &str, source: &mut dyn SampleSource, detector: &DetectorConfig) -> Report {
    let system = source.system().clone();
    let mut samples = std::iter::from_fn(|| source.next_sample());
    let mut report = analyze_samples(file, system, &mut samples, detector);
    report.assumptions = source.assumptions();
    report.warnings = source.warnings();
    report
}

/// The report of `samples` of the GPUs of `system` (no warnings or assumptions: the caller's
/// source has them).
fn analyze_samples(
    file: &str,
    system: SystemInfo,
    samples: &mut dyn Iterator<Item = Sample>,
    detector: &DetectorConfig,
) -> Report {
    let config = EngineConfig {
        interval_s: 0.25,
        retention_s: detector.window_s.max(detector.rules_window_s) + 30.0,
        detector: detector.clone(),
    };
    let mut engine = Engine::new(system.clone(), config);
    // Only the events, the verdicts and the findings at the end are read.
    engine.without_snapshots();
    let mut run = Run::new(system);
    for sample in samples {
        run.ingest(&mut engine, sample, detector);
    }
    let found = run.findings(&mut engine);
    let last = run.end.unwrap_or(0.0);
    let span = run.end.zip(run.start).map(|(e, s)| e - s).unwrap_or(0.0);
    let timelines = std::mem::take(&mut run.timelines);
    let gpus = run
        .system
        .devices
        .iter()
        .zip(&run.counts)
        .zip(timelines)
        .enumerate()
        .map(|(pos, ((d, counts), timeline))| {
            let findings: Vec<Finding> =
                found.iter().filter(|f| f.gpu == d.index).cloned().collect();
            let busy = counts.mean().is_some_and(|m| m >= detector.idle_util);
            GpuReport {
                index: d.index,
                name: d.name.clone(),
                verdict: verdict_over(&findings, (run.start.unwrap_or(last), last), busy),
                timeline: timeline.finish(last),
                stats: counts.stats(span, time_lost(&findings, last)),
                limits: counts.limits(d, busy),
                findings,
                ledger: LedgerReport::new(engine.ledger(pos).unwrap_or(&Default::default())),
            }
        })
        .collect();
    Report {
        file: file.to_string(),
        source: run.system.backend.clone(),
        start: run.start,
        end: run.end,
        samples: run.samples,
        gpus,
        assumptions: Vec::new(),
        warnings: Vec::new(),
    }
}

/// Analyse one file by path; `fields` names the columns of a headerless CSV log.
pub fn analyze_path(
    path: &Path,
    fields: Option<&[String]>,
    detector: &DetectorConfig,
) -> Result<Report, AnalyzeError> {
    let options = LogOptions {
        fields: fields.map(<[String]>::to_vec),
        interval_s: None,
    };
    analyze_file(path, &options, detector)
}

/// Analyse one file by path, with what a log does not say itself in `options`. A file with no
/// sample, or with more data lines unreadable than read, is an error: a report of what little
/// was read would pass chance for data.
pub fn analyze_file(
    path: &Path,
    options: &LogOptions,
    detector: &DetectorConfig,
) -> Result<Report, AnalyzeError> {
    let format = sniff(path)?;
    let mut source = open_source(path, options)?;
    let mut report = piped::analyze_piped(&printable::path(path), source.as_mut(), detector);
    if let Some(counts) = source.line_counts().filter(LineCounts::mostly_unreadable) {
        return Err(AnalyzeError::MostlyUnreadable {
            path: path.to_path_buf(),
            counts,
        });
    }
    if report.samples == 0 {
        return Err(RecordingError::NoSamples(path.to_path_buf()).into());
    }
    if format == FileFormat::Recording {
        report.source = format!("gpulse recording, {}", report.source);
    }
    Ok(report)
}
