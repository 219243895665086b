//! Which pod holds which GPU, from the kubelet's pod-resources socket
//! (`/var/lib/kubelet/pod-resources/kubelet.sock`, `v1.PodResourcesLister/List`): the API
//! dcgm-exporter maps GPUs to pods with. It names pods and containers by name and namespace and
//! devices by the IDs the device plugin gave them: a GPU's UUID (`GPU-…`), a MIG device's
//! (`MIG-…`), with `::N` after it where a GPU is shared by time-slicing. The socket is root's
//! (mounted into a pod, as dcgm-exporter's DaemonSet does, it serves that pod).

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use super::h2c::{unary_call, CallError};

/// Where the kubelet serves pod resources.
pub const SOCKET: &str = "var/lib/kubelet/pod-resources/kubelet.sock";
const METHOD: &str = "/v1.PodResourcesLister/List";

/// A pod's container that holds devices of a resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub pod: String,
    pub namespace: String,
    pub container: String,
}

/// The NVIDIA devices' holders by device UUID (`GPU-…`, `MIG-…`; several where shared).
pub type GpuHolders = HashMap<String, Vec<Holder>>;

/// Ask the kubelet at `socket` which containers hold NVIDIA devices.
pub fn list(socket: &Path, timeout: Duration) -> Result<GpuHolders, CallError> {
    let answer = unary_call(socket, METHOD, &[], timeout)?;
    if answer.is_empty() {
        return Err(CallError::Refused(
            "no pod resources in the answer (a kubelet without the v1 API, or an error)".into(),
        ));
    }
    decode_holders(&answer)
        .ok_or_else(|| CallError::Malformed("not a ListPodResourcesResponse".into()))
}

/// The holders in an encoded `ListPodResourcesResponse`:
/// `pod_resources = 1 {name = 1, namespace = 2, containers = 3 {name = 1, devices = 2
/// {resource_name = 1, device_ids = 2}}}`.
pub fn decode_holders(message: &[u8]) -> Option<GpuHolders> {
    let mut out: GpuHolders = HashMap::new();
    for (field, pod) in fields(message)? {
        let (1, Value::Bytes(pod)) = (field, pod) else {
            continue;
        };
        let (mut name, mut namespace, mut containers) = (String::new(), String::new(), Vec::new());
        for (f, v) in fields(pod)? {
            match (f, v) {
                (1, Value::Bytes(b)) => name = String::from_utf8_lossy(b).into_owned(),
                (2, Value::Bytes(b)) => namespace = String::from_utf8_lossy(b).into_owned(),
                (3, Value::Bytes(b)) => containers.push(b),
                _ => {}
            }
        }
        for c in containers {
            let (container, devices) = container_devices(c)?;
            for id in devices {
                out.entry(id).or_default().push(Holder {
                    pod: name.clone(),
                    namespace: namespace.clone(),
                    container: container.clone(),
                });
            }
        }
    }
    Some(out)
}

/// A container's name and the UUIDs of the NVIDIA devices it holds (`::N` replicas folded into
/// their GPU).
fn container_devices(message: &[u8]) -> Option<(String, Vec<String>)> {
    let mut name = String::new();
    let mut ids = Vec::new();
    for (f, v) in fields(message)? {
        match (f, v) {
            (1, Value::Bytes(b)) => name = String::from_utf8_lossy(b).into_owned(),
            (2, Value::Bytes(dev)) => {
                let mut resource = String::new();
                let mut dev_ids = Vec::new();
                for (df, dv) in fields(dev)? {
                    match (df, dv) {
                        (1, Value::Bytes(b)) => resource = String::from_utf8_lossy(b).into_owned(),
                        (2, Value::Bytes(b)) => {
                            dev_ids.push(String::from_utf8_lossy(b).into_owned())
                        }
                        _ => {}
                    }
                }
                if resource.starts_with("nvidia.com/") {
                    ids.extend(dev_ids.into_iter().map(|id| match id.split_once("::") {
                        Some((uuid, _)) => uuid.to_string(),
                        None => id,
                    }));
                }
            }
            _ => {}
        }
    }
    ids.sort();
    ids.dedup();
    Some((name, ids))
}

/// A protobuf field's value.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Value<'a> {
    Varint(u64),
    Fixed,
    Bytes(&'a [u8]),
}

