//! From Prometheus answers to the fleet model: join the series of one GPU, run the detector where
//! the exporter has none, and order the result worst first.
//!
//! A GPU is identified by its `instance` and `gpu` labels; the same UUID exported by both a gpulse
//! exporter and a dcgm-exporter is shown once, from gpulse.

use std::collections::HashMap;

use crate::detector::DetectorConfig;
use crate::model::{FindingKind, Severity};

use super::api::Series;
use super::dcgm;
use super::model::{Fleet, FleetFinding, FleetGpu, Source, Trace};
use super::queries::{Query, QueryResults};
use super::rank;

const MIB: f64 = 1024.0 * 1024.0;

/// The time grid of the sparkline range queries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Grid {
    pub start: f64,
    pub step: f64,
    pub len: usize,
}

impl Grid {
    /// `points` slots ending at `end`, covering `window_s`.
    pub fn ending_at(end: f64, window_s: f64, points: usize) -> Grid {
        let len = points.max(2);
        let step = window_s / (len - 1) as f64;
        Grid {
            start: end - step * (len - 1) as f64,
            step,
            len,
        }
    }

    fn trace(&self) -> Trace {
        Trace::on_grid(self.start, self.step, self.len)
    }
}

/// Build the fleet from one round of answers evaluated at `now`.
pub fn build(results: &QueryResults, grid: Grid, now: f64, detector: &DetectorConfig) -> Fleet {
    let mut gpus: HashMap<(String, String), FleetGpu> = HashMap::new();
    let mut order: Vec<(String, String)> = Vec::new();
    let mut gpulse_seen: HashMap<(String, String), bool> = HashMap::new();

    let mut entry = |s: &Series| -> Option<(String, String)> {
        let gpu = s.label("gpu")?.to_string();
        let instance = s.label("instance").unwrap_or_default().to_string();
        let key = (instance.clone(), gpu.clone());
        let g = gpus.entry(key.clone()).or_insert_with(|| {
            order.push(key.clone());
            FleetGpu {
                hostname: instance.clone(),
                instance,
                job: None,
                gpu,
                uuid: None,
                model: None,
                source: Source::Dcgm,
                verdict: None,
                findings: Vec::new(),
                utilization_gpu: None,
                memory_used_bytes: None,
                memory_total_bytes: None,
                power_watts: None,
                lost_fraction: None,
                starvation_period_seconds: None,
                scrape_interval_seconds: None,
                last_sample_age_seconds: None,
                notes: Vec::new(),
                util: grid.trace(),
                memory_used: grid.trace(),
                power: grid.trace(),
                raw_util: Vec::new(),
            }
        });
        if let Some(h) = s.label("Hostname").filter(|h| !h.is_empty()) {
            g.hostname = h.to_string();
        }
        if g.job.is_none() {
            g.job = s.label("job").map(str::to_string);
        }
        if g.uuid.is_none() {
            g.uuid = s
                .label("UUID")
                .filter(|u| !u.is_empty())
                .map(str::to_string);
        }
        if g.model.is_none() {
            g.model = s
                .label("modelName")
                .filter(|m| !m.is_empty())
                .map(str::to_string);
        }
        Some(key)
    };

    // Create every GPU any device series names, with its labels.
    for q in [Query::Util, Query::MemoryUsed, Query::Power, Query::RawUtil] {
        for s in results.series(q) {
            entry(s);
        }
    }
    for q in [Query::Verdict, Query::Findings] {
        for s in results.series(q) {
            if let Some(k) = entry(s) {
                gpulse_seen.insert(k, true);
            }
        }
    }

    let key_of = |s: &Series| -> Option<(String, String)> {
        Some((
            s.label("instance").unwrap_or_default().to_string(),
            s.label("gpu")?.to_string(),
        ))
    };

    for (q, scale) in [
        (Query::Util, 1.0),
        (Query::MemoryUsed, MIB),
        (Query::Power, 1.0),
    ] {
        for s in results.series(q) {
            let Some(g) = key_of(s).and_then(|k| gpus.get_mut(&k)) else {
                continue;
            };
            let trace = match q {
                Query::Util => &mut g.util,
                Query::MemoryUsed => &mut g.memory_used,
                _ => &mut g.power,
            };
            if scale == 1.0 {
                trace.fill(&s.points);
            } else {
                let scaled: Vec<(f64, f64)> =
                    s.points.iter().map(|&(t, v)| (t, v * scale)).collect();
                trace.fill(&scaled);
            }
        }
    }
    for s in results.series(Query::RawUtil) {
        if let Some(g) = key_of(s).and_then(|k| gpus.get_mut(&k)) {
            g.raw_util = s.points.clone();
            g.scrape_interval_seconds = dcgm::median_interval(&s.points);
        }
    }
    let mut free: HashMap<(String, String), f64> = HashMap::new();
    for s in results.series(Query::MemoryFree) {
        if let (Some(k), Some(v)) = (key_of(s), s.last_value().filter(|v| v.is_finite())) {
            free.insert(k, v * MIB);
        }
    }
    for s in results.series(Query::Verdict) {
        let (Some(g), Some(v)) = (key_of(s).and_then(|k| gpus.get_mut(&k)), s.last_value()) else {
            continue;
        };
        let Some(kind) = s.label("verdict").and_then(FindingKind::parse) else {
            continue;
        };
        if v > 0.0 {
            // Several set verdicts (should not happen): keep the worst.
            g.verdict = Some(match g.verdict {
                Some(old) if rank_of(old) <= rank_of(kind) => old,
                _ => kind,
            });
        }
    }
    for s in results.series(Query::Findings) {
        let (Some(g), Some(v)) = (key_of(s).and_then(|k| gpus.get_mut(&k)), s.last_value()) else {
            continue;
        };
        let Some(kind) = s.label("kind").and_then(FindingKind::parse) else {
            continue;
        };
        if v > 0.0 && !g.findings.iter().any(|f| f.kind == kind) {
            let severity = match s.label("severity") {
                Some("high") => Severity::High,
                Some("info") => Severity::Info,
                _ => Severity::Warn,
            };
            g.findings.push(FleetFinding {
                kind,
                severity,
                summary: String::new(),
                advice: String::new(),
            });
        }
    }
    // Lost fraction and period are published per finding kind (`kind` label).
    let mut evidence: HashMap<(String, String), Evidence> = HashMap::new();
    for (q, is_lost) in [
        (Query::LostFraction, true),
        (Query::StarvationPeriod, false),
    ] {
        for s in results.series(q) {
            let (Some(k), Some(v)) = (key_of(s), s.last_value().filter(|v| v.is_finite())) else {
                continue;
            };
            let kind = s.label("kind").and_then(FindingKind::parse);
            let e = evidence.entry(k).or_default();
            if is_lost {
                e.lost.push((kind, v));
            } else {
                e.period.push((kind, v));
            }
        }
    }

    let mut out: Vec<FleetGpu> = Vec::with_capacity(order.len());
    for key in order {
        let Some(mut g) = gpus.remove(&key) else {
            continue;
        };
        if gpulse_seen.contains_key(&key) {
            g.source = Source::Gpulse;
        }
        g.utilization_gpu = g
            .raw_util
            .last()
            .map(|p| p.1)
            .filter(|v| v.is_finite())
            .or_else(|| g.util.last());
        g.memory_used_bytes = g.memory_used.last().map(|v| v.round() as u64);
        g.power_watts = g.power.last();
        g.memory_total_bytes = match (g.memory_used.last(), free.get(&key)) {
            (Some(u), Some(f)) => Some((u + f).round() as u64),
            _ => None,
        };
        let newest = g
            .raw_util
            .last()
            .map(|p| p.0)
            .into_iter()
            .chain(g.util.last_time())
            .reduce(f64::max);
        g.last_sample_age_seconds = newest.map(|t| (now - t).max(0.0));
        match g.source {
            Source::Gpulse => {
                let e = evidence.remove(&key).unwrap_or_default();
                let main = g.verdict.filter(|v| rank_of(*v) < 2);
                g.lost_fraction = e.lost_of(main);
                g.starvation_period_seconds = e.period_of(main);
                describe_exporter_findings(&mut g, &e);
            }
            Source::Dcgm => {
                let index = g.gpu.parse().unwrap_or(0);
                let name = g.model.clone().unwrap_or_default();
                let d = dcgm::detect(
                    &g.raw_util,
                    index,
                    &name,
                    &g.hostname,
                    g.memory_total_bytes,
                    detector,
                );
                g.verdict = d.verdict;
                g.findings = d.findings;
                if let Some(n) = d.note {
                    g.notes.push(n);
                }
            }
        }
        if g.is_stale() {
            match g.last_sample_age_seconds {
                Some(age) => g.notes.push(format!(
                    "no sample for {age:.0} s: the exporter at {} is not being scraped",
                    g.instance
                )),
                None => g.notes.push("no utilization samples".into()),
            }
        }
        out.push(g);
    }
    let out = dedupe_by_uuid(out);
    let mut down_targets: Vec<String> = results
        .series(Query::Up)
        .filter(|s| s.last_value() == Some(0.0))
        .map(|s| {
            format!(
                "{} ({})",
                s.label("instance").unwrap_or("?"),
                s.label("job").unwrap_or("?")
            )
        })
        .collect();
    down_targets.sort();
    Fleet {
        time: now,
        hosts: rank::group(out),
        down_targets,
    }
}

