//! Jobs and MIG instances in the exposition, labelled as dcgm-exporter labels them.
//!
//! - A GPU's device series carry `pod`, `namespace` and `container` (Kubernetes), `container`
//!   (a container outside Kubernetes) or `slurm_job` when a job runs on it; where several share
//!   the GPU, each series is written once per job, as dcgm-exporter does for shared GPUs. A MIG
//!   GPU's series carry none (its instances' do).
//! - A MIG instance's series (memory, SM, tensor and DRAM activity) carry the GPU's labels with
//!   `GPU_I_ID` and `GPU_I_PROFILE`, and the labels of the job in it.
//! - `gpulse_mig_verdict` gives each instance's verdict (`no_signal` without GPM readings).

use std::fmt::Write as _;

use super::{escape, header, GpuSnapshot};
use crate::engine::MigSnapshot;
use crate::model::{FindingKind, GpuProcess, Job, MigReading};

const MIB: f64 = (1u64 << 20) as f64;

/// How a metric is read from a MIG instance's readings.
type ReadMig = fn(&MigReading) -> Option<f64>;

/// The device metrics a MIG instance has, read from its readings.
pub(super) const MIG_METRICS: &[(&str, ReadMig)] = &[
    ("DCGM_FI_DEV_FB_USED", |m| {
        m.memory_used_bytes.map(|b| (b as f64 / MIB).round())
    }),
    ("DCGM_FI_DEV_FB_FREE", |m| {
        match (m.memory_total_bytes, m.memory_used_bytes) {
            (Some(t), Some(u)) => Some((t.saturating_sub(u) as f64 / MIB).round()),
            _ => None,
        }
    }),
    ("DCGM_FI_DEV_FB_TOTAL", |m| {
        m.memory_total_bytes.map(|b| (b as f64 / MIB).round())
    }),
    ("DCGM_FI_PROF_SM_ACTIVE", |m| m.sm_active.map(|p| p / 100.0)),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", |m| {
        m.tensor_active.map(|p| p / 100.0)
    }),
    ("DCGM_FI_PROF_DRAM_ACTIVE", |m| {
        m.dram_active.map(|p| p / 100.0)
    }),
];

/// A job's labels, each after a comma: `,pod="train",namespace="ml",container="trainer"`.
pub(super) fn job_labels(job: &Job) -> String {
    job.labels()
        .into_iter()
        .map(|(k, v)| format!(",{k}=\"{}\"", escape(&v)))
        .collect()
}

/// The distinct jobs among `processes`, in order of first appearance (a pod once, whichever of
/// its containers comes first).
fn distinct_jobs(processes: &[GpuProcess]) -> Vec<&Job> {
    let mut out: Vec<&Job> = Vec::new();
    for j in processes.iter().filter_map(|p| p.job.as_ref()) {
        if !out.iter().any(|o| o.key() == j.key()) {
            out.push(j);
        }
    }
    out
}

/// The job label sets a GPU's device series are written with: one empty set without a job (or
/// for a MIG GPU), else one per job.
pub(super) fn device_label_sets(g: &GpuSnapshot) -> Vec<String> {
    if !g.mig.is_empty() {
        return vec![String::new()];
    }
    let jobs = distinct_jobs(&g.processes);
    if jobs.is_empty() {
        return vec![String::new()];
    }
    jobs.into_iter().map(job_labels).collect()
}

/// The labels of an instance's series: `,GPU_I_PROFILE="3g.71gb",GPU_I_ID="1"` and its jobs'
/// (one set per job, one without a job).
pub(super) fn instance_label_sets(m: &MigSnapshot) -> Vec<String> {
    let r = &m.reading;
    let base = format!(
        ",GPU_I_PROFILE=\"{}\",GPU_I_ID=\"{}\"",
        escape(r.profile.as_deref().unwrap_or("")),
        r.gpu_instance_id
    );
    let jobs = distinct_jobs(&m.processes);
    if jobs.is_empty() {
        return vec![base];
    }
    jobs.into_iter()
        .map(|j| format!("{base}{}", job_labels(j)))
        .collect()
}

/// The instances' values of device metric `name`: `(labels, value)` with the GPU's labels first.
pub(super) fn instance_values(name: &str, gpus: &[(&GpuSnapshot, String)]) -> Vec<(String, f64)> {
    let Some((_, read)) = MIG_METRICS.iter().find(|(n, _)| *n == name) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (g, l) in gpus.iter().filter(|(g, _)| super::answered(g)) {
        for m in &g.mig {
            if let Some(v) = read(&m.reading) {
                for set in instance_label_sets(m) {
                    out.push((format!("{l}{set}"), v));
                }
            }
        }
    }
    out
}

/// `gpulse_mig_verdict`: one series per instance and verdict, 1 for the current one.
pub(super) fn mig_verdicts(out: &mut String, gpus: &[(&GpuSnapshot, String)]) {
    let instances: Vec<(u32, &MigSnapshot)> = gpus
        .iter()
        .flat_map(|(g, _)| g.mig.iter().map(|m| (g.info.index, m)))
        .collect();
    if instances.is_empty() {
        return;
    }
    header(
        out,
        "gpulse_mig_verdict",
        "gauge",
        "The detector's verdict of each MIG instance (1 for the current one; no_signal without GPM).",
    );
    for (gpu, m) in instances {
        let current = m.verdict.map_or("no_signal", FindingKind::as_str);
        let kinds = FindingKind::ALL
            .iter()
            .map(|k| k.as_str())
            .chain(["no_signal"]);
        for k in kinds {
            let _ = writeln!(
                out,
                "gpulse_mig_verdict{{gpu=\"{gpu}\",GPU_I_ID=\"{}\",GPU_I_PROFILE=\"{}\",verdict=\"{k}\"}} {}",
                m.reading.gpu_instance_id,
                escape(m.reading.profile.as_deref().unwrap_or("")),
                u8::from(current == k)
            );
        }
    }
}
