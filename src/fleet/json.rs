//! `gpulse fleet --json`: the fleet as one JSON document for scripts.
//!
//! ```json
//! {"schema_version":1,"prometheus":"http://127.0.0.1:9090","time":1764684000.0,
//!  "gpus":[{"instance":"10.0.0.5:9400","hostname":"node-a","job":"gpulse","gpu":"0",
//!           "uuid":"GPU-…","model":"NVIDIA H200","source":"gpulse","verdict":"input_starvation",
//!           "findings":[{"kind":"input_starvation","severity":"warn","summary":"…"}],
//!           "utilization_gpu":41.0,"memory_used_bytes":…,"memory_total_bytes":…,"power_watts":…,
//!           "lost_fraction":0.6,"starvation_period_seconds":1.7,"scrape_interval_seconds":1.0,
//!           "last_sample_age_seconds":0.4,"notes":[]}],
//!  "down_targets":[],"warnings":[]}
//! ```
//! GPUs are listed grouped by host, worst first (the order of the screen). Absent readings are
//! `null`; `verdict` is `null` when nothing is known yet.
//!
//! With `--range 24h`, GPUs and hosts are ranked by the GPU time lost over the range instead, the
//! document carries `"range_s"` and `"hosts":[{"name","lost_gpu_seconds","top_lost_kind"}]`, and
//! each gpulse GPU `"ledger":{"range_s","gpu_seconds","lost_gpu_seconds","top_lost_kind",
//! "lost_by_kind":{kind: s},"energy_joules"}`, and `"jobs":[{"kind","label","pod","namespace",
//! "container","slurm_job","lost_gpu_seconds","gpu_seconds","hosts","gpus"}]` ranks pods,
//! containers and Slurm jobs by the time they lost.

use serde::Serialize;

use super::jobs::JobLost;
use super::model::{Fleet, FleetGpu, HostLost};

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Serialize)]
struct Document<'a> {
    schema_version: u32,
    prometheus: &'a str,
    time: f64,
    gpus: Vec<&'a FleetGpu>,
    #[serde(skip_serializing_if = "Option::is_none")]
    range_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hosts: Option<&'a [HostLost]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    jobs: Option<&'a [JobLost]>,
    down_targets: &'a [String],
    warnings: &'a [String],
}

/// The document for `fleet` fetched from `prometheus`, with the refresh's `warnings`.
pub fn to_json(fleet: &Fleet, prometheus: &str, warnings: &[String]) -> serde_json::Result<String> {
    serde_json::to_string_pretty(&Document {
        schema_version: SCHEMA_VERSION,
        prometheus,
        time: fleet.time,
        gpus: fleet.gpus().collect(),
        range_s: fleet.range_s,
        hosts: fleet.range_s.map(|_| fleet.hosts_by_lost.as_slice()),
        jobs: fleet.range_s.map(|_| fleet.jobs_by_lost.as_slice()),
        down_targets: &fleet.down_targets,
        warnings,
    })
}
