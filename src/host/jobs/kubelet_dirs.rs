//! Pod and container names from the directories the kubelet keeps for every pod's logs, readable
//! without credentials on most nodes (`/var/log/pods` and `/var/log/containers` are world-readable
//! directories; only the log files in them are not):
//!
//! - `/var/log/pods/<namespace>_<pod>_<uid>/<container>/`: a pod's name and namespace by its UID;
//! - `/var/log/containers/<pod>_<namespace>_<container>-<container id>.log`: a container's name
//!   by its ID.
//!
//! Kubernetes names (pods, namespaces, containers) never hold `_`, so the parts split cleanly.

use std::collections::HashMap;
use std::path::Path;

/// A pod's names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodNames {
    pub name: String,
    pub namespace: String,
    /// Its containers' names (from the subdirectories).
    pub containers: Vec<String>,
}

/// A container's names, with its pod's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerNames {
    pub pod: String,
    pub namespace: String,
    pub container: String,
}

/// Every pod in `dir` (`/var/log/pods`) by UID; empty when the directory cannot be read.
pub fn pods(dir: &Path) -> std::io::Result<HashMap<String, PodNames>> {
    let mut out = HashMap::new();
    for entry in std::fs::read_dir(dir)?.flatten() {
        let file = entry.file_name();
        let Some((namespace, name, uid)) = file.to_str().and_then(split_pod_dir) else {
            continue;
        };
        let mut containers: Vec<String> = std::fs::read_dir(entry.path())
            .map(|d| {
                d.flatten()
                    .filter_map(|c| c.file_name().to_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        containers.sort();
        out.insert(
            uid.to_string(),
            PodNames {
                name: name.to_string(),
                namespace: namespace.to_string(),
                containers,
            },
        );
    }
    Ok(out)
}

/// `<namespace>_<pod>_<uid>`.
fn split_pod_dir(name: &str) -> Option<(&str, &str, &str)> {
    let mut parts = name.splitn(3, '_');
    let (ns, pod, uid) = (parts.next()?, parts.next()?, parts.next()?);
    (!ns.is_empty() && !pod.is_empty() && !uid.is_empty()).then_some((ns, pod, uid))
}

/// Every container in `dir` (`/var/log/containers`) by ID; empty when unreadable.
pub fn containers(dir: &Path) -> std::io::Result<HashMap<String, ContainerNames>> {
    let mut out = HashMap::new();
    for entry in std::fs::read_dir(dir)?.flatten() {
        let file = entry.file_name();
        if let Some((id, names)) = file.to_str().and_then(split_container_log) {
            out.insert(id, names);
        }
    }
    Ok(out)
}

/// `<pod>_<namespace>_<container>-<64 hex id>.log`.
fn split_container_log(name: &str) -> Option<(String, ContainerNames)> {
    let stem = name.strip_suffix(".log")?;
    let mut parts = stem.splitn(3, '_');
    let (pod, namespace, rest) = (parts.next()?, parts.next()?, parts.next()?);
    let (container, id) = rest.rsplit_once('-')?;
    let valid = id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit());
    (valid && !container.is_empty() && !pod.is_empty()).then(|| {
        (
            id.to_string(),
            ContainerNames {
                pod: pod.to_string(),
                namespace: namespace.to_string(),
                container: container.to_string(),
            },
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_directory_names_split_into_pod_namespace_container() {
        assert_eq!(
            split_pod_dir("ml-team_train-7f9c_5d2c8f0e-1b7a-4c1e-9d3f-0a1b2c3d4e5f"),
            Some((
                "ml-team",
                "train-7f9c",
                "5d2c8f0e-1b7a-4c1e-9d3f-0a1b2c3d4e5f"
            ))
        );
        assert_eq!(split_pod_dir("lost+found"), None);
        let id = "a".repeat(64);
        let (got, names) =
            split_container_log(&format!("train-7f9c_ml-team_trainer-side-{id}.log"))
                .expect("a container log");
        assert_eq!(got, id);
        assert_eq!(names.container, "trainer-side");
        assert_eq!(
            (names.pod.as_str(), names.namespace.as_str()),
            ("train-7f9c", "ml-team")
        );
        assert_eq!(split_container_log("train_ml_trainer-abc.log"), None);
        assert_eq!(split_container_log("notes.txt"), None);
    }
}
