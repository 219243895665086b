//! `gpulse analyze`: run a recorded file through the same engine and detector, as fast as it reads,
//! and report per GPU the verdict, the findings and statistics.
//!
//! Any [`SampleSource`] works; [`open_source`] picks the reader from the file's first line.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::backend::smi_csv::{SmiCsvError, SmiCsvSource};
use crate::backend::{LineCounts, SampleSource};
use crate::detector::signal::{bin, percentile_hist};
use crate::detector::{priority, DetectorConfig};
use crate::engine::{Engine, EngineConfig};
use crate::ledger::{LedgerReport, Prices};
use crate::model::{Finding, FindingKind, Severity, UnixTime};
use crate::printable;
use crate::recording::{RecordingError, RecordingReader};

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
    /// A JSON header line, or a zstd stream: a gpulse recording (`gpulse record`).
    Recording,
    /// Anything else is read as an nvidia-smi CSV log.
    SmiCsv,
}

/// zstd's frame magic: `gpulse record FILE.zst` writes it; nvidia-smi never does.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// Look at the first bytes (zstd) or the first non-empty line (JSON or CSV) of `path`.
pub fn sniff(path: &Path) -> Result<FileFormat, AnalyzeError> {
    let file = std::fs::File::open(path).map_err(|cause| AnalyzeError::Read {
        path: path.to_path_buf(),
        cause,
    })?;
    let mut head = Vec::new();
    std::io::BufReader::new(file)
        .take(64 * 1024)
        .read_to_end(&mut head)
        .map_err(|cause| AnalyzeError::Read {
            path: path.to_path_buf(),
            cause,
        })?;
    if head.starts_with(&ZSTD_MAGIC) {
        return Ok(FileFormat::Recording);
    }
    let first = head
        .split(|b| *b == b'\n')
        .map(|l| l.trim_ascii())
        .find(|l| !l.is_empty());
    Ok(match first {
        Some(l) if l.starts_with(b"{") => FileFormat::Recording,
        _ => FileFormat::SmiCsv,
    })
}

/// Open the reader for `path`. `fields` names the columns of a headerless CSV log.
pub fn open_source(
    path: &Path,
    fields: Option<&[String]>,
) -> Result<Box<dyn SampleSource>, AnalyzeError> {
    match sniff(path)? {
        FileFormat::SmiCsv => Ok(Box::new(SmiCsvSource::open(path, fields)?)),
        FileFormat::Recording => Ok(Box::new(RecordingReader::open(path)?)),
    }
}

/// Utilization statistics of one GPU over the file.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GpuStats {
    /// Utilization readings counted (driver windows, or polled readings).
    pub samples: u64,
    pub util_mean: Option<f64>,
    pub util_p5: Option<f64>,
    pub util_p95: Option<f64>,
    /// Share of readings below the idle threshold.
    pub idle_fraction: Option<f64>,
    /// Seconds covered by the file.
    pub span_s: f64,
    /// Seconds lost to the findings that measure it (lost fraction × duration).
    pub time_lost_s: f64,
}

/// One GPU's part of the report.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GpuReport {
    pub index: u32,
    pub name: String,
    pub verdict: FindingKind,
    /// Every finding, in order of start; `end` is null for one still going at the end of the file.
    pub findings: Vec<Finding>,
    pub stats: GpuStats,
    /// Where the GPU's time and energy went, as the live ledger books it.
    pub ledger: LedgerReport,
}

/// What `analyze` found in one file.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Report {
    pub file: String,
    /// The reader used ("nvidia-smi-csv", ...).
    pub source: String,
    pub start: Option<UnixTime>,
    pub end: Option<UnixTime>,
    /// Samples (ticks) read.
    pub samples: u64,
    pub gpus: Vec<GpuReport>,
    pub warnings: Vec<String>,
}

#[derive(Clone)]
struct Acc {
    hist: [u32; 101],
    n: u32,
    sum: f64,
    idle: u64,
}

