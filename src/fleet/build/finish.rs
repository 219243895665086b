//! Finishing each gathered GPU: its current readings, its findings (the exporter's, or the
//! detector's for a dcgm-only GPU), notes on staleness, and one entry per physical GPU.

use std::collections::{HashMap, HashSet};

use crate::detector::DetectorConfig;

use super::evidence::{describe_exporter_findings, Evidence};
use super::gather::Gathered;
use super::rank_of;
use crate::fleet::dcgm::DetectorCache;
use crate::fleet::model::{FleetGpu, Source};

impl Gathered<'_> {
    /// Every GPU finished at `now`; the cache keeps only the detectors of the dcgm GPUs seen.
    pub(super) fn finish(
        self,
        now: f64,
        detector: &DetectorConfig,
        cache: &mut DetectorCache,
    ) -> Vec<FleetGpu> {
        let mut out: Vec<FleetGpu> = Vec::with_capacity(self.gpus.len());
        let mut dcgm_seen: HashSet<(String, String)> = HashSet::new();
        let mut evidence = self.evidence;
        for (i, mut g) in self.gpus.into_iter().enumerate() {
            if self.from_gpulse[i] {
                g.source = Source::Gpulse;
            }
            current_readings(&mut g, self.free[i], self.last_sample[i], now);
            match g.source {
                Source::Gpulse => judge_gpulse(&mut g, &std::mem::take(&mut evidence[i])),
                Source::Dcgm => {
                    dcgm_seen.insert((g.instance.clone(), g.gpu.clone()));
                    judge_dcgm(&mut g, detector, cache);
                }
            }
            note_stale(&mut g);
            out.push(g);
        }
        cache.retain(&dcgm_seen);
        out
    }
}

/// The newest utilization, memory and power, and the age of the newest sample at `now`.
fn current_readings(g: &mut FleetGpu, free: Option<f64>, last_sample: Option<f64>, now: f64) {
    g.utilization_gpu = g
        .raw_util
        .last()
        .map(|p| p.1)
        .filter(|v| v.is_finite())
        .or_else(|| g.util.last());
    g.memory_used_bytes = g.memory_used.last().map(|v| v.round() as u64);
    g.power_watts = g.power.last();
    g.memory_total_bytes = match (g.memory_used.last(), free) {
        (Some(u), Some(f)) => Some((u + f).round() as u64),
        _ => None,
    };
    let newest = g
        .raw_util
        .last()
        .map(|p| p.0)
        .into_iter()
        .chain(last_sample)
        .chain(g.util.last_time())
        .reduce(f64::max);
    g.last_sample_age_seconds = newest.map(|t| (now - t).max(0.0));
}

/// A gpulse-exported GPU: the exporter's verdict stands; its evidence numbers give the headline
/// figures (those of the verdict's finding when it is a cause) and the findings' wording.
fn judge_gpulse(g: &mut FleetGpu, e: &Evidence) {
    let main = g.verdict.filter(|v| rank_of(*v) < 2);
    g.lost_fraction = e.lost_of(main);
    g.starvation_period_seconds = e.period_of(main);
    describe_exporter_findings(g, e);
}

/// A dcgm-only GPU: the detector judges its raw utilization samples.
fn judge_dcgm(g: &mut FleetGpu, detector: &DetectorConfig, cache: &mut DetectorCache) {
    let index = g.gpu.parse().unwrap_or(0);
    let name = g.model.clone().unwrap_or_default();
    let key = (g.instance.clone(), g.gpu.clone());
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

/// A note on a GPU with no recent sample: how long since the last one, or that there is none.
fn note_stale(g: &mut FleetGpu) {
    if g.is_stale() {
        match g.last_sample_age_seconds {
            Some(age) => g.notes.push(format!(
                "no sample for {age:.0} s: the exporter at {} is not being scraped",
                g.instance
            )),
            None => g.notes.push("no utilization samples".into()),
        }
    }
}

/// Show a GPU exported by both gpulse and dcgm-exporter on the same host (same `UUID` and
/// `Hostname`) once, from gpulse.
pub(super) fn dedupe_by_uuid(gpus: Vec<FleetGpu>) -> Vec<FleetGpu> {
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
