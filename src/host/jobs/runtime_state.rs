//! A container's names from its runtime's state on disk, by the container's ID (each file is read
//! only where the monitor may read it; root may read all of them):
//!
//! - containerd: the task bundle's OCI spec,
//!   `/run/containerd/io.containerd.runtime.v2.task/<namespace>/<id>/config.json`; the CRI plugin
//!   annotates it with the container's and the pod's names (`io.kubernetes.cri.container-name`,
//!   `io.kubernetes.cri.sandbox-name`, `io.kubernetes.cri.sandbox-namespace`), nerdctl with
//!   `nerdctl/name`;
//! - CRI-O: `/run/containers/storage/overlay-containers/<id>/userdata/config.json`, annotated
//!   `io.kubernetes.container.name`, `io.kubernetes.pod.name`, `io.kubernetes.pod.namespace`;
//! - Podman (rootful): the storage's index, `/var/lib/containers/storage/overlay-containers/`
//!   `containers.json` (and `volatile-containers.json` for `--rm` containers): `[{"id", "names"}]`;
//! - Docker: `/var/lib/docker/containers/<id>/config.v2.json`, whose `Name` is `/<name>`.

use std::path::Path;

use serde_json::Value;

use crate::model::Runtime;

/// What a runtime's state says about a container.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuntimeNames {
    pub container: Option<String>,
    pub pod: Option<String>,
    pub namespace: Option<String>,
}

impl RuntimeNames {
    fn any(&self) -> bool {
        self.container.is_some() || self.pod.is_some()
    }
}

/// Why a state file gave nothing: absent or unreadable (normal), or of a shape not known here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateError {
    Unreadable,
    UnknownShape(String),
}

/// The names of container `id` from the runtime's state under `root` (`/` on a live system):
/// the runtime the cgroup named first, then the others.
pub fn names(root: &Path, id: &str, runtime: Option<Runtime>) -> Result<RuntimeNames, StateError> {
    let mut order = vec![
        Runtime::Containerd,
        Runtime::CriO,
        Runtime::Docker,
        Runtime::Podman,
    ];
    if let Some(r) = runtime {
        order.retain(|o| *o != r);
        order.insert(0, r);
    }
    let mut shape_error = None;
    for r in order {
        let found = match r {
            Runtime::Containerd => containerd(root, id),
            Runtime::CriO => crio(root, id),
            Runtime::Docker => docker(root, id),
            Runtime::Podman => podman(root, id),
        };
        match found {
            Ok(n) if n.any() => return Ok(n),
            Ok(_) | Err(StateError::Unreadable) => {}
            Err(e) => shape_error = shape_error.or(Some(e)),
        }
    }
    Err(shape_error.unwrap_or(StateError::Unreadable))
}

fn read_json(path: &Path) -> Result<Value, StateError> {
    let text = std::fs::read_to_string(path).map_err(|_| StateError::Unreadable)?;
    serde_json::from_str(&text)
        .map_err(|e| StateError::UnknownShape(format!("{}: not JSON ({e})", path.display())))
}

/// The `annotations` object of an OCI spec.
fn annotations<'a>(
    spec: &'a Value,
    path: &Path,
) -> Result<&'a serde_json::Map<String, Value>, StateError> {
    spec.get("annotations")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            StateError::UnknownShape(format!("{}: no \"annotations\" object", path.display()))
        })
}

