//! The host probe on fake procfs trees (`tests/fixtures/proc/...`): process tree, CPU rates,
//! identity, container PID resolution, per-core CPU, and the loader evidence drawn from them.

mod support;

use std::path::{Path, PathBuf};
use support::api::{
    loader_evidence, unresolved_label, GpuProcess, GpuReading, HostProbe, LoaderVerdict, Sample,
};

fn fixture(name: &str) -> PathBuf {
    support::fixture("proc").join(name)
}

fn clock_hz() -> f64 {
    // SAFETY: sysconf only reads a system constant.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) as f64 }
}

/// A procfs root that is a symlink, so a test can move it from one fixture tick to the next.
struct MovingRoot {
    _dir: tempfile::TempDir,
    link: PathBuf,
}

impl MovingRoot {
    fn new(target: &Path) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let link = dir.path().join("proc");
        std::os::unix::fs::symlink(target, &link).expect("symlink");
        MovingRoot { _dir: dir, link }
    }
    fn point_at(&self, target: &Path) {
        std::fs::remove_file(&self.link).expect("unlink");
        std::os::unix::fs::symlink(target, &self.link).expect("symlink");
    }
}

fn sample_with(procs: &[(u32, u32)]) -> Sample {
    let mut gpus: Vec<GpuReading> = Vec::new();
    for &(gpu, pid) in procs {
        if !gpus.iter().any(|g| g.index == gpu) {
            gpus.push(GpuReading {
                index: gpu,
                ..Default::default()
            });
        }
        let g = gpus.iter_mut().find(|g| g.index == gpu).expect("gpu");
        g.processes.push(GpuProcess {
            pid,
            gpu_memory_bytes: Some(40 << 30),
            resolved: true,
            ..Default::default()
        });
    }
    Sample {
        gpus,
        ..Default::default()
    }
}

/// Two readings of a loader fixture, one second apart.
fn two_ticks(variant: &str) -> Sample {
    let root = MovingRoot::new(&fixture(variant).join("t0"));
    let mut probe = HostProbe::with_root(&root.link).with_passwd(fixture("passwd"));
    let mut s = sample_with(&[(0, 4200)]);
    probe.fill_at(&mut s, 100.0);
    root.point_at(&fixture(variant).join("t1"));
    let mut s = sample_with(&[(0, 4200)]);
    probe.fill_at(&mut s, 101.0);
    s
}

#[test]
fn training_process_with_its_workers_and_their_cpu() {
    let s = two_ticks("loader_saturated");
    let p = &s.gpus[0].processes[0];
    assert!(p.resolved);
    assert_eq!(p.user.as_deref(), Some("alice"));
    assert_eq!(p.command.as_deref(), Some("python train.py --epochs 90"));
    // 45 ticks of CPU in one second.
    let hz = clock_hz();
    let main = p.cpu_percent.expect("rate after two readings");
    assert!((main - 45.0 * 100.0 / hz).abs() < 1e-6, "{main}");
    // 1572864 pages resident.
    assert!(p.rss_bytes.expect("rss") >= 1_572_864 * 4096);
    // Started 900000 ticks after boot, uptime 10001 s.
    let running = p.running_s.expect("running time");
    assert!(
        (running - (10_001.0 - 900_000.0 / hz)).abs() < 1e-6,
        "{running}"
    );
    // Four workers and the shell under the first: the whole subtree, not the unrelated processes.
    let mut pids: Vec<u32> = p.children.iter().map(|c| c.pid).collect();
    pids.sort_unstable();
    assert_eq!(pids, vec![4201, 4202, 4203, 4204, 4205]);
    let w = p.children.iter().find(|c| c.pid == 4202).expect("worker");
    assert_eq!(w.ppid, Some(4200));
    assert_eq!(w.state, Some('R'));
    assert!((w.cpu_percent.expect("rate") - 98.0 * 100.0 / hz).abs() < 1e-6);
    let sh = p
        .children
        .iter()
        .find(|c| c.pid == 4205)
        .expect("grandchild");
    assert_eq!(sh.ppid, Some(4201));
    assert_eq!(
        sh.command.as_deref(),
        Some("sh -c ffmpeg -i clip.mp4 -f rawvideo -")
    );
}

#[test]
fn host_panel_figures_and_per_core_strip() {
    let s = two_ticks("loader_saturated");
    assert_eq!(s.host.cpu_count, Some(8));
    let cores = &s.host_detail.per_core_percent;
    assert_eq!(cores.len(), 8);
    // Cores 0-3: 98 busy of 100 jiffies; cores 4-7: 10 of 100.
    for c in &cores[..4] {
        assert!((c - 98.0).abs() < 1e-9, "{cores:?}");
    }
    for c in &cores[4..] {
        assert!((c - 10.0).abs() < 1e-9, "{cores:?}");
    }
    assert!((s.host.cpu_percent.expect("total") - 54.0).abs() < 1e-9);
    assert_eq!(s.host.load1, Some(7.9));
    assert_eq!(s.host_detail.load15, Some(6.0));
    assert_eq!(s.host_detail.swap_used_bytes, Some(0));
}

