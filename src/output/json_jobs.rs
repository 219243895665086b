//! The jobs and MIG instances in the snapshot document: a process's pod, container or Slurm job,
//! and a MIG GPU's instances (see docs/OUTPUTS.md).

use serde::Serialize;

use crate::engine::MigSnapshot;
use crate::model::{Finding, Job};

/// A process's job.
#[derive(Debug, Serialize)]
pub struct JobDoc<'a> {
    /// `pod`, `container` or `slurm`.
    pub kind: &'static str,
    /// The pod's UID, the container's ID, the Slurm job's ID.
    pub id: &'a str,
    /// The job in words, as the dashboard shows it (`pod train-7f9c/ml-team`).
    pub label: String,
    pub name: Option<&'a str>,
    pub namespace: Option<&'a str>,
    /// In a pod: the process's container's name.
    pub container: Option<&'a str>,
    pub container_id: Option<&'a str>,
    /// `docker`, `podman`, `containerd` or `cri-o`, where the cgroup path says.
    pub runtime: Option<&'static str>,
    /// A Slurm job's step.
    pub step: Option<&'a str>,
}

pub fn job_doc(j: &Job) -> JobDoc<'_> {
    JobDoc {
        kind: j.kind.as_str(),
        id: &j.id,
        label: j.label(),
        name: j.name.as_deref(),
        namespace: j.namespace.as_deref(),
        container: j.container.as_deref(),
        container_id: j.container_id.as_deref(),
        runtime: j.runtime.map(|r| r.as_str()),
        step: j.step.as_deref(),
    }
}

/// One MIG instance.
#[derive(Debug, Serialize)]
pub struct MigDoc<'a> {
    pub gpu_instance_id: u32,
    pub compute_instance_id: u32,
    /// `3g.71gb`, as `nvidia-smi mig -lgi` names it.
    pub profile: Option<&'a str>,
    pub uuid: Option<&'a str>,
    pub memory_used_bytes: Option<u64>,
    pub memory_total_bytes: Option<u64>,
    /// GPM activity of the GPU instance, percent (null without GPM).
    pub sm_active: Option<f64>,
    pub tensor_active: Option<f64>,
    pub dram_active: Option<f64>,
    /// The instance's share of the GPU (its compute slices of the GPU's).
    pub share: f64,
    /// The detector's verdict on the instance; null when it has no signal (no GPM).
    pub verdict: Option<&'static str>,
    pub findings: Vec<&'a Finding>,
    /// PIDs of the GPU's processes in this instance.
    pub pids: &'a [u32],
}

pub fn mig_doc(m: &MigSnapshot) -> MigDoc<'_> {
    let r = &m.reading;
    MigDoc {
        gpu_instance_id: r.gpu_instance_id,
        compute_instance_id: r.compute_instance_id,
        profile: r.profile.as_deref(),
        uuid: r.uuid.as_deref(),
        memory_used_bytes: r.memory_used_bytes,
        memory_total_bytes: r.memory_total_bytes,
        sm_active: r.sm_active,
        tensor_active: r.tensor_active,
        dram_active: r.dram_active,
        share: m.share,
        verdict: m.verdict.map(|v| v.as_str()),
        findings: m.findings.iter().collect(),
        pids: &r.pids,
    }
}