fn rank_of(k: FindingKind) -> u8 {
    if rank::TOP.contains(&k) {
        0
    } else if k == FindingKind::Healthy {
        2
    } else if k == FindingKind::Idle {
        3
    } else {
        1
    }
}

/// An exporter's evidence numbers of one GPU, by finding kind.
#[derive(Debug, Default)]
struct Evidence {
    lost: Vec<(Option<FindingKind>, f64)>,
    period: Vec<(Option<FindingKind>, f64)>,
}

impl Evidence {
    /// The value for `kind`, else (when no kind is given or none matches) the largest.
    fn pick(values: &[(Option<FindingKind>, f64)], kind: Option<FindingKind>) -> Option<f64> {
        kind.and_then(|k| Self::exact(values, k))
            .or_else(|| values.iter().map(|v| v.1).reduce(f64::max))
    }

    fn lost_of(&self, kind: Option<FindingKind>) -> Option<f64> {
        Self::pick(&self.lost, kind)
    }

    fn period_of(&self, kind: Option<FindingKind>) -> Option<f64> {
        Self::pick(&self.period, kind)
    }

    fn exact(values: &[(Option<FindingKind>, f64)], kind: FindingKind) -> Option<f64> {
        values.iter().find(|(k, _)| *k == Some(kind)).map(|v| v.1)
    }
}