/// Run `source` through an engine with `detector` and build the report.
pub fn analyze(file: &str, source: &mut dyn SampleSource, detector: &DetectorConfig) -> Report {
    let system = source.system().clone();
    let config = EngineConfig {
        interval_s: 0.25,
        retention_s: detector.window_s.max(detector.rules_window_s) + 30.0,
        detector: detector.clone(),
    };
    let mut engine = Engine::new(system.clone(), config);
    // Only the events and the findings at the end are read.
    engine.without_snapshots();
    let empty = Acc {
        hist: [0; 101],
        n: 0,
        sum: 0.0,
        idle: 0,
    };
    let mut accs: Vec<Acc> = vec![empty; system.devices.len()];
    let (mut start, mut end, mut samples) = (None, None, 0u64);
    let mut found: Vec<Finding> = Vec::new();
    let mut host_notes: Vec<(u32, FindingKind, Vec<String>, String)> = Vec::new();
    while let Some(sample) = source.next_sample() {
        samples += 1;
        start.get_or_insert(sample.t);
        end = Some(sample.t);
        for g in &sample.gpus {
            let Some(pos) = system.devices.iter().position(|d| d.index == g.index) else {
                continue;
            };
            let acc = &mut accs[pos];
            let mut add = |u: f64| {
                acc.hist[bin(u as f32)] += 1;
                acc.n += 1;
                acc.sum += u;
                if u < detector.idle_util {
                    acc.idle += 1;
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
        for ev in engine.ingest(sample) {
            match ev {
                // The engine adds the host evidence (DataLoader workers, from the recorded
                // processes) to a finding when it is raised; the detector's copies lack it.
                crate::detector::FindingEvent::Raised(f) => {
                    host_notes.retain(|h| (h.0, h.1) != (f.gpu, f.kind));
                    host_notes.push((f.gpu, f.kind, f.evidence.notes, f.advice));
                }
                crate::detector::FindingEvent::Cleared(f) => found.push(f),
            }
        }
    }
    found.extend(engine.active_findings().iter().cloned());
    for f in &mut found {
        if let Some(h) = host_notes.iter().find(|h| (h.0, h.1) == (f.gpu, f.kind)) {
            if f.evidence.notes.is_empty() && !h.2.is_empty() {
                f.evidence.notes = h.2.clone();
                f.advice = h.3.clone();
            }
        }
    }
    found.sort_by(|a, b| a.start.total_cmp(&b.start));
    let last = end.unwrap_or(0.0);
    let span = end.zip(start).map(|(e, s)| e - s).unwrap_or(0.0);
    let gpus = system
        .devices
        .iter()
        .zip(&accs)
        .enumerate()
        .map(|(pos, (d, acc))| {
            let findings: Vec<Finding> =
                found.iter().filter(|f| f.gpu == d.index).cloned().collect();
            let mean = (acc.n > 0).then(|| acc.sum / acc.n as f64);
            let stats = GpuStats {
                samples: acc.n as u64,
                util_mean: mean,
                util_p5: (acc.n > 0).then(|| percentile_hist(&acc.hist, acc.n, 0.05)),
                util_p95: (acc.n > 0).then(|| percentile_hist(&acc.hist, acc.n, 0.95)),
                idle_fraction: (acc.n > 0).then(|| acc.idle as f64 / acc.n as f64),
                span_s: span,
                time_lost_s: time_lost(&findings, last),
            };
            let busy = mean.is_some_and(|m| m >= detector.idle_util);
            GpuReport {
                index: d.index,
                name: d.name.clone(),
                verdict: verdict_over(&findings, last, busy),
                findings,
                stats,
                ledger: LedgerReport::new(engine.ledger(pos).unwrap_or(&Default::default())),
            }
        })
        .collect();
    Report {
        file: file.to_string(),
        source: system.backend.clone(),
        start,
        end,
        samples,
        gpus,
        warnings: source.warnings(),
    }
}

/// A finding's span: from its start to its end, or to `last` while it goes on.
fn span_of(f: &Finding, last: UnixTime) -> (f64, f64) {
    (f.start, f.end.unwrap_or(last).max(f.start))
}

/// Seconds lost to the findings that measure it: at each moment, the largest lost fraction of
/// the findings covering it. Findings overlap (one raised again after it ended begins where the
/// first began; starvation and a throttle at once), and their time is lost once.
fn time_lost(findings: &[Finding], last: UnixTime) -> f64 {
    let mut spans: Vec<(f64, f64, f64)> = findings
        .iter()
        .filter_map(|f| {
            let (a, b) = span_of(f, last);
            Some((a, b, f.evidence.lost_fraction?.max(0.0)))
        })
        .collect();
    spans.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut cuts: Vec<f64> = spans.iter().flat_map(|s| [s.0, s.1]).collect();
    cuts.sort_by(f64::total_cmp);
    cuts.dedup();
    // The spans begun, largest lost fraction first (non-negative floats order as their bits).
    let mut open = std::collections::BinaryHeap::new();
    let mut next = 0;
    let mut lost = 0.0;
    for w in cuts.windows(2) {
        let (a, b) = (w[0], w[1]);
        while let Some(s) = spans.get(next).filter(|s| s.0 <= a) {
            open.push((s.2.to_bits(), s.1.to_bits()));
            next += 1;
        }
        while open.peek().is_some_and(|top| f64::from_bits(top.1) <= a) {
            open.pop();
        }
        if let Some(top) = open.peek() {
            lost += f64::from_bits(top.0) * (b - a);
        }
    }
    lost
}

/// The length of the union of `spans`.
fn covered(mut spans: Vec<(f64, f64)>) -> f64 {
    spans.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut total = 0.0;
    let mut cur: Option<(f64, f64)> = None;
    for (a, b) in spans {
        match cur {
            Some((ca, cb)) if a <= cb => cur = Some((ca, cb.max(b))),
            _ => {
                total += cur.map_or(0.0, |(ca, cb)| cb - ca);
                cur = Some((a, b));
            }
        }
    }
    total + cur.map_or(0.0, |(ca, cb)| cb - ca)
}

/// The kind of warn/high finding covering most of the span; with none, healthy if busy, else idle.
pub fn verdict_over(findings: &[Finding], last: UnixTime, busy: bool) -> FindingKind {
    let mut spans: Vec<(FindingKind, Vec<(f64, f64)>)> = Vec::new();
    for f in findings.iter().filter(|f| f.severity >= Severity::Warn) {
        let span = span_of(f, last);
        match spans.iter_mut().find(|c| c.0 == f.kind) {
            Some(c) => c.1.push(span),
            None => spans.push((f.kind, vec![span])),
        }
    }
    spans
        .into_iter()
        .map(|(kind, s)| (kind, covered(s)))
        .max_by(|a, b| {
            a.1.total_cmp(&b.1)
                .then_with(|| priority(b.0).cmp(&priority(a.0)))
        })
        .map(|c| c.0)
        .unwrap_or(if busy {
            FindingKind::Healthy
        } else {
            FindingKind::Idle
        })
}

impl Report {
    /// Put the cost at `prices` in every GPU's ledger (none when no price is configured).
    pub fn price(&mut self, prices: &Prices) {
        for g in &mut self.gpus {
            g.ledger.price(prices);
        }
    }
}

/// Analyse one file by path. A file with no sample, or with more data lines unreadable than
/// read, is an error: a report of what little was read would pass chance for data.
pub fn analyze_path(
    path: &Path,
    fields: Option<&[String]>,
    detector: &DetectorConfig,
) -> Result<Report, AnalyzeError> {
    let format = sniff(path)?;
    let mut source = open_source(path, fields)?;
    let mut report = analyze(&printable::path(path), source.as_mut(), detector);
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

/// A Unix time as local wall-clock time, `2026-12-02 13:28:37.1`.
pub fn local_time(t: UnixTime) -> String {
    let secs = t.floor();
    let tenth = (((t - secs) * 10.0).floor() as i64).clamp(0, 9);
    match jiff::Timestamp::from_second(secs as i64) {
        Ok(ts) => format!(
            "{}.{tenth}",
            ts.to_zoned(jiff::tz::TimeZone::system())
                .strftime("%Y-%m-%d %H:%M:%S")
        ),
        Err(_) => format!("{t:.1}"),
    }
}

fn opt_pct(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.0}%"))
        .unwrap_or_else(|| "n/a".into())
}

/// The report for people (the warnings go to stderr apart).
pub fn render_text(r: &Report) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let when = match (r.start, r.end) {
        (Some(s), Some(e)) => format!("{} → {} ({:.0} s)", local_time(s), local_time(e), e - s),
        _ => "no samples".into(),
    };
    let _ = writeln!(
        o,
        "{}: {} GPU(s), {} samples, {when} [{}]",
        r.file,
        r.gpus.len(),
        r.samples,
        r.source
    );
    for g in &r.gpus {
        let s = &g.stats;
        let name = if g.name.is_empty() {
            String::new()
        } else {
            format!(" ({})", printable::text(&g.name))
        };
        let _ = writeln!(o, "\nGPU {}{name}: {}", g.index, g.verdict);
        let _ = writeln!(
            o,
            "  utilization mean {} p5 {} p95 {}, idle {} of the time, time lost {:.1} s",
            opt_pct(s.util_mean),
            opt_pct(s.util_p5),
            opt_pct(s.util_p95),
            opt_pct(s.idle_fraction.map(|x| x * 100.0)),
            s.time_lost_s
        );
        if g.findings.is_empty() {
            let _ = writeln!(o, "  no findings");
        }
        for f in &g.findings {
            let until = f.end.map(local_time).unwrap_or_else(|| "end".into());
            let _ = writeln!(
                o,
                "  [{}] {} {} → {} (detected {}): {}",
                f.severity.as_str(),
                f.kind.title(),
                local_time(f.start),
                until,
                local_time(f.detected_at),
                f.summary
            );
            for note in &f.evidence.notes {
                let _ = writeln!(o, "      {note}");
            }
            if !f.advice.is_empty() {
                let _ = writeln!(o, "      fix: {}", f.advice);
            }
        }
    }
    if !r.gpus.is_empty() {
        let _ = writeln!(o, "\nledger");
    }
    for g in &r.gpus {
        for (i, line) in g.ledger.text().iter().enumerate() {
            let lead = if i == 0 {
                format!("  GPU {}: ", g.index)
            } else {
                "    ".into()
            };
            let _ = writeln!(o, "{lead}{line}");
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Evidence;

    fn finding(kind: FindingKind, start: f64, end: Option<f64>, lost: Option<f64>) -> Finding {
        Finding {
            kind,
            severity: Severity::High,
            gpu: 0,
            start,
            end,
            detected_at: start,
            evidence: Evidence {
                lost_fraction: lost,
                ..Default::default()
            },
            summary: String::new(),
            advice: String::new(),
        }
    }

    #[test]
    fn overlapping_findings_lose_their_time_once_at_the_largest_share() {
        let erratic = FindingKind::ErraticStalls;
        // Raised again from the same start after it ended: 0..20 at 0.3, then 0..90 at 0.3.
        let again = [
            finding(erratic, 0.0, Some(20.0), Some(0.3)),
            finding(erratic, 0.0, None, Some(0.3)),
        ];
        assert!((time_lost(&again, 90.0) - 27.0).abs() < 1e-9);
        // A larger share over part of it wins there: 10..30 at 0.7, the rest at 0.3.
        let mut mixed = again.to_vec();
        mixed.push(finding(
            FindingKind::InputStarvation,
            10.0,
            Some(30.0),
            Some(0.7),
        ));
        let want = 0.3 * 10.0 + 0.7 * 20.0 + 0.3 * 60.0;
        assert!((time_lost(&mixed, 90.0) - want).abs() < 1e-9);
        // Apart, they add up; a finding without a share adds nothing.
        let apart = [
            finding(erratic, 0.0, Some(10.0), Some(0.5)),
            finding(erratic, 20.0, Some(30.0), Some(0.2)),
            finding(FindingKind::Throttled, 0.0, Some(30.0), None),
        ];
        assert!((time_lost(&apart, 30.0) - 7.0).abs() < 1e-9);
        assert_eq!(time_lost(&[], 30.0), 0.0);
    }

    #[test]
    fn a_verdict_counts_overlapping_findings_of_a_kind_once() {
        // Erratic stalls raised twice over the same 0..40 s against 30 s of periodic stalls:
        // summed, erratic's 70 s would win; covered, 40 s against 30 s still does, and against
        // 50 s it loses.
        let mut f = vec![
            finding(FindingKind::ErraticStalls, 0.0, Some(30.0), Some(0.3)),
            finding(FindingKind::ErraticStalls, 0.0, Some(40.0), Some(0.3)),
            finding(FindingKind::PeriodicStall, 40.0, Some(70.0), Some(0.1)),
        ];
        assert_eq!(verdict_over(&f, 100.0, true), FindingKind::ErraticStalls);
        f[2].end = Some(90.0);
        assert_eq!(verdict_over(&f, 100.0, true), FindingKind::PeriodicStall);
        assert_eq!(covered(vec![(0.0, 1.0), (0.5, 2.0), (3.0, 4.0)]), 3.0);
    }
}
