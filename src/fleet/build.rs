//! From Prometheus answers to the fleet model: join the series of one GPU, run the detector where
//! the exporter has none, and order the result worst first.
//!
//! A GPU is identified by its `instance` and `gpu` labels; the same UUID exported by both a gpulse
//! exporter and a dcgm-exporter is shown once, from gpulse.

use std::collections::{HashMap, HashSet};

use crate::detector::DetectorConfig;
use crate::model::{FindingKind, Severity};

use super::api::Series;
use super::dcgm::{self, DetectorCache};
use super::model::{Fleet, FleetFinding, FleetGpu, Source};
use super::queries::{Grid, Query, QueryResults};
use super::rank;

const MIB: f64 = 1024.0 * 1024.0;

/// Build the fleet from one round of answers evaluated at `now`.
///
/// `cache` keeps the detectors of dcgm-only GPUs between refreshes (pass a fresh one for a
/// one-off answer).
pub fn build(
    results: &QueryResults,
    grid: Grid,
    now: f64,
    detector: &DetectorConfig,
    cache: &mut DetectorCache,
) -> Fleet {
    // GPUs by (instance, gpu), keyed by strings borrowed from the answers (no copies per lookup).
    let mut index: HashMap<(&str, &str), usize> = HashMap::new();
    let mut gpus: Vec<FleetGpu> = Vec::new();
    let mut from_gpulse: Vec<bool> = Vec::new();

    // Create every GPU any device series names, with its labels; then the gpulse_* ones.
    for q in [
        Query::Util,
        Query::MemoryUsed,
        Query::Power,
        Query::LastSample,
        Query::RecentRaw,
        Query::SampleCount,
        Query::RawUtil,
        Query::Verdict,
        Query::Findings,
    ] {
        let gpulse = matches!(q, Query::Verdict | Query::Findings);
        for s in results.series(q) {
            let Some(k) = key_of(s) else { continue };
            let i = *index.entry(k).or_insert_with(|| {
                gpus.push(new_gpu(k, grid));
                from_gpulse.push(false);
                gpus.len() - 1
            });
            take_labels(&mut gpus[i], s);
            from_gpulse[i] |= gpulse;
        }
    }
    let find = |s: &Series| key_of(s).and_then(|k| index.get(&k).copied());

    for (q, scale) in [
        (Query::Util, 1.0),
        (Query::MemoryUsed, MIB),
        (Query::Power, 1.0),
    ] {
        for s in results.series(q) {
            let Some(i) = find(s) else { continue };
            let g = &mut gpus[i];
            let trace = match q {
                Query::Util => &mut g.util,
                Query::MemoryUsed => &mut g.memory_used,
                _ => &mut g.power,
            };
            trace.fill_scaled(&s.points, scale);
        }
    }
    let mut last_sample: Vec<Option<f64>> = vec![None; gpus.len()];
    for s in results.series(Query::LastSample) {
        if let (Some(i), Some(t)) = (find(s), s.last_value().filter(|v| v.is_finite())) {
            last_sample[i] = Some(t);
        }
    }
    // The interval: from raw samples where there are two or more, else from a count.
    for s in results.series(Query::SampleCount) {
        if let (Some(i), Some(n)) = (find(s), s.last_value().filter(|v| *v >= 2.0)) {
            gpus[i].scrape_interval_seconds = Some(super::queries::COUNT_WINDOW_S / n);
        }
    }
    // Raw samples: the recent ones of every GPU, then the detector's longer span where asked.
    for s in results
        .series(Query::RecentRaw)
        .chain(results.series(Query::RawUtil))
    {
        if let Some(i) = find(s) {
            let g = &mut gpus[i];
            g.raw_util = s.points.clone();
            if let Some(iv) = dcgm::median_interval(&s.points) {
                g.scrape_interval_seconds = Some(iv);
            }
        }
    }
    let mut free: Vec<Option<f64>> = vec![None; gpus.len()];
    for s in results.series(Query::MemoryFree) {
        if let (Some(i), Some(v)) = (find(s), s.last_value().filter(|v| v.is_finite())) {
            free[i] = Some(v * MIB);
        }
    }
    for s in results.series(Query::Verdict) {
        let (Some(i), Some(v)) = (find(s), s.last_value()) else {
            continue;
        };
        let Some(kind) = s.label("verdict").and_then(FindingKind::parse) else {
            continue;
        };
        if v > 0.0 {
            let g = &mut gpus[i];
            // Several set verdicts (should not happen): keep the worst.
            g.verdict = Some(match g.verdict {
                Some(old) if rank_of(old) <= rank_of(kind) => old,
                _ => kind,
            });
        }
    }
    for s in results.series(Query::Findings) {
        let (Some(i), Some(v)) = (find(s), s.last_value()) else {
            continue;
        };
        let Some(kind) = s.label("kind").and_then(FindingKind::parse) else {
            continue;
        };
        let g = &mut gpus[i];
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
    let mut evidence: Vec<Evidence> = (0..gpus.len()).map(|_| Evidence::default()).collect();
    for (q, is_lost) in [
        (Query::LostFraction, true),
        (Query::StarvationPeriod, false),
    ] {
        for s in results.series(q) {
            let (Some(i), Some(v)) = (find(s), s.last_value().filter(|v| v.is_finite())) else {
                continue;
            };
            let kind = s.label("kind").and_then(FindingKind::parse);
            if is_lost {
                evidence[i].lost.push((kind, v));
            } else {
                evidence[i].period.push((kind, v));
            }
        }
    }

    let mut out: Vec<FleetGpu> = Vec::with_capacity(gpus.len());
    let mut dcgm_seen: HashSet<(String, String)> = HashSet::new();
    for (i, mut g) in gpus.into_iter().enumerate() {
        if from_gpulse[i] {
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
        g.memory_total_bytes = match (g.memory_used.last(), free[i]) {
            (Some(u), Some(f)) => Some((u + f).round() as u64),
            _ => None,
        };
        let newest = g
            .raw_util
            .last()
            .map(|p| p.0)
            .into_iter()
            .chain(last_sample[i])
            .chain(g.util.last_time())
            .reduce(f64::max);
        g.last_sample_age_seconds = newest.map(|t| (now - t).max(0.0));
        match g.source {
            Source::Gpulse => {
                let e = std::mem::take(&mut evidence[i]);
                let main = g.verdict.filter(|v| rank_of(*v) < 2);
                g.lost_fraction = e.lost_of(main);
                g.starvation_period_seconds = e.period_of(main);
                describe_exporter_findings(&mut g, &e);
            }
            Source::Dcgm => {
                let index = g.gpu.parse().unwrap_or(0);
                let name = g.model.clone().unwrap_or_default();
                let key = (g.instance.clone(), g.gpu.clone());
                dcgm_seen.insert(key.clone());
                let d = cache.judge(
                    &key,
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
    cache.retain(&dcgm_seen);
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
        ..Fleet::default()
    }
}

/// `(instance, gpu)` of a series; `None` without a `gpu` label.
fn key_of(s: &Series) -> Option<(&str, &str)> {
    Some((s.label("instance").unwrap_or_default(), s.label("gpu")?))
}

fn new_gpu((instance, gpu): (&str, &str), grid: Grid) -> FleetGpu {
    FleetGpu {
        instance: instance.to_string(),
        hostname: instance.to_string(),
        job: None,
        gpu: gpu.to_string(),
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
        ledger: None,
        util: grid.trace(),
        memory_used: grid.trace(),
        power: grid.trace(),
        raw_util: Vec::new(),
    }
}

/// Host, job, UUID and model from a device series, where not known yet.
fn take_labels(g: &mut FleetGpu, s: &Series) {
    if g.hostname == g.instance {
        if let Some(h) = s.label("Hostname").filter(|h| !h.is_empty()) {
            g.hostname = h.to_string();
        }
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
}

fn rank_of(k: FindingKind) -> u8 {
    if rank::TOP.contains(&k) {
        0
    } else if matches!(
        k,
        FindingKind::Healthy | FindingKind::Pending | FindingKind::TensorCoresIdle
    ) {
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
