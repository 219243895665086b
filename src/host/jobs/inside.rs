//! Where the monitor itself runs: on the host, or in a container or pod, and which.
//!
//! Inside a container the processes visible here are the container's own (a PID namespace of its
//! own shows no others), so they belong to its job; the processes the driver reports that are
//! not visible run in another container or on the host, and nothing here can say which. The
//! container is known from what every runtime leaves in it:
//!
//! - its own cgroup path, unless a cgroup namespace hides it (`0::/`);
//! - the mounts in `/proc/self/mountinfo`: the kubelet mounts each pod's files from
//!   `/var/lib/kubelet/pods/<uid>/…` (`/dev/termination-log` from `…/containers/<name>/…`),
//!   Docker from `/var/lib/docker/containers/<id>/…`, Podman and CRI-O from
//!   `…/overlay-containers/<id>/userdata/…`;
//! - in a pod, the namespace in `/var/run/secrets/kubernetes.io/serviceaccount/namespace` and the
//!   pod's name in `/etc/hostname` (the pod's name unless the pod sets another host name);
//! - `/.dockerenv` (Docker), `/run/.containerenv` (Podman).

use std::path::Path;

use super::cgroup::{job_of_cgroup_file, CgroupJob};
use crate::model::{Job, JobKind, Runtime};

/// Where the monitor runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SelfContext {
    /// Whether it runs in a container (or pod).
    pub in_container: bool,
    /// Its own container or pod, where known.
    pub job: Option<Job>,
}

/// What is said of a GPU process that is not visible from inside a container.
pub const OUTSIDE_NOTE: &str =
    "runs outside this container (in another container or on the host): its job cannot be read from here";

/// Read where the monitor runs: `proc_root` is procfs (`/proc`), `root` the file system (`/`).
pub fn read(proc_root: &Path, root: &Path) -> SelfContext {
    let cgroup = std::fs::read_to_string(proc_root.join("self/cgroup")).unwrap_or_default();
    let mountinfo = std::fs::read_to_string(proc_root.join("self/mountinfo")).unwrap_or_default();
    let own = match job_of_cgroup_file(&cgroup) {
        CgroupJob::Job(j) => Some(j),
        CgroupJob::None | CgroupJob::Hidden => None,
    };
    let job = own.or_else(|| job_of_mounts(&mountinfo)).map(|mut j| {
        if j.kind == JobKind::Pod {
            name_pod(&mut j, root);
        }
        j
    });
    let marker = root.join(".dockerenv").exists() || root.join("run/.containerenv").exists();
    SelfContext {
        in_container: job.is_some() || marker,
        job,
    }
}

/// The pod or container named by the mount sources in `mountinfo` (its fourth field).
fn job_of_mounts(mountinfo: &str) -> Option<Job> {
    let sources: Vec<&str> = mountinfo
        .lines()
        .filter_map(|l| l.split_whitespace().nth(3))
        .collect();
    let in_pod = |s: &&str| -> Option<(String, Option<String>)> {
        let rest = s.split_once("/kubelet/pods/")?.1;
        let (uid, after) = rest.split_once('/').unwrap_or((rest, ""));
        let container = after
            .strip_prefix("containers/")
            .and_then(|c| c.split('/').next())
            .filter(|c| !c.is_empty())
            .map(str::to_string);
        Some((uid.to_string(), container))
    };
    // Every pod file comes from the pod's directory; `/dev/termination-log` names the container.
    let mounts: Vec<(String, Option<String>)> = sources.iter().filter_map(in_pod).collect();
    let pod = mounts.first().map(|(uid, _)| {
        let mut job = Job::new(JobKind::Pod, uid.clone());
        job.container = mounts.iter().find_map(|(_, c)| c.clone());
        job
    });
    pod.or_else(|| {
        sources.iter().find_map(|s| {
            let (runtime, rest) = if let Some(r) = s.split_once("/docker/containers/") {
                (Runtime::Docker, r.1)
            } else {
                (Runtime::Podman, s.split_once("/overlay-containers/")?.1)
            };
            let id = rest.split('/').next()?;
            let valid = id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit());
            valid.then(|| {
                let mut job = Job::new(JobKind::Container, id);
                job.container_id = Some(id.to_string());
                job.runtime = Some(runtime);
                job
            })
        })
    })
}

/// A pod's namespace and name, from the files the kubelet puts in every pod.
fn name_pod(job: &mut Job, root: &Path) {
    let read = |rel: &str| {
        std::fs::read_to_string(root.join(rel))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    job.namespace = job
        .namespace
        .take()
        .or_else(|| read("var/run/secrets/kubernetes.io/serviceaccount/namespace"));
    job.name = job.name.take().or_else(|| read("etc/hostname"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_knows_itself_from_its_mounts_and_kubelet_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (proc_root, root) = (dir.path().join("proc"), dir.path().join("fs"));
        std::fs::create_dir_all(proc_root.join("self")).expect("dir");
        std::fs::write(proc_root.join("self/cgroup"), "0::/\n").expect("cgroup");
        std::fs::write(
            proc_root.join("self/mountinfo"),
            "1 0 0:1 / / rw - overlay overlay rw\n\
             2 1 8:1 /var/lib/kubelet/pods/5d2c8f0e-1b7a-4c1e-9d3f-0a1b2c3d4e5f/containers/trainer/0a1b /dev/termination-log rw - ext4 /dev/sda1 rw\n",
        )
        .expect("mountinfo");
        std::fs::create_dir_all(root.join("var/run/secrets/kubernetes.io/serviceaccount"))
            .expect("dir");
        std::fs::create_dir_all(root.join("etc")).expect("dir");
        std::fs::write(
            root.join("var/run/secrets/kubernetes.io/serviceaccount/namespace"),
            "ml-team",
        )
        .expect("ns");
        std::fs::write(root.join("etc/hostname"), "train-7f9c\n").expect("hostname");
        let ctx = read(&proc_root, &root);
        assert!(ctx.in_container);
        let job = ctx.job.expect("the pod");
        assert_eq!(job.label(), "pod train-7f9c/ml-team");
        assert_eq!(job.container.as_deref(), Some("trainer"));
        assert_eq!(job.id, "5d2c8f0e-1b7a-4c1e-9d3f-0a1b2c3d4e5f");
    }

    #[test]
    fn on_the_host_nothing_is_claimed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let proc_root = dir.path().join("proc");
        std::fs::create_dir_all(proc_root.join("self")).expect("dir");
        std::fs::write(
            proc_root.join("self/cgroup"),
            "0::/user.slice/user-1000.slice/session-2.scope\n",
        )
        .expect("cgroup");
        assert_eq!(read(&proc_root, dir.path()), SelfContext::default());
        // Docker's marker with a hidden cgroup: in a container, which one unknown.
        std::fs::write(dir.path().join(".dockerenv"), "").expect("marker");
        std::fs::write(proc_root.join("self/cgroup"), "0::/\n").expect("cgroup");
        let ctx = read(&proc_root, dir.path());
        assert!(ctx.in_container && ctx.job.is_none());
    }
}
