//! Cost of the host probe per tick with 500+ processes on the real `/proc`: the tick that reads the
//! GPU process's tree (once a second: through the kernel's children lists where it gives them, else
//! a full scan), the ticks in between (nothing re-read), and a full scan (every `FULL_SCAN_S`).
//!
//! Run: `cargo bench --bench host_probe`

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use gpulse::host::{HostProbe, FULL_SCAN_S};
use gpulse::model::{GpuProcess, GpuReading, Sample};

/// CPU time this thread has used (wall time on a shared, loaded machine mostly measures waiting).
fn thread_cpu() -> Duration {
    Duration::from_secs_f64(gpulse::clock::thread_cpu_s().unwrap_or(0.0))
}

/// Wall and CPU time of one call.
fn timed(f: impl FnOnce()) -> (Duration, Duration) {
    let (w, c) = (Instant::now(), thread_cpu());
    f();
    (w.elapsed(), thread_cpu() - c)
}

struct Children(Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for c in &mut self.0 {
            // SAFETY: kill our own child's process group.
            unsafe {
                libc::kill(-(c.id() as libc::pid_t), libc::SIGKILL);
            }
            let _ = c.wait();
        }
    }
}

fn spawn(script: &str) -> Child {
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("spawn sh")
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

fn main() {
    let mut kids = Children(Vec::new());
    // A "training process" with 8 sleeping workers.
    kids.0
        .push(spawn("for i in 1 2 3 4 5 6 7 8; do sleep 300 & done; wait"));
    // Background processes to reach 500+.
    for _ in 0..10 {
        kids.0.push(spawn(
            "i=0; while [ $i -lt 50 ]; do sleep 300 & i=$((i+1)); done; wait",
        ));
    }
    std::thread::sleep(Duration::from_millis(1500));
    let trainer = kids.0[0].id();
    let total = std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .count();

    let mut probe = HostProbe::new();
    let mut now = 0.0;
    let mut s = sample_for(trainer);
    probe.fill_at(&mut s, now);
    let workers = s.gpus[0].processes[0].children.len();

    // Each round is one second: the tick that reads the tree, then one 250 ms later. The full
    // scan falls due on a tree tick every FULL_SCAN_S and is timed on its own below, so the tick
    // figures are medians (the rounds that scanned are left out by it).
    let rounds = 200;
    let mut full = Vec::with_capacity(rounds);
    let mut between = Vec::with_capacity(rounds);
    let mut host = Vec::with_capacity(rounds);
    let mut host_only = HostProbe::for_backend("sim");
    for _ in 0..rounds {
        now += 1.0;
        let mut s = sample_for(trainer);
        full.push(timed(|| probe.fill_at(&mut s, now)));
        let mut s = sample_for(trainer);
        between.push(timed(|| probe.fill_at(&mut s, now + 0.25)));
        let mut s = sample_for(trainer);
        host.push(timed(|| host_only.fill_at(&mut s, now)));
    }
    let median = |v: &mut Vec<(Duration, Duration)>| {
        let mid = |mut x: Vec<Duration>| {
            x.sort_unstable();
            x[x.len() / 2]
        };
        (
            mid(v.iter().map(|d| d.0).collect()),
            mid(v.iter().map(|d| d.1).collect()),
        )
    };
    let (full, between, host) = (median(&mut full), median(&mut between), median(&mut host));
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let per_scan = |d: Duration| d.as_secs_f64() * 1e6 / rounds as f64;
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("processes in /proc: {total}; the GPU process has {workers} children");
    println!("load average: {}", load.trim());
    println!("                                          wall us/tick   CPU us/tick");
    let tree_name = match probe.follows_children_lists() {
        Some(true) => "tick reading the tree (1/s, children lists)",
        _ => "tick reading the tree (1/s, full scan)",
    };
    let mut rates = gpulse::host::proc_table::CpuRates::new(100.0);
    let scan = timed(|| {
        for _ in 0..rounds {
            let _ = gpulse::host::proc_table::ProcTable::scan(
                std::path::Path::new("/proc"),
                &mut rates,
                0.0,
            );
        }
    });
    for (name, d) in [
        ("host figures only (1/s, no GPU processes)", host),
        (tree_name, full),
        ("tick between tree readings", between),
    ] {
        println!("{name:45} {:12.1} {:13.1}", us(d.0), us(d.1));
    }
    let scan = (per_scan(scan.0), per_scan(scan.1));
    println!(
        "{:45} {:12.1} {:13.1}",
        format!("full scan of /proc (every {FULL_SCAN_S} s)"),
        scan.0,
        scan.1
    );
    println!(
        "mean per 250 ms tick (1 tree reading + 3 between per second, 1 full scan per {FULL_SCAN_S} s): wall {:.1} us, CPU {:.1} us",
        (us(full.0) + 3.0 * us(between.0)) / 4.0 + scan.0 / (4.0 * FULL_SCAN_S),
        (us(full.1) + 3.0 * us(between.1)) / 4.0 + scan.1 / (4.0 * FULL_SCAN_S)
    );
}
