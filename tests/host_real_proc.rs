//! The host probe and signals on this machine's real `/proc`, against processes the test owns.

mod support;

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::api::{
    signal_target, GpuProcess, GpuReading, HostProbe, ProcessIdentity, Sample, Signal, SignalError,
    Signaller, TREE_INTERVAL_S,
};

/// A process group the test started; killed and reaped on drop, whatever the test did.
struct Group(Child);

impl Drop for Group {
    fn drop(&mut self) {
        // SAFETY: kill on our own child's process group (its id is the child's pid).
        unsafe {
            libc::kill(-(self.0.id() as libc::pid_t), libc::SIGKILL);
        }
        let _ = self.0.wait();
    }
}

/// A shell with two CPU burners in the background and `cat` blocked reading a pipe.
fn spawn_tree() -> Group {
    let child = Command::new("sh")
        .arg("-c")
        .arg("sh -c 'while :; do :; done' & sh -c 'while :; do :; done' & cat; wait")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("spawn sh");
    Group(child)
}

fn sample_for(pid: u32) -> Sample {
    Sample {
        gpus: vec![GpuReading {
            index: 0,
            processes: vec![GpuProcess {
                pid,
                resolved: true,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn now(start: Instant) -> f64 {
    start.elapsed().as_secs_f64()
}

#[test]
fn probe_sees_the_parent_its_burning_children_and_the_sleeper() {
    let tree = spawn_tree();
    let pid = tree.0.id();
    let start = Instant::now();
    let mut probe = HostProbe::new();
    // Wait until the shell has started all three children.
    let mut s = sample_for(pid);
    while now(start) < 5.0 {
        s = sample_for(pid);
        probe.fill_at(&mut s, now(start) + 10.0);
        if s.gpus[0].processes[0].children.len() >= 3 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // A tree interval later the GPU process's tree is read again (through the kernel's children
    // lists where it gives them, else a full scan): rates over that second.
    std::thread::sleep(Duration::from_secs_f64(TREE_INTERVAL_S + 0.1));
    let mut s2 = sample_for(pid);
    probe.fill_at(&mut s2, now(start) + 10.0);
    for s in [&s, &s2] {
        assert!(s.host.cpu_count.is_some_and(|c| c >= 1));
    }
    let p = &s2.gpus[0].processes[0];
    assert!(p.resolved);
    assert!(
        p.command.as_deref().is_some_and(|c| c.starts_with("sh -c")),
        "{p:?}"
    );
    assert!(p.user.is_some());
    assert!(
        p.running_s.is_some_and(|r| (0.0..60.0).contains(&r)),
        "{p:?}"
    );
    let burners: Vec<_> = p
        .children
        .iter()
        .filter(|c| c.command.as_deref() == Some("sh -c while :; do :; done"))
        .collect();
    assert_eq!(burners.len(), 2, "{:?}", p.children);
    // A busy loop gets a fair share of the cores among everything runnable (a shared CI machine
    // may be loaded): ask for at least half of that share, and for far more than the sleeper.
    let cores = f64::from(s2.host.cpu_count.expect("cores"));
    let running_now = std::fs::read_to_string("/proc/stat")
        .expect("/proc/stat")
        .lines()
        .find_map(|l| l.strip_prefix("procs_running "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .expect("procs_running");
    let runnable = s2.host.load1.expect("load").max(running_now).max(cores);
    let fair = 100.0 * cores / runnable;
    for b in &burners {
        let cpu = b.cpu_percent.expect("rate");
        assert!(
            cpu > (fair / 2.0).min(90.0),
            "burner at {cpu}%, fair share {fair}%: {burners:?}"
        );
    }
    let cat = p
        .children
        .iter()
        .find(|c| c.command.as_deref() == Some("cat"))
        .expect("cat is a child");
    assert_eq!(cat.state, Some('S'), "blocked on the pipe");
    assert!(cat.cpu_percent.is_some_and(|c| c < 5.0), "{cat:?}");
    assert!(cat.rss_bytes.is_some_and(|r| r > 0));
}

#[test]
fn term_reaches_a_child_the_test_owns() {
    let mut child = Group(
        Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .expect("spawn sleep"),
    );
    let pid = child.0.id();
    let target = identity(pid);
    let signaller = Signaller::new("nvml", false);
    assert_eq!(signaller.can_signal(target), Ok(()));
    signaller
        .send(target, Signal::Term)
        .expect("TERM delivered");
    let status = child.0.wait().expect("reaped");
    assert_eq!(status.signal(), Some(libc::SIGTERM));
    // Reaped: the PID is gone (until reused, which a fresh PID is not within this test).
    assert_eq!(
        signaller.can_signal(target),
        Err(SignalError::NoSuchProcess { pid })
    );
    assert_eq!(
        signaller.send(target, Signal::Kill),
        Err(SignalError::NoSuchProcess { pid })
    );
}

/// The process at `pid` now, as the process table would have chosen it.
fn identity(pid: u32) -> ProcessIdentity {
    ProcessIdentity::current(Path::new("/proc"), pid).expect("the child's stat")
}

#[test]
fn a_process_that_took_the_chosen_pid_is_never_signalled() {
    // The process the user chose ran at this PID and ended; `sleep` now holds the PID. Which one
    // holds a PID is told by its start time: the chosen one started earlier.
    let mut child = Group(
        Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .expect("spawn sleep"),
    );
    let pid = child.0.id();
    let holder = identity(pid);
    let chosen = ProcessIdentity {
        pid,
        start_ticks: holder.start_ticks.map(|t| t - 1),
    };
    let signaller = Signaller::new("nvml", false);
    assert_eq!(
        signaller.can_signal(chosen),
        Err(SignalError::Replaced { pid })
    );
    for signal in [Signal::Term, Signal::Kill] {
        let err = signaller.send(chosen, signal).expect_err("refused");
        assert_eq!(err, SignalError::Replaced { pid });
        assert!(err.to_string().contains("nothing was sent"), "{err}");
    }
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(child.0.try_wait().expect("poll"), None, "still running");
    // A process whose start time is not known is not signalled either.
    let unknown = ProcessIdentity {
        pid,
        start_ticks: None,
    };
    assert_eq!(
        signaller.send(unknown, Signal::Kill),
        Err(SignalError::Unconfirmed { pid })
    );
    assert_eq!(child.0.try_wait().expect("poll"), None, "still running");
    // The holder itself, chosen by its own identity, is signalled.
    signaller
        .send(holder, Signal::Kill)
        .expect("KILL delivered");
    let status = child.0.wait().expect("reaped");
    assert_eq!(status.signal(), Some(libc::SIGKILL));
}

#[test]
fn the_probe_gives_each_process_the_start_time_its_signal_is_checked_against() {
    let tree = spawn_tree();
    let pid = tree.0.id();
    let mut probe = HostProbe::new();
    let mut s = sample_for(pid);
    probe.fill_at(&mut s, 10.0);
    let p = &s.gpus[0].processes[0];
    assert_eq!(signal_target(p), Ok(identity(pid)));
    for c in &p.children {
        assert_eq!(
            c.start_ticks,
            identity(c.pid).start_ticks,
            "child {}",
            c.pid
        );
    }
}

#[test]
fn kill_stops_a_process_that_ignores_term() {
    let mut child = Group(
        Command::new("sh")
            .arg("-c")
            .arg("trap '' TERM; echo ready; while :; do sleep 1; done")
            .stdout(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("spawn sh"),
    );
    let pid = child.0.id();
    let mut out = child.0.stdout.take().expect("stdout");
    let mut buf = [0u8; 6];
    std::io::Read::read_exact(&mut out, &mut buf).expect("ready");
    let signaller = Signaller::new("nvml", false);
    let target = identity(pid);
    signaller.send(target, Signal::Term).expect("TERM sent");
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(child.0.try_wait().expect("poll"), None, "TERM is ignored");
    signaller.send(target, Signal::Kill).expect("KILL sent");
    let status = child.0.wait().expect("reaped");
    assert_eq!(status.signal(), Some(libc::SIGKILL));
}

#[test]
fn unresolved_and_simulated_processes_are_not_signalled() {
    let hidden = GpuProcess {
        pid: 4_000_000,
        resolved: false,
        ..Default::default()
    };
    assert_eq!(
        signal_target(&hidden),
        Err(SignalError::NotVisible { pid: 4_000_000 })
    );
    let mut child = Group(
        Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .expect("spawn sleep"),
    );
    let pid = child.0.id();
    let err = Signaller::new("sim", false)
        .send(identity(pid), Signal::Kill)
        .expect_err("refused");
    assert!(err.to_string().contains("sim backend"), "{err}");
    // Still alive after the refusal.
    assert_eq!(child.0.try_wait().expect("poll"), None);
}