#[test]
fn saturated_workers_are_cpu_bound_evidence() {
    let s = two_ticks("loader_saturated");
    let ev = loader_evidence(&s.gpus[0].processes[0], &s.host).expect("evidence");
    assert_eq!(ev.verdict, LoaderVerdict::CpuSaturated);
    assert_eq!(
        ev.workers, 4,
        "direct children only, the shell is no worker"
    );
    assert_eq!(ev.cores, Some(8));
    assert!(ev.note.contains("4 DataLoader workers"), "{}", ev.note);
    assert!(ev.advice.contains("raise num_workers"), "{}", ev.advice);
}

#[test]
fn workers_in_disk_wait_point_at_storage() {
    let s = two_ticks("loader_io");
    assert!((s.host.iowait_percent.expect("iowait") - 40.0).abs() < 1e-9);
    let p = &s.gpus[0].processes[0];
    let states: Vec<Option<char>> = p
        .children
        .iter()
        .filter(|c| c.ppid == Some(4200))
        .map(|c| c.state)
        .collect();
    assert_eq!(states.iter().filter(|s| **s == Some('D')).count(), 3);
    let ev = loader_evidence(p, &s.host).expect("evidence");
    assert_eq!(ev.verdict, LoaderVerdict::WaitingOnIo);
    assert_eq!(ev.workers_in_disk_wait, 3);
    assert!(ev.note.contains("storage is the bottleneck"), "{}", ev.note);
}

#[test]
fn inside_a_container_host_pids_map_to_device_holders_or_are_labelled() {
    let mut probe = HostProbe::with_root(fixture("container")).with_passwd(fixture("passwd"));
    let mut s = sample_with(&[(0, 4321), (1, 5555)]);
    probe.fill_at(&mut s, 1.0);
    let found = &s
        .gpus
        .iter()
        .find(|g| g.index == 0)
        .expect("gpu0")
        .processes[0];
    assert!(found.resolved);
    assert_eq!(found.pid, 4321, "the reported PID stays");
    assert_eq!(found.local_pid, Some(7), "the process holding /dev/nvidia0");
    assert_eq!(
        found.command.as_deref(),
        Some("python train.py --data /data")
    );
    assert_eq!(found.user.as_deref(), Some("root"));
    assert_eq!(
        found.children.iter().map(|c| c.pid).collect::<Vec<_>>(),
        vec![8]
    );
    let lost = &s
        .gpus
        .iter()
        .find(|g| g.index == 1)
        .expect("gpu1")
        .processes[0];
    assert!(!lost.resolved, "nobody here holds /dev/nvidia1");
    assert_eq!(lost.user, None);
    assert_eq!(lost.command, None);
    assert_eq!(unresolved_label(lost.pid), "pid 5555 (not visible here)");
}

#[test]
fn seen_from_the_host_a_container_job_shows_its_pid_inside() {
    let mut probe = HostProbe::with_root(fixture("host_view")).with_passwd(fixture("passwd"));
    let mut s = sample_with(&[(0, 4321)]);
    probe.fill_at(&mut s, 1.0);
    let p = &s.gpus[0].processes[0];
    assert!(p.resolved);
    assert_eq!(p.local_pid, None, "visible under the reported PID");
    assert_eq!(p.namespace_pid, Some(7), "the last NSpid field");
    assert_eq!(p.user.as_deref(), Some("alice"));
    assert_eq!(p.children.len(), 1);
}

#[test]
fn processes_serialize_with_their_children_and_host_detail() {
    let s = two_ticks("loader_saturated");
    let v = serde_json::to_value(&s).expect("json");
    let p = &v["gpus"][0]["processes"][0];
    assert_eq!(p["pid"], 4200);
    assert_eq!(p["user"], "alice");
    assert!(p["cpu_percent"].as_f64().is_some());
    assert_eq!(p["children"].as_array().expect("children").len(), 5);
    assert!(p.get("local_pid").is_none(), "absent, not null");
    assert_eq!(
        v["host_detail"]["per_core_percent"]
            .as_array()
            .expect("cores")
            .len(),
        8
    );
    // A start time names a process of this machine only: it is not written out.
    assert!(p.get("start_ticks").is_none());
    let back: Sample = serde_json::from_value(v).expect("reads back");
    let mut local = s.clone();
    for p in &mut local.gpus[0].processes {
        assert!(p.start_ticks.is_some());
        p.start_ticks = None;
        p.children.iter_mut().for_each(|c| c.start_ticks = None);
    }
    assert_eq!(back, local);
}
