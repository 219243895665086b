//! The job in a process's cgroup path (`/proc/PID/cgroup`): cgroup v1 and v2, the systemd and
//! cgroupfs drivers.
//!
//! The layouts read (each runtime names its cgroups this way; see `docs/JOBS.md`):
//!
//! | who | systemd driver | cgroupfs driver |
//! |---|---|---|
//! | Kubernetes | `kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_with_underscores>.slice/cri-containerd-<id>.scope` (`crio-<id>.scope`, `docker-<id>.scope`) | `kubepods/burstable/pod<uid>/<id>` |
//! | Docker | `system.slice/docker-<id>.scope` | `docker/<id>` |
//! | Podman | `machine.slice/libpod-<id>.scope` (rootless: under `user@UID.service`) | `libpod_parent/libpod-<id>` |
//! | containerd (nerdctl) | `system.slice/nerdctl-<id>.scope` | — |
//! | Slurm | `system.slice/slurmstepd.scope/job_<n>/step_<s>/user/task_<t>` (v2) | `slurm/uid_<u>/job_<n>/step_<s>/task_<t>` (v1) |
//!
//! A path of `/` alone is what a process sees inside its own cgroup namespace: it hides where the
//! process is, which [`CgroupJob::Hidden`] says.

use crate::model::{Job, JobKind, Runtime};

/// What a cgroup file says about a process's job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CgroupJob {
    /// A pod, container or Slurm job.
    Job(Job),
    /// A cgroup that belongs to no job (a user logged in, a system service).
    None,
    /// Only `/`: a cgroup namespace hides the path (read from inside a container).
    Hidden,
}

/// The job named by the text of a `/proc/PID/cgroup` file. The unified (v2) line is read first,
/// then v1's `name=systemd`, then the other v1 hierarchies: the first path that names a job wins.
pub fn job_of_cgroup_file(text: &str) -> CgroupJob {
    let mut paths: Vec<(u8, &str)> = text
        .lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            let rank = match (id, controllers) {
                ("0", "") => 0,
                (_, "name=systemd") => 1,
                _ => 2,
            };
            Some((rank, path.trim()))
        })
        .collect();
    paths.sort_by_key(|(rank, _)| *rank);
    let mut hidden = !paths.is_empty();
    for (_, path) in paths {
        if let Some(job) = job_of_path(path) {
            return CgroupJob::Job(job);
        }
        hidden &= path == "/";
    }
    if hidden {
        CgroupJob::Hidden
    } else {
        CgroupJob::None
    }
}

/// The job named by one cgroup path: a pod first (a pod's path may hold a runtime's name too),
/// then a Slurm job, then a container.
pub fn job_of_path(path: &str) -> Option<Job> {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    pod(&segments)
        .or_else(|| slurm(&segments))
        .or_else(|| container(&segments))
}

/// A Kubernetes pod: a `pod<uid>` segment under `kubepods`, and the container after it.
fn pod(segments: &[&str]) -> Option<Job> {
    let first = segments.iter().position(|s| s.starts_with("kubepods"))?;
    let (at, uid) = segments
        .iter()
        .enumerate()
        .skip(first)
        .find_map(|(i, s)| pod_uid(s).map(|uid| (i, uid)))?;
    let mut job = Job::new(JobKind::Pod, uid);
    if let Some((runtime, id)) = segments.get(at + 1).and_then(|s| container_segment(s)) {
        job.container_id = Some(id.to_string());
        job.runtime = runtime;
    }
    Some(job)
}

/// The UID in `pod<uid>` (cgroupfs) or `kubepods-<qos>-pod<uid_with_underscores>.slice`
/// (systemd), with dashes.
fn pod_uid(segment: &str) -> Option<String> {
    let name = segment.strip_suffix(".slice").unwrap_or(segment);
    let at = name.rfind("pod")?;
    let before = &name[..at];
    if !(before.is_empty() || before.ends_with('-')) {
        return None;
    }
    let uid = name[at + 3..].replace('_', "-");
    is_uid(&uid).then_some(uid)
}

