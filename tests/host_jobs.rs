//! Whose work each GPU process is, read from fixture nodes (`tests/fixtures/node/...`): a procfs
//! tree with one process per runtime's cgroup layout, and the node's files the names come from
//! (the kubelet's log directories, the runtimes' state, a Slurm job's environment); and the
//! monitor inside a pod, where the kubelet's pod-resources socket names the pods it cannot see.

mod support;

use std::path::PathBuf;
use std::time::Duration;

use support::api::{
    pod_resources_encode as encode, serve_pod_resources_once, DeviceInfo, GpuProcess, GpuReading,
    HostProbe, JobKind, Runtime, Sample, OUTSIDE_NOTE,
};

fn node(name: &str) -> PathBuf {
    support::fixture("node").join(name)
}

/// One GPU process per PID, on GPU 0.
fn sample_of(pids: &[u32]) -> Sample {
    Sample {
        gpus: vec![GpuReading {
            index: 0,
            processes: pids
                .iter()
                .map(|&pid| GpuProcess {
                    pid,
                    resolved: true,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Fill a sample twice: the lookups asked at the first tick are answered by the second.
fn attributed(probe: &mut HostProbe, pids: &[u32]) -> Vec<GpuProcess> {
    let mut s = sample_of(pids);
    probe.fill_at(&mut s, 1.0);
    probe.settle_jobs(Duration::from_secs(10));
    let mut s = sample_of(pids);
    probe.fill_at(&mut s, 1.25);
    s.gpus.remove(0).processes
}

fn label(p: &GpuProcess) -> String {
    p.job.as_ref().map_or("—".to_string(), |j| j.label())
}

#[test]
fn every_runtime_s_cgroup_layout_names_its_job() {
    let root = node("shared_host");
    let mut probe = HostProbe::with_root(root.join("proc")).with_node_root(&root);
    let pids = [5101, 5201, 5301, 5401, 5501, 5601, 5701, 5801, 5901, 6001];
    let procs = attributed(&mut probe, &pids);
    let labels: Vec<String> = procs.iter().map(label).collect();
    assert_eq!(
        labels,
        [
            "pod train-7f9c/ml-team",
            "pod infer-2/serving",
            "pod notebook-0/research",
            "docker web-3",
            "podman notebook",
            "slurm 4242 train-llm",
            "slurm 77",
            "—",
            "—",
            "containerd 66666666ffff",
        ]
    );
    let job = |i: usize| procs[i].job.clone().expect("a job");
    let train = job(0);
    assert_eq!(train.container.as_deref(), Some("trainer"));
    assert_eq!(train.runtime, Some(Runtime::Containerd));
    assert_eq!(train.id, "5d2c8f0e-1b7a-4c1e-9d3f-0a1b2c3d4e5f");
    let infer = job(1);
    assert_eq!(
        (infer.container.as_deref(), infer.runtime),
        (Some("server"), Some(Runtime::CriO))
    );
    // A pod's only container, named by its log directory.
    assert_eq!(job(2).container.as_deref(), Some("lab"));
    assert_eq!(job(5).step.as_deref(), Some("0"));
    assert_eq!(job(6).step.as_deref(), Some("batch"));
    assert_eq!(job(6).kind, JobKind::Slurm);
    // Nothing to say about a process without a job: no note either.
    assert!(procs[7].job_note.is_none() && procs[8].job_note.is_none());
}

#[test]
fn a_lookup_never_holds_up_a_tick_and_happens_once_per_process() {
    let root = node("shared_host");
    let mut probe = HostProbe::with_root(root.join("proc")).with_node_root(&root);
    let mut first = sample_of(&[5401]);
    probe.fill_at(&mut first, 1.0);
    // The first tick asks; the job comes with a later tick.
    assert!(first.gpus[0].processes[0].job.is_none());
    probe.settle_jobs(Duration::from_secs(10));
    let mut later = sample_of(&[5401]);
    probe.fill_at(&mut later, 1.25);
    assert_eq!(label(&later.gpus[0].processes[0]), "docker web-3");
}

#[test]
fn inside_a_pod_its_own_processes_are_the_pod_s_and_others_are_said_to_be_outside() {
    let root = node("in_pod");
    let mut probe = HostProbe::with_root(root.join("proc")).with_node_root(&root);
    let mut s = sample_of(&[7]);
    s.gpus[0].processes.push(GpuProcess {
        pid: 5555,
        ..Default::default()
    });
    probe.fill_at(&mut s, 1.0);
    probe.settle_jobs(Duration::from_secs(10));
    let mut s2 = sample_of(&[7]);
    s2.gpus[0].processes.push(GpuProcess {
        pid: 5555,
        ..Default::default()
    });
    probe.fill_at(&mut s2, 1.25);
    let procs = &s2.gpus[0].processes;
    let own = procs[0].job.as_ref().expect("the pod's own process");
    assert_eq!(own.label(), "pod train-7f9c/ml-team");
    assert_eq!(own.container.as_deref(), Some("trainer"));
    assert!(!procs[1].resolved);
    assert!(procs[1].job.is_none(), "nothing here says whose it is");
    assert_eq!(procs[1].job_note.as_deref(), Some(OUTSIDE_NOTE));
}

#[test]
fn the_kubelet_s_socket_names_the_pod_holding_a_gpu_whose_process_is_not_visible() {
    let dir = tempfile::tempdir().expect("tempdir");
    let node_root = dir.path();
    let fixture = node("in_pod");
    for rel in ["etc", "var/run"] {
        let link = node_root.join(rel);
        std::fs::create_dir_all(link.parent().expect("parent")).expect("dir");
        std::os::unix::fs::symlink(fixture.join(rel), &link).expect("symlink");
    }
    let socket_dir = node_root.join("var/lib/kubelet/pod-resources");
    std::fs::create_dir_all(&socket_dir).expect("dir");
    let listener =
        std::os::unix::net::UnixListener::bind(socket_dir.join("kubelet.sock")).expect("bind");
    let answer = encode::response(&[
        encode::pod(
            "infer-2",
            "serving",
            &[("server", "nvidia.com/gpu", &["GPU-1"])],
        ),
        encode::pod(
            "nb-1",
            "lab",
            &[("nb", "nvidia.com/gpu.shared", &["GPU-2::0"])],
        ),
        encode::pod(
            "nb-2",
            "lab",
            &[("nb", "nvidia.com/gpu.shared", &["GPU-2::1"])],
        ),
    ]);
    let server = std::thread::spawn(move || serve_pod_resources_once(listener, answer, 64));
    let devices: Vec<DeviceInfo> = (0..3)
        .map(|i| DeviceInfo {
            index: i,
            uuid: Some(format!("GPU-{i}")),
            ..Default::default()
        })
        .collect();
    let mut probe = HostProbe::with_root(fixture.join("proc"))
        .with_node_root(node_root)
        .with_devices(&devices);
    let unseen = |gpu: u32| GpuReading {
        index: gpu,
        processes: vec![GpuProcess {
            pid: 9000 + gpu,
            ..Default::default()
        }],
        ..Default::default()
    };
    let sample = || Sample {
        gpus: (0..3).map(unseen).collect(),
        ..Default::default()
    };
    let mut s = sample();
    probe.fill_at(&mut s, 1.0);
    probe.settle_jobs(Duration::from_secs(10));
    let mut s = sample();
    probe.fill_at(&mut s, 1.25);
    server.join().expect("the fake kubelet");
    let p = |gpu: usize| &s.gpus[gpu].processes[0];
    // GPU 0: no pod holds it; GPU 1: one pod; GPU 2: shared by two.
    assert_eq!(p(0).job_note.as_deref(), Some(OUTSIDE_NOTE));
    let held = p(1).job.as_ref().expect("the holder");
    assert_eq!(held.label(), "pod infer-2/serving");
    assert_eq!(held.container.as_deref(), Some("server"));
    assert!(p(2).job.is_none());
    let note = p(2).job_note.as_deref().expect("a note");
    assert!(note.contains("nb-1/lab, nb-2/lab"), "{note}");
}
