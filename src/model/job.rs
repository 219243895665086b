//! Whose work a GPU process is: a Kubernetes pod, a container, or a Slurm job, as the node tells
//! it (the process's cgroup, and the names the node keeps beside it). See `docs/JOBS.md`.

use serde::{Deserialize, Serialize};

/// What kind of job a process belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobKind {
    /// A Kubernetes pod (its UID names it).
    Pod,
    /// A container outside Kubernetes (Docker, Podman, containerd).
    Container,
    /// A Slurm job (its ID names it).
    Slurm,
}

impl JobKind {
    pub fn as_str(self) -> &'static str {
        match self {
            JobKind::Pod => "pod",
            JobKind::Container => "container",
            JobKind::Slurm => "slurm",
        }
    }
}

/// The container runtime that named a container in the cgroup path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Runtime {
    Docker,
    Podman,
    Containerd,
    CriO,
}

impl Runtime {
    pub fn as_str(self) -> &'static str {
        match self {
            Runtime::Docker => "docker",
            Runtime::Podman => "podman",
            Runtime::Containerd => "containerd",
            Runtime::CriO => "cri-o",
        }
    }
}

/// A pod, container or Slurm job, with the names the node offered.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Job {
    pub kind: JobKind,
    /// What names it for good: the pod's UID, the container's full ID, the Slurm job ID.
    pub id: String,
    /// The pod's name, the container's name, or the Slurm job's name, where the node tells it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A pod's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// In a pod: the name of the process's container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// The process's container ID (pods and containers), where the cgroup path names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_id: Option<String>,
    /// The runtime that runs the container, where the cgroup path names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Runtime>,
    /// A Slurm job's step: `0`, `1`, ..., `batch`, `extern`, `interactive`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
}

/// Characters of a container ID shown (as `docker ps` shows them).
pub const SHORT_ID: usize = 12;

impl Job {
    /// A job known only by its kind and ID.
    pub fn new(kind: JobKind, id: impl Into<String>) -> Self {
        Job {
            kind,
            id: id.into(),
            name: None,
            namespace: None,
            container: None,
            container_id: None,
            runtime: None,
            step: None,
        }
    }

    /// The job in a few words, for a table cell or a diagnosis line: `pod train-7f9c/ml-team`,
    /// `pod 5d2c8f0e` (UID, no name known), `docker web-3`, `podman 3f2a9c1b2d4e`,
    /// `slurm 4242 train-llm`.
    pub fn label(&self) -> String {
        match self.kind {
            JobKind::Pod => match (&self.name, &self.namespace) {
                (Some(n), Some(ns)) => format!("pod {n}/{ns}"),
                (Some(n), None) => format!("pod {n}"),
                _ => format!("pod {}", short(&self.id, 8)),
            },
            JobKind::Container => {
                let runtime = self.runtime.map_or("container", Runtime::as_str);
                match &self.name {
                    Some(n) => format!("{runtime} {n}"),
                    None => format!("{runtime} {}", short(&self.id, SHORT_ID)),
                }
            }
            JobKind::Slurm => match &self.name {
                Some(n) => format!("slurm {} {n}", self.id),
                None => format!("slurm {}", self.id),
            },
        }
    }

    /// The ledger's key: one row per pod (all its containers), container or Slurm job (all its
    /// steps).
    pub fn key(&self) -> (JobKind, &str) {
        (self.kind, &self.id)
    }

    /// The exporter's labels, as dcgm-exporter names them (`pod`, `namespace`, `container`) and
    /// `slurm_job`: only those that apply, in that order.
    pub fn labels(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        match self.kind {
            JobKind::Pod => {
                out.push(("pod", self.name.clone().unwrap_or_else(|| self.id.clone())));
                if let Some(ns) = &self.namespace {
                    out.push(("namespace", ns.clone()));
                }
                if let Some(c) = self.container.clone().or_else(|| self.short_container_id()) {
                    out.push(("container", c));
                }
            }
            JobKind::Container => {
                let name = self.name.clone();
                out.push((
                    "container",
                    name.unwrap_or_else(|| short(&self.id, SHORT_ID).to_string()),
                ));
            }
            JobKind::Slurm => out.push(("slurm_job", self.id.clone())),
        }
        out
    }

    fn short_container_id(&self) -> Option<String> {
        self.container_id
            .as_deref()
            .map(|c| short(c, SHORT_ID).to_string())
    }
}

/// The first `n` characters of an ID.
fn short(id: &str, n: usize) -> &str {
    id.char_indices().nth(n).map_or(id, |(i, _)| &id[..i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_say_the_kind_and_the_best_name_known() {
        let mut pod = Job::new(JobKind::Pod, "5d2c8f0e-1b7a-4c1e-9d3f-0a1b2c3d4e5f");
        assert_eq!(pod.label(), "pod 5d2c8f0e");
        pod.name = Some("train-7f9c".into());
        pod.namespace = Some("ml-team".into());
        assert_eq!(pod.label(), "pod train-7f9c/ml-team");
        let mut docker = Job::new(
            JobKind::Container,
            "3f2a9c1b2d4e5f60718293a4b5c6d7e8f90123456789abcdef0123456789abcd",
        );
        docker.runtime = Some(Runtime::Docker);
        assert_eq!(docker.label(), "docker 3f2a9c1b2d4e");
        docker.name = Some("web-3".into());
        assert_eq!(docker.label(), "docker web-3");
        let mut slurm = Job::new(JobKind::Slurm, "4242");
        assert_eq!(slurm.label(), "slurm 4242");
        slurm.name = Some("train-llm".into());
        assert_eq!(slurm.label(), "slurm 4242 train-llm");
    }

    #[test]
    fn exporter_labels_follow_dcgm_exporter() {
        let mut pod = Job::new(JobKind::Pod, "uid-1");
        pod.container_id = Some("abcdef0123456789".into());
        assert_eq!(
            pod.labels(),
            [
                ("pod", "uid-1".into()),
                ("container", "abcdef012345".into())
            ]
        );
        pod.name = Some("train".into());
        pod.namespace = Some("ml".into());
        pod.container = Some("trainer".into());
        assert_eq!(
            pod.labels(),
            [
                ("pod", "train".into()),
                ("namespace", "ml".into()),
                ("container", "trainer".into())
            ]
        );
        assert_eq!(
            Job::new(JobKind::Slurm, "77").labels(),
            [("slurm_job", "77".into())]
        );
    }
}
