//! Gathering one round of answers by GPU: every GPU any series names, with its labels, traces,
//! timing, verdict, findings and evidence numbers, before the GPU is finished.

use std::collections::HashMap;

use crate::model::{FindingKind, Severity};

use super::evidence::Evidence;
use super::{rank_of, MIB};
use crate::fleet::api::Series;
use crate::fleet::dcgm;
use crate::fleet::model::{FleetFinding, FleetGpu, Source};
use crate::fleet::queries::{util_percent, Grid, Query, QueryResults, COUNT_WINDOW_S};

/// The GPUs of one round of answers and what the answers say of each, indexed alike.
pub(super) struct Gathered<'a> {
    /// GPUs by (instance, gpu), keyed by strings borrowed from the answers (no copies per lookup).
    index: HashMap<(&'a str, &'a str), usize>,
    pub(super) gpus: Vec<FleetGpu>,
    /// Whether a gpulse_* series names the GPU (then gpulse exports it).
    pub(super) from_gpulse: Vec<bool>,
    /// The exporter's own time of its newest sample.
    pub(super) last_sample: Vec<Option<f64>>,
    /// Free framebuffer memory in bytes.
    pub(super) free: Vec<Option<f64>>,
    pub(super) evidence: Vec<Evidence>,
}

impl<'a> Gathered<'a> {
    /// Create every GPU any device series names, with its labels; then the gpulse_* ones.
    pub(super) fn new(results: &'a QueryResults, grid: Grid) -> Self {
        let mut index: HashMap<(&str, &str), usize> = HashMap::new();
        let mut gpus: Vec<FleetGpu> = Vec::new();
        let mut from_gpulse: Vec<bool> = Vec::new();
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
            Query::Health,
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
        let n = gpus.len();
        Gathered {
            index,
            gpus,
            from_gpulse,
            last_sample: vec![None; n],
            free: vec![None; n],
            evidence: (0..n).map(|_| Evidence::default()).collect(),
        }
    }

    /// The position of the GPU a series names, if the series names one already gathered.
    fn find(&self, s: &Series) -> Option<usize> {
        key_of(s).and_then(|k| self.index.get(&k).copied())
    }

    /// Utilization, memory used and power over the grid.
    pub(super) fn fill_traces(&mut self, results: &QueryResults) {
        for (q, scale) in [
            (Query::Util, 1.0),
            (Query::MemoryUsed, MIB),
            (Query::Power, 1.0),
        ] {
            for s in results.series(q) {
                let Some(i) = self.find(s) else { continue };
                let g = &mut self.gpus[i];
                let trace = match q {
                    Query::Util => &mut g.util,
                    Query::MemoryUsed => &mut g.memory_used,
                    _ => &mut g.power,
                };
                trace.fill_scaled(&s.points, scale);
            }
        }
    }

    /// The newest sample's time, the scrape interval and the raw utilization samples.
    pub(super) fn read_timing(&mut self, results: &QueryResults) {
        for s in results.series(Query::LastSample) {
            if let (Some(i), Some(t)) = (self.find(s), s.last_value().filter(|v| v.is_finite())) {
                self.last_sample[i] = Some(t);
            }
        }
        // The interval: from raw samples where there are two or more, else from a count.
        for s in results.series(Query::SampleCount) {
            if let (Some(i), Some(n)) = (self.find(s), s.last_value().filter(|v| *v >= 2.0)) {
                self.gpus[i].scrape_interval_seconds = Some(COUNT_WINDOW_S / n);
            }
        }
        // Raw samples: the recent ones of every GPU, then the detector's longer span where asked.
        for s in results
            .series(Query::RecentRaw)
            .chain(results.series(Query::RawUtil))
        {
            if let Some(i) = self.find(s) {
                let g = &mut self.gpus[i];
                g.raw_util = util_percent(s);
                if let Some(iv) = dcgm::median_interval(&s.points) {
                    g.scrape_interval_seconds = Some(iv);
                }
            }
        }
    }

    /// Free framebuffer memory, in bytes.
    pub(super) fn read_memory_free(&mut self, results: &QueryResults) {
        for s in results.series(Query::MemoryFree) {
            if let (Some(i), Some(v)) = (self.find(s), s.last_value().filter(|v| v.is_finite())) {
                self.free[i] = Some(v * MIB);
            }
        }
    }

    /// The health series (the last XID, uncorrectable errors, row remaps), and what they say in
    /// words.
    pub(super) fn read_health(&mut self, results: &QueryResults) {
        for s in results.series(Query::Health) {
            if let Some(i) = self.find(s) {
                self.gpus[i].health.get_or_insert_default().take(s);
            }
        }
        for g in &mut self.gpus {
            if let Some(h) = g.health {
                g.notes.extend(h.notes());
            }
        }
    }

    /// The verdict a gpulse exporter publishes (the series set to 1).
    pub(super) fn read_verdicts(&mut self, results: &QueryResults) {
        for s in results.series(Query::Verdict) {
            let (Some(i), Some(v)) = (self.find(s), s.last_value()) else {
                continue;
            };
            let Some(kind) = s.label("verdict").and_then(FindingKind::parse) else {
                continue;
            };
            if v > 0.0 {
                let g = &mut self.gpus[i];
                // Several set verdicts (should not happen): keep the worst.
                g.verdict = Some(match g.verdict {
                    Some(old) if rank_of(old) <= rank_of(kind) => old,
                    _ => kind,
                });
            }
        }
    }

    /// The active findings a gpulse exporter publishes, one per kind, with their severity.
    pub(super) fn read_findings(&mut self, results: &QueryResults) {
        for s in results.series(Query::Findings) {
            let (Some(i), Some(v)) = (self.find(s), s.last_value()) else {
                continue;
            };
            let Some(kind) = s.label("kind").and_then(FindingKind::parse) else {
                continue;
            };
            let g = &mut self.gpus[i];
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
    }

    /// Lost fraction and period, published per finding kind (`kind` label).
    pub(super) fn read_evidence(&mut self, results: &QueryResults) {
        for (q, is_lost) in [
            (Query::LostFraction, true),
            (Query::StarvationPeriod, false),
        ] {
            for s in results.series(q) {
                let (Some(i), Some(v)) = (self.find(s), s.last_value().filter(|v| v.is_finite()))
                else {
                    continue;
                };
                let kind = s.label("kind").and_then(FindingKind::parse);
                if is_lost {
                    self.evidence[i].lost.push((kind, v));
                } else {
                    self.evidence[i].period.push((kind, v));
                }
            }
        }
    }
}

/// `(instance, gpu)` of a series; `None` without a `gpu` label.
fn key_of(s: &Series) -> Option<(&str, &str)> {
    Some((s.label("instance").unwrap_or_default(), s.label("gpu")?))
}

/// A GPU known only by its key so far: no readings, dcgm-exported until a gpulse series names it.
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
        health: None,
        ledger: None,
        jobs_lost: Vec::new(),
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