/// The `(field number, value)` pairs of one message; `None` when it is malformed.
fn fields(mut buf: &[u8]) -> Option<Vec<(u64, Value<'_>)>> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        let key = varint(&mut buf)?;
        let value = match key & 7 {
            0 => Value::Varint(varint(&mut buf)?),
            1 => {
                buf = buf.get(8..)?;
                Value::Fixed
            }
            2 => {
                let len = usize::try_from(varint(&mut buf)?).ok()?;
                let (b, rest) = buf.split_at_checked(len)?;
                buf = rest;
                Value::Bytes(b)
            }
            5 => {
                buf = buf.get(4..)?;
                Value::Fixed
            }
            _ => return None,
        };
        out.push((key >> 3, value));
    }
    Some(out)
}

fn varint(buf: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&b, rest) = buf.split_first()?;
        *buf = rest;
        value |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// Protobuf encoding for tests (the fake kubelet's answers).
#[cfg(any(test, feature = "testing"))]
pub mod encode {
    /// A length-delimited field.
    pub fn bytes(field: u64, b: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        varint(&mut out, field << 3 | 2);
        varint(&mut out, b.len() as u64);
        out.extend_from_slice(b);
        out
    }

    fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    /// A `PodResources` message with containers `(name, resource, device ids)`.
    pub fn pod(name: &str, namespace: &str, containers: &[(&str, &str, &[&str])]) -> Vec<u8> {
        let mut out = bytes(1, name.as_bytes());
        out.extend(bytes(2, namespace.as_bytes()));
        for (cname, resource, ids) in containers {
            let mut dev = bytes(1, resource.as_bytes());
            for id in *ids {
                dev.extend(bytes(2, id.as_bytes()));
            }
            let mut c = bytes(1, cname.as_bytes());
            c.extend(bytes(2, &dev));
            // cpu_ids = 3 (packed int64): skipped by the reader.
            c.extend(bytes(3, &[4, 5]));
            out.extend(bytes(3, &c));
        }
        out
    }

    /// A `ListPodResourcesResponse` of encoded pods.
    pub fn response(pods: &[Vec<u8>]) -> Vec<u8> {
        pods.iter().flat_map(|p| bytes(1, p)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holders_of_gpus_mig_devices_and_shared_replicas() {
        let msg = encode::response(&[
            encode::pod(
                "train-7f9c",
                "ml-team",
                &[("trainer", "nvidia.com/gpu", &["GPU-aaa"])],
            ),
            encode::pod(
                "infer-1",
                "serving",
                &[("server", "nvidia.com/mig-1g.18gb", &["MIG-bbb"])],
            ),
            encode::pod(
                "nb-1",
                "lab",
                &[("nb", "nvidia.com/gpu.shared", &["GPU-ccc::0", "GPU-ccc::3"])],
            ),
            encode::pod(
                "nb-2",
                "lab",
                &[("nb", "nvidia.com/gpu.shared", &["GPU-ccc::1"])],
            ),
            encode::pod("web", "default", &[("web", "example.com/fpga", &["fpga0"])]),
        ]);
        let h = decode_holders(&msg).expect("decoded");
        assert_eq!(
            h["GPU-aaa"],
            [Holder {
                pod: "train-7f9c".into(),
                namespace: "ml-team".into(),
                container: "trainer".into()
            }]
        );
        assert_eq!(h["MIG-bbb"][0].pod, "infer-1");
        let shared: Vec<&str> = h["GPU-ccc"].iter().map(|x| x.pod.as_str()).collect();
        assert_eq!(
            shared,
            ["nb-1", "nb-2"],
            "replicas fold into their GPU, once per container"
        );
        assert!(!h.contains_key("fpga0"));
        assert_eq!(decode_holders(&[0x0a, 0x05, 0x01]), None, "cut short");
    }

    #[test]
    fn the_socket_is_asked_over_http2() {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("kubelet.sock");
        let listener = std::os::unix::net::UnixListener::bind(&socket).expect("bind");
        let msg = encode::response(&[encode::pod(
            "train-7f9c",
            "ml-team",
            &[("trainer", "nvidia.com/gpu", &["GPU-aaa"])],
        )]);
        let server = std::thread::spawn(move || super::super::h2c::serve_once(listener, msg, 7));
        let h = list(&socket, Duration::from_secs(5)).expect("holders");
        assert_eq!(h["GPU-aaa"][0].namespace, "ml-team");
        server.join().expect("server");
    }
}