fn text(map: &serde_json::Map<String, Value>, key: &str) -> Option<String> {
    map.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn containerd(root: &Path, id: &str) -> Result<RuntimeNames, StateError> {
    let tasks = root.join("run/containerd/io.containerd.runtime.v2.task");
    let namespaces = std::fs::read_dir(&tasks).map_err(|_| StateError::Unreadable)?;
    for ns in namespaces.flatten() {
        let path = ns.path().join(id).join("config.json");
        if !path.exists() {
            continue;
        }
        let spec = read_json(&path)?;
        let a = annotations(&spec, &path)?;
        return Ok(RuntimeNames {
            container: text(a, "io.kubernetes.cri.container-name")
                .or_else(|| text(a, "nerdctl/name")),
            pod: text(a, "io.kubernetes.cri.sandbox-name"),
            namespace: text(a, "io.kubernetes.cri.sandbox-namespace"),
        });
    }
    Err(StateError::Unreadable)
}

fn crio(root: &Path, id: &str) -> Result<RuntimeNames, StateError> {
    let path = root
        .join("run/containers/storage/overlay-containers")
        .join(id)
        .join("userdata/config.json");
    let spec = read_json(&path)?;
    let a = annotations(&spec, &path)?;
    Ok(RuntimeNames {
        container: text(a, "io.kubernetes.container.name"),
        pod: text(a, "io.kubernetes.pod.name"),
        namespace: text(a, "io.kubernetes.pod.namespace"),
    })
}

fn docker(root: &Path, id: &str) -> Result<RuntimeNames, StateError> {
    let path = root
        .join("var/lib/docker/containers")
        .join(id)
        .join("config.v2.json");
    let config = read_json(&path)?;
    let name = config
        .get("Name")
        .and_then(Value::as_str)
        .ok_or_else(|| StateError::UnknownShape(format!("{}: no \"Name\"", path.display())))?;
    Ok(RuntimeNames {
        container: Some(name.trim_start_matches('/').to_string()).filter(|n| !n.is_empty()),
        ..Default::default()
    })
}

fn podman(root: &Path, id: &str) -> Result<RuntimeNames, StateError> {
    let dir = root.join("var/lib/containers/storage/overlay-containers");
    let mut readable = false;
    for file in ["containers.json", "volatile-containers.json"] {
        let path = dir.join(file);
        let list = match read_json(&path) {
            Ok(v) => v,
            Err(StateError::Unreadable) => continue,
            Err(e) => return Err(e),
        };
        readable = true;
        let entries = list.as_array().ok_or_else(|| {
            StateError::UnknownShape(format!("{}: not a list of containers", path.display()))
        })?;
        let named = entries
            .iter()
            .find(|c| c.get("id").and_then(Value::as_str) == Some(id))
            .and_then(|c| {
                c.get("names")?
                    .as_array()?
                    .first()?
                    .as_str()
                    .map(str::to_string)
            });
        if named.is_some() {
            return Ok(RuntimeNames {
                container: named,
                ..Default::default()
            });
        }
    }
    if readable {
        Ok(RuntimeNames::default())
    } else {
        Err(StateError::Unreadable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "9ec39b91f3d70e1beff50a308f77067065ea6be0d91a3378375056cd4422cf3d";

    fn write(root: &Path, rel: &str, body: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("dir");
        std::fs::write(p, body).expect("write");
    }

    #[test]
    fn each_runtime_names_its_containers() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        write(
            root,
            &format!("run/containerd/io.containerd.runtime.v2.task/k8s.io/{ID}/config.json"),
            r#"{"ociVersion":"1.1.0","annotations":{"io.kubernetes.cri.container-name":"trainer",
               "io.kubernetes.cri.sandbox-name":"train-7f9c","io.kubernetes.cri.sandbox-namespace":"ml-team"}}"#,
        );
        let n = names(root, ID, Some(Runtime::Containerd)).expect("names");
        assert_eq!(n.container.as_deref(), Some("trainer"));
        assert_eq!(
            (n.pod.as_deref(), n.namespace.as_deref()),
            (Some("train-7f9c"), Some("ml-team"))
        );

        let other = "b".repeat(64);
        write(
            root,
            &format!("var/lib/docker/containers/{other}/config.v2.json"),
            r#"{"ID":"x","Name":"/web-3","Config":{}}"#,
        );
        assert_eq!(
            names(root, &other, Some(Runtime::Docker))
                .expect("docker")
                .container
                .as_deref(),
            Some("web-3")
        );
        let podman_id = "c".repeat(64);
        write(
            root,
            "var/lib/containers/storage/overlay-containers/containers.json",
            &format!(r#"[{{"id":"{podman_id}","names":["notebook"],"image":"i"}}]"#),
        );
        assert_eq!(
            names(root, &podman_id, Some(Runtime::Podman))
                .expect("podman")
                .container
                .as_deref(),
            Some("notebook")
        );
    }

    #[test]
    fn unknown_shapes_and_missing_files_name_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        assert_eq!(names(root, ID, None), Err(StateError::Unreadable));
        write(
            root,
            &format!("var/lib/docker/containers/{ID}/config.v2.json"),
            r#"["a list, not a config"]"#,
        );
        match names(root, ID, Some(Runtime::Docker)) {
            Err(StateError::UnknownShape(why)) => assert!(why.contains("no \"Name\""), "{why}"),
            other => panic!("{other:?}"),
        }
        write(
            root,
            &format!("var/lib/docker/containers/{ID}/config.v2.json"),
            "{not json",
        );
        assert!(matches!(
            names(root, ID, Some(Runtime::Docker)),
            Err(StateError::UnknownShape(_))
        ));
    }
}
