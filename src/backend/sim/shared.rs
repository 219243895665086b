//! The `shared` scenario: one node that several teams share, so every kind of job is on it.
//!
//! | GPU | job | activity |
//! |---|---|---|
//! | 0 | pod `train-7f9c` (namespace `ml-team`), containerd | starving |
//! | 1 | pod `infer-2` (namespace `serving`), CRI-O; and Docker container `web-3` | healthy |
//! | 2 | Slurm job 4242 `train-llm`, step 0 | checkpoint pauses |
//! | 3 | MIG: `3g.71gb` pod `eval-5` (`ml-team`), `2g.35gb` Slurm job 4243 `tune-lr`, `1g.18gb` Docker `notebook` | periodic stall, healthy, memory held idle |
//!
//! GPUs from 4 on run the `mixed` jobs, as plain host processes.

use super::Scenario;
use crate::model::{GpuProcess, Job, JobKind, ProcessKind, Runtime};

/// The GPU in MIG mode.
pub const MIG_GPU: u32 = 3;

/// The activity of GPU `index`'s job.
pub fn job_kind(index: u32) -> Scenario {
    match index {
        0 => Scenario::Starving,
        1 | MIG_GPU => Scenario::Healthy,
        2 => Scenario::Checkpoint,
        i => Scenario::Mixed.job_for(i),
    }
}

/// A pod's job, with its container.
pub fn pod(uid: &str, name: &str, namespace: &str, container: &str, runtime: Runtime) -> Job {
    let mut job = Job::new(JobKind::Pod, uid);
    job.name = Some(name.into());
    job.namespace = Some(namespace.into());
    job.container = Some(container.into());
    job.container_id = Some(container_id(uid));
    job.runtime = Some(runtime);
    job
}

/// A Docker container's job.
pub fn docker(name: &str) -> Job {
    let id = container_id(name);
    let mut job = Job::new(JobKind::Container, id.clone());
    job.name = Some(name.into());
    job.container_id = Some(id);
    job.runtime = Some(Runtime::Docker);
    job
}

/// A Slurm job's step.
pub fn slurm(id: &str, name: &str, step: &str) -> Job {
    let mut job = Job::new(JobKind::Slurm, id);
    job.name = Some(name.into());
    job.step = Some(step.into());
    job
}

/// A container ID made from a name (64 hex digits, stable from run to run).
fn container_id(seed: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut out = String::with_capacity(64);
    for round in 0..4u64 {
        for b in seed.bytes().chain(round.to_le_bytes()) {
            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
        out.push_str(&format!("{h:016x}"));
    }
    out
}

/// The job and user of the training process on GPU `index`.
pub fn owner(index: u32) -> Option<(Job, &'static str)> {
    match index {
        0 => Some((
            pod(
                "5d2c8f0e-1b7a-4c1e-9d3f-0a1b2c3d4e5f",
                "train-7f9c",
                "ml-team",
                "trainer",
                Runtime::Containerd,
            ),
            "ana",
        )),
        1 => Some((
            pod(
                "0f4e3d2c-9b8a-4765-a432-10fedcba9876",
                "infer-2",
                "serving",
                "server",
                Runtime::CriO,
            ),
            "svc-infer",
        )),
        2 => Some((slurm("4242", "train-llm", "0"), "eve")),
        _ => None,
    }
}

/// The processes that share GPU `index` with its job: on GPU 1, Docker container `web-3`.
pub fn guests(index: u32, pid: u32) -> Vec<GpuProcess> {
    if index != 1 {
        return Vec::new();
    }
    vec![GpuProcess {
        pid: pid + 500,
        kind: ProcessKind::Compute,
        user: Some("root".into()),
        gpu_memory_bytes: Some(2 << 30),
        sm_util: Some(3.0),
        mem_util: Some(1.0),
        cpu_percent: Some(12.0),
        rss_bytes: Some(1 << 30),
        running_s: Some(7200.0),
        command: Some("python app.py --model small".into()),
        state: Some('S'),
        resolved: true,
        job: Some(docker("web-3")),
        ..Default::default()
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_ids_look_like_runtime_ids_and_stay_put() {
        let id = container_id("web-3");
        assert_eq!(id.len(), 64);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(id, container_id("web-3"));
        assert_ne!(id, container_id("web-4"));
    }
}
