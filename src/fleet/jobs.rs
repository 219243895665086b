//! `gpulse fleet --range 24h`: pods, containers and Slurm jobs ranked by the GPU time they lost
//! over the range, across every host, from the exporters' per-job ledger counters
//! (`gpulse_job_lost_gpu_seconds_total`, `gpulse_job_gpu_seconds_total`, labelled `pod`,
//! `namespace`, `container` or `slurm_job` as dcgm-exporter labels jobs).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::api::{Answer, ApiError, PromClient, Series};
use super::ledger::increase_promql;
use super::model::Fleet;

/// One job's total over the range, across the fleet.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobLost {
    /// `pod`, `container` or `slurm`.
    pub kind: &'static str,
    /// The job in words (`pod train-7f9c/ml-team`, `container web-3`, `slurm 4242`).
    pub label: String,
    pub pod: Option<String>,
    pub namespace: Option<String>,
    pub container: Option<String>,
    pub slurm_job: Option<String>,
    pub lost_gpu_seconds: f64,
    /// GPU-seconds it held over the range (absent without that counter's series).
    pub gpu_seconds: Option<f64>,
    /// The hosts it ran on (by the exporters' instance labels where no host name is known).
    pub hosts: Vec<String>,
    /// How many GPUs it ran on.
    pub gpus: usize,
}

/// The per-job counters' increases over the range.
pub struct JobAnswers {
    pub lost: Result<Answer, ApiError>,
    pub booked: Result<Answer, ApiError>,
}

impl JobAnswers {
    /// Failed queries in words.
    pub fn problems(&self) -> Vec<String> {
        [("job lost time", &self.lost), ("job time", &self.booked)]
            .into_iter()
            .filter_map(|(what, r)| {
                r.as_ref()
                    .err()
                    .map(|e| format!("{what} over the range query failed: {e}"))
            })
            .collect()
    }
}

/// Ask Prometheus for the per-job counters' increases over `range_s` ending at `now`.
pub fn fetch(client: &PromClient, range_s: f64, now: f64) -> JobAnswers {
    let ask = |counter: &str| client.instant(&increase_promql(counter, range_s), now);
    JobAnswers {
        lost: ask("gpulse_job_lost_gpu_seconds_total"),
        booked: ask("gpulse_job_gpu_seconds_total"),
    }
}

/// A job's identity in a series: its kind and labels.
type JobKey = (&'static str, [Option<String>; 4]);

fn key_of(s: &Series) -> Option<JobKey> {
    let get = |k: &str| s.label(k).filter(|v| !v.is_empty()).map(str::to_string);
    let (pod, ns, container, slurm) = (
        get("pod"),
        get("namespace"),
        get("container"),
        get("slurm_job"),
    );
    let kind = match (&pod, &container, &slurm) {
        (Some(_), _, _) => "pod",
        (None, _, Some(_)) => "slurm",
        (None, Some(_), None) => "container",
        (None, None, None) => return None,
    };
    // A pod's row sums its containers.
    let container = if kind == "pod" { None } else { container };
    Some((kind, [pod, ns, container, slurm]))
}

fn label_of(key: &JobKey) -> String {
    let [pod, ns, container, slurm] = &key.1;
    match (key.0, pod, ns) {
        ("pod", Some(p), Some(n)) => format!("pod {p}/{n}"),
        ("pod", Some(p), None) => format!("pod {p}"),
        ("slurm", _, _) => format!("slurm {}", slurm.as_deref().unwrap_or("?")),
        _ => format!("container {}", container.as_deref().unwrap_or("?")),
    }
}

/// Rank the jobs of `answers` by lost GPU-seconds into `fleet.jobs_by_lost`; hosts are named by
/// the fleet's GPUs (matched by instance and GPU).
pub fn apply(fleet: &mut Fleet, answers: &JobAnswers) {
    let host_of = |instance: &str, gpu: &str| {
        fleet
            .gpus()
            .find(|g| g.instance == instance && g.gpu == gpu)
            .map_or_else(|| instance.to_string(), |g| g.hostname.clone())
    };
    #[derive(Default)]
    struct Sum {
        lost: f64,
        booked: Option<f64>,
        hosts: BTreeSet<String>,
        gpus: BTreeSet<(String, String)>,
    }
    let mut sums: BTreeMap<JobKey, Sum> = BTreeMap::new();
    let mut per_gpu: BTreeMap<(String, String), Vec<(String, f64)>> = BTreeMap::new();
    for (answer, lost) in [(&answers.lost, true), (&answers.booked, false)] {
        for s in answer.iter().flat_map(|a| a.series.iter()) {
            let (Some(key), Some(v)) = (key_of(s), s.last_value().filter(|v| v.is_finite())) else {
                continue;
            };
            let instance = s.label("instance").unwrap_or_default().to_string();
            let gpu = s.label("gpu").unwrap_or_default().to_string();
            let sum = sums.entry(key.clone()).or_default();
            if lost {
                sum.lost += v.max(0.0);
                let on = per_gpu.entry((instance.clone(), gpu.clone())).or_default();
                let label = label_of(&key);
                match on.iter_mut().find(|(l, _)| *l == label) {
                    Some(entry) => entry.1 += v.max(0.0),
                    None => on.push((label, v.max(0.0))),
                }
            } else {
                *sum.booked.get_or_insert(0.0) += v.max(0.0);
            }
            sum.hosts.insert(host_of(&instance, &gpu));
            sum.gpus.insert((instance, gpu));
        }
    }
    let mut jobs: Vec<JobLost> = sums
        .into_iter()
        .map(|(key, sum)| {
            let label = label_of(&key);
            let [pod, namespace, container, slurm_job] = key.1;
            JobLost {
                kind: key.0,
                label,
                pod,
                namespace,
                container,
                slurm_job,
                lost_gpu_seconds: sum.lost,
                gpu_seconds: sum.booked,
                hosts: sum.hosts.into_iter().collect(),
                gpus: sum.gpus.len(),
            }
        })
        .collect();
    jobs.sort_by(|a, b| {
        b.lost_gpu_seconds
            .total_cmp(&a.lost_gpu_seconds)
            .then_with(|| a.label.cmp(&b.label))
    });
    fleet.jobs_by_lost = jobs;
    for g in fleet.hosts.iter_mut().flat_map(|h| h.gpus.iter_mut()) {
        if let Some(mut on) = per_gpu.remove(&(g.instance.clone(), g.gpu.clone())) {
            on.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            g.jobs_lost = on;
        }
    }
}