/// The exporter publishes which findings are active and a few numbers; say what they mean.
fn describe_exporter_findings(g: &mut FleetGpu, e: &Evidence) {
    for f in &mut g.findings {
        let mut parts = vec![f.kind.title().to_string()];
        // Series without a `kind` label belong to the verdict's finding.
        let unlabelled = |v: &[(Option<FindingKind>, f64)]| {
            (Some(f.kind) == g.verdict)
                .then(|| v.iter().find(|(k, _)| k.is_none()).map(|x| x.1))
                .flatten()
        };
        let period = Evidence::exact(&e.period, f.kind).or_else(|| unlabelled(&e.period));
        let lost = Evidence::exact(&e.lost, f.kind).or_else(|| unlabelled(&e.lost));
        if let Some(p) = period {
            parts.push(format!("a dip every {p:.1} s"));
        }
        if let Some(l) = lost {
            parts.push(format!("{:.0}% of the time lost", l * 100.0));
        }
        f.summary = parts.join(", ");
    }
    // The worst finding first.
    g.findings.sort_by(|a, b| {
        rank_of(a.kind)
            .cmp(&rank_of(b.kind))
            .then(b.severity.cmp(&a.severity))
    });
}

/// Show a GPU exported by both gpulse and dcgm-exporter on the same host (same `UUID` and
/// `Hostname`) once, from gpulse.
fn dedupe_by_uuid(gpus: Vec<FleetGpu>) -> Vec<FleetGpu> {
    let mut gpulse_uuid: HashMap<(&str, &str), usize> = HashMap::new();
    for (i, g) in gpus.iter().enumerate() {
        if let (Source::Gpulse, Some(u)) = (g.source, &g.uuid) {
            gpulse_uuid.insert((u.as_str(), g.hostname.as_str()), i);
        }
    }
    let mut also: Vec<(usize, String)> = Vec::new();
    let mut keep = vec![true; gpus.len()];
    for (i, g) in gpus.iter().enumerate() {
        if let (Source::Dcgm, Some(u)) = (g.source, &g.uuid) {
            if let Some(&j) = gpulse_uuid.get(&(u.as_str(), g.hostname.as_str())) {
                keep[i] = false;
                also.push((j, g.instance.clone()));
            }
        }
    }
    let mut gpus = gpus;
    for (j, inst) in also {
        if let Some(g) = gpus.get_mut(j) {
            g.notes
                .push(format!("also exported by dcgm-exporter at {inst}"));
        }
    }
    gpus.into_iter()
        .zip(keep)
        .filter_map(|(g, k)| k.then_some(g))
        .collect()
}