/// A UUID as Kubernetes writes pod UIDs (`8-4-4-4-12` hex digits), or a static pod's config hash
/// (32 hex digits).
fn is_uid(s: &str) -> bool {
    let hex = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_hexdigit());
    let groups: Vec<&str> = s.split('-').collect();
    match groups.as_slice() {
        [a, b, c, d, e] => {
            [a, b, c, d, e].iter().all(|g| hex(g))
                && [a.len(), b.len(), c.len(), d.len(), e.len()] == [8, 4, 4, 4, 12]
        }
        [one] => one.len() == 32 && hex(one),
        _ => false,
    }
}

/// A container's segment: its runtime where the name says it, and its ID (64 hex digits).
/// Conmon's own scopes (`crio-conmon-…`, `libpod-conmon-…`) are not the container.
fn container_segment(segment: &str) -> Option<(Option<Runtime>, &str)> {
    let name = segment.strip_suffix(".scope").unwrap_or(segment);
    if name.contains("conmon-") {
        return None;
    }
    const PREFIXES: [(&str, Runtime); 5] = [
        ("cri-containerd-", Runtime::Containerd),
        ("nerdctl-", Runtime::Containerd),
        ("crio-", Runtime::CriO),
        ("docker-", Runtime::Docker),
        ("libpod-", Runtime::Podman),
    ];
    let (runtime, id) = PREFIXES
        .iter()
        .find_map(|(p, r)| name.strip_prefix(p).map(|id| (Some(*r), id)))
        .unwrap_or((None, name));
    is_container_id(id).then_some((runtime, id))
}

