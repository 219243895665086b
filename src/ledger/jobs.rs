//! The ledger's rows per job: a pod (all its containers), a container, or a Slurm job (all its
//! steps), each the sum of its processes' shares, kept also for processes the process table no
//! longer holds. A process without a job counts in the GPU's and its user's totals only.
//!
//! A MIG GPU's instances are booked on their own (each like a GPU, its SM activity for its
//! utilization); [`with_instances`] adds them to the GPU's ledger, each instance's seconds
//! weighted by its share of the GPU (its compute slices of the GPU's seven).

use super::{GpuLedger, Joules, KindSeconds};
use crate::model::{FindingKind, Job, JobKind};

/// Jobs kept per GPU; processes of further jobs count in the GPU's totals only.
pub const MAX_JOBS: usize = 256;

/// One job's share of a GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct JobLedger {
    /// The job, named as well as any of its processes named it (no container or step: a row
    /// holds all of them).
    pub job: Job,
    pub gpu_seconds: f64,
    pub lost_gpu_seconds: f64,
    pub energy: Joules,
}

/// A job as a ledger row holds it: the pod or Slurm job without the process's container or step.
pub fn row_job(job: &Job) -> Job {
    let mut row = job.clone();
    if job.kind != JobKind::Container {
        row.container = None;
        row.container_id = None;
        row.runtime = None;
    }
    row.step = None;
    row
}

/// The slot of `job`'s row in `jobs`, added when new and the table has room; names a process
/// brings that the row lacks are taken.
pub(super) fn job_slot(
    jobs: &mut Vec<JobLedger>,
    job: Option<&crate::model::Job>,
) -> Option<usize> {
    let job = job?;
    if let Some(i) = jobs.iter().position(|j| j.job.key() == job.key()) {
        let row = &mut jobs[i].job;
        row.name = row.name.take().or_else(|| job.name.clone());
        row.namespace = row.namespace.take().or_else(|| job.namespace.clone());
        return Some(i);
    }
    if jobs.len() >= MAX_JOBS {
        return None;
    }
    jobs.push(JobLedger {
        job: row_job(job),
        gpu_seconds: 0.0,
        lost_gpu_seconds: 0.0,
        energy: Joules::default(),
    });
    Some(jobs.len() - 1)
}

/// The compute slices of a MIG profile (`3g.71gb` → 3; `1c.3g.40gb` → 3).
pub fn profile_slices(profile: &str) -> Option<u32> {
    profile
        .split('.')
        .find_map(|part| part.strip_suffix('g')?.parse().ok())
}

/// Compute slices of a whole GPU in MIG mode: 7 on the A100, H100, H200 and B200 (4 on the A30).
pub fn gpu_slices(gpu_name: &str) -> u32 {
    if gpu_name.contains("A30") {
        4
    } else {
        7
    }
}

/// The GPU's ledger with its MIG instances' added: `instances` are `(share of the GPU, ledger)`.
/// Their seconds by verdict, lost seconds (by kind), processes, users and jobs count at their
/// share; the GPU's own span and energy stand (the instances share its clock and its power).
pub fn with_instances(gpu: &GpuLedger, instances: &[(f64, &GpuLedger)]) -> GpuLedger {
    let mut out = gpu.clone();
    let mut shares = KindSeconds::default();
    for (share, inst) in instances {
        let share = share.clamp(0.0, 1.0);
        for (k, s) in inst.seconds_by_verdict.iter() {
            shares.add(k, s * share);
        }
        for (k, s) in inst.lost_by_kind.iter() {
            out.lost_by_kind.add(k, s * share);
        }
        out.lost_gpu_seconds += inst.lost_gpu_seconds * share;
        for p in &inst.processes {
            let mut p = p.clone();
            p.gpu_seconds *= share;
            p.lost_gpu_seconds *= share;
            p.user_slot = None;
            p.job_slot = None;
            out.processes.push(p);
        }
        for u in &inst.users {
            match out.users.iter_mut().find(|o| o.user == u.user) {
                Some(o) => {
                    o.gpu_seconds += u.gpu_seconds * share;
                    o.lost_gpu_seconds += u.lost_gpu_seconds * share;
                }
                None => {
                    let mut u = u.clone();
                    u.gpu_seconds *= share;
                    u.lost_gpu_seconds *= share;
                    out.users.push(u);
                }
            }
        }
        for j in &inst.jobs {
            if let Some(slot) = job_slot(&mut out.jobs, Some(&j.job)) {
                out.jobs[slot].gpu_seconds += j.gpu_seconds * share;
                out.jobs[slot].lost_gpu_seconds += j.lost_gpu_seconds * share;
            }
        }
    }
    // The GPU's verdicts are the instances' at their shares; the slices no instance holds idle.
    if !instances.is_empty() {
        let held: f64 = shares.iter().map(|(_, s)| s).sum();
        out.seconds_by_verdict = shares;
        let free = (gpu.span_s - held).max(0.0);
        if free > 0.0 {
            out.seconds_by_verdict.add(FindingKind::Idle, free);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Runtime;

    #[test]
    fn rows_hold_a_pod_or_slurm_job_whole_and_take_names_as_they_come() {
        let mut jobs = Vec::new();
        let mut a = Job::new(JobKind::Pod, "uid-1");
        a.container = Some("trainer".into());
        a.container_id = Some("c1".into());
        a.runtime = Some(Runtime::Containerd);
        assert_eq!(job_slot(&mut jobs, Some(&a)), Some(0));
        assert_eq!(
            jobs[0].job.container, None,
            "a pod's row holds all its containers"
        );
        let mut b = Job::new(JobKind::Pod, "uid-1");
        b.name = Some("train".into());
        b.namespace = Some("ml".into());
        b.container = Some("sidecar".into());
        assert_eq!(job_slot(&mut jobs, Some(&b)), Some(0));
        assert_eq!(jobs[0].job.label(), "pod train/ml");
        let mut step = Job::new(JobKind::Slurm, "42");
        step.step = Some("0".into());
        assert_eq!(job_slot(&mut jobs, Some(&step)), Some(1));
        assert_eq!(jobs[1].job.step, None);
        assert_eq!(job_slot(&mut jobs, None), None);
    }

    #[test]
    fn profiles_give_their_compute_slices() {
        assert_eq!(profile_slices("3g.71gb"), Some(3));
        assert_eq!(profile_slices("1c.3g.40gb"), Some(3));
        assert_eq!(profile_slices("7g.141gb"), Some(7));
        assert_eq!(profile_slices("weird"), None);
        assert_eq!(gpu_slices("NVIDIA A30"), 4);
        assert_eq!(gpu_slices("NVIDIA H200"), 7);
    }
}