fn is_container_id(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A Slurm job: `job_<n>` below a `slurm…` segment (`slurm`, `slurm_<node>` in v1;
/// `slurmstepd.scope`, `<node>_slurmstepd.scope` in v2), its step after it.
fn slurm(segments: &[&str]) -> Option<Job> {
    let root = segments.iter().position(|s| {
        s.starts_with("slurm") || s.ends_with("_slurmstepd.scope") || *s == "slurmstepd.scope"
    })?;
    let (at, id) = segments
        .iter()
        .enumerate()
        .skip(root + 1)
        .find_map(|(i, s)| {
            let id = s.strip_prefix("job_")?;
            (!id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())).then_some((i, id))
        })?;
    let mut job = Job::new(JobKind::Slurm, id);
    job.step = segments
        .get(at + 1)
        .and_then(|s| s.strip_prefix("step_"))
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    Some(job)
}

/// A container outside Kubernetes: the innermost segment that names one (`docker-<id>.scope`,
/// `libpod-<id>.scope`, `nerdctl-<id>.scope`), or a bare ID under `docker` (cgroupfs).
fn container(segments: &[&str]) -> Option<Job> {
    segments.iter().enumerate().rev().find_map(|(i, s)| {
        let (runtime, id) = container_segment(s)?;
        let runtime = match runtime {
            Some(r) => r,
            None if i > 0 && segments[i - 1] == "docker" => Runtime::Docker,
            None => return None,
        };
        let mut job = Job::new(JobKind::Container, id);
        job.container_id = Some(id.to_string());
        job.runtime = Some(runtime);
        Some(job)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "9ec39b91f3d70e1beff50a308f77067065ea6be0d91a3378375056cd4422cf3d";
    const UID: &str = "74c13223-5a00-11e9-b385-42010a80018d";

    fn job(text: &str) -> Job {
        match job_of_cgroup_file(text) {
            CgroupJob::Job(j) => j,
            other => panic!("no job in {text:?}: {other:?}"),
        }
    }

    #[test]
    fn kubernetes_pods_under_both_drivers_and_every_runtime() {
        let systemd = format!(
            "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/cri-containerd-{ID}.scope\n",
            UID.replace('-', "_")
        );
        let j = job(&systemd);
        assert_eq!((j.kind, j.id.as_str()), (JobKind::Pod, UID));
        assert_eq!(j.container_id.as_deref(), Some(ID));
        assert_eq!(j.runtime, Some(Runtime::Containerd));
        // Guaranteed pods have no QoS level in the path; CRI-O names its scopes `crio-`.
        let guaranteed = format!(
            "0::/kubepods.slice/kubepods-pod{}.slice/crio-{ID}.scope\n",
            UID.replace('-', "_")
        );
        assert_eq!(job(&guaranteed).runtime, Some(Runtime::CriO));
        // cgroupfs, v1: every hierarchy names the pod and the bare container ID.
        let v1 = format!(
            "11:devices:/kubepods/besteffort/pod{UID}/{ID}\n10:memory:/kubepods/besteffort/pod{UID}/{ID}\n"
        );
        let j = job(&v1);
        assert_eq!((j.id.as_str(), j.runtime), (UID, None));
        assert_eq!(j.container_id.as_deref(), Some(ID));
        // A pod's conmon is not its container.
        let conmon = format!(
            "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/crio-conmon-{ID}.scope\n",
            UID.replace('-', "_")
        );
        assert_eq!(job(&conmon).container_id, None);
    }

    #[test]
    fn docker_and_podman_containers() {
        let j = job(&format!("0::/system.slice/docker-{ID}.scope\n"));
        assert_eq!(
            (j.kind, j.runtime, j.id.as_str()),
            (JobKind::Container, Some(Runtime::Docker), ID)
        );
        let j = job(&format!(
            "4:memory:/docker/{ID}\n1:name=systemd:/docker/{ID}\n"
        ));
        assert_eq!(j.runtime, Some(Runtime::Docker));
        let rootless = format!(
            "0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-{ID}.scope/container\n"
        );
        assert_eq!(job(&rootless).runtime, Some(Runtime::Podman));
        let cgroupfs = format!("0::/libpod_parent/libpod-{ID}\n");
        assert_eq!(job(&cgroupfs).runtime, Some(Runtime::Podman));
        assert_eq!(
            job(&format!("0::/system.slice/nerdctl-{ID}.scope\n")).runtime,
            Some(Runtime::Containerd)
        );
    }

    #[test]
    fn slurm_jobs_and_steps_in_v1_and_v2() {
        let v2 = job("0::/system.slice/slurmstepd.scope/job_1392969/step_0/user/task_0\n");
        assert_eq!((v2.kind, v2.id.as_str()), (JobKind::Slurm, "1392969"));
        assert_eq!(v2.step.as_deref(), Some("0"));
        let v1 = job("10:devices:/slurm/uid_2101171/job_280678/step_interactive/task_0\n");
        assert_eq!(
            (v1.id.as_str(), v1.step.as_deref()),
            ("280678", Some("interactive"))
        );
        let multi =
            job("0::/system.slice/node7_slurmstepd.scope/job_42/step_batch/user/task_special\n");
        assert_eq!(
            (multi.id.as_str(), multi.step.as_deref()),
            ("42", Some("batch"))
        );
        let v1_node = job("5:cpuset:/slurm_node7/uid_1000/job_9/step_extern\n");
        assert_eq!(v1_node.id, "9");
    }

    #[test]
    fn sessions_services_and_namespaced_paths_name_no_job() {
        assert_eq!(
            job_of_cgroup_file("0::/user.slice/user-1000.slice/session-3.scope\n"),
            CgroupJob::None
        );
        assert_eq!(
            job_of_cgroup_file("0::/system.slice/slurmstepd.scope/system\n"),
            CgroupJob::None
        );
        assert_eq!(job_of_cgroup_file("0::/\n"), CgroupJob::Hidden);
        assert_eq!(
            job_of_cgroup_file("12:memory:/\n1:name=systemd:/\n0::/\n"),
            CgroupJob::Hidden
        );
        assert_eq!(job_of_cgroup_file(""), CgroupJob::None);
        assert_eq!(job_of_cgroup_file("garbage\n"), CgroupJob::None);
        // Not a pod UID, not a container ID.
        assert_eq!(
            job_of_cgroup_file("0::/kubepods/burstable/podnotauid/abc\n"),
            CgroupJob::None
        );
        assert_eq!(
            job_of_cgroup_file("0::/system.slice/docker.service\n"),
            CgroupJob::None
        );
    }
}
