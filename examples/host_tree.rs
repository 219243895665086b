//! Print what the host probe sees of one process, as a GPU process: its children with CPU and
//! state, and the loader evidence for them. For checking a real training job by hand:
//!
//! `cargo run --example host_tree -- PID [SECONDS]`  (PID e.g. from `nvidia-smi --query-compute-apps=pid --format=csv`)

use std::time::Duration;

use gpulse::host::{loader_evidence, HostProbe};
use gpulse::model::{GpuProcess, GpuReading, Sample};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let pid: u32 = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: host_tree PID [SECONDS]"))?
        .parse()
        .map_err(|e| anyhow::anyhow!("PID must be a number: {e}"))?;
    let seconds: f64 = args.next().map_or(Ok(1.0), |s| s.parse())?;
    let sample = || Sample {
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
    };
    let mut probe = HostProbe::new();
    let mut s = sample();
    probe.fill(&mut s);
    std::thread::sleep(Duration::from_secs_f64(seconds.max(0.1)));
    // Past the tree interval: a full scan with rates over `seconds`.
    let mut s = sample();
    probe.fill(&mut s);
    if seconds < gpulse::host::TREE_INTERVAL_S {
        eprintln!(
            "note: under {}s, children started meanwhile are not listed",
            gpulse::host::TREE_INTERVAL_S
        );
    }
    println!("{}", serde_json::to_string_pretty(&s)?);
    let p = &s.gpus[0].processes[0];
    match loader_evidence(p, &s.host) {
        Some(ev) => println!("evidence: {}\nadvice: {}", ev.note, ev.advice),
        None => println!("evidence: none (workers neither saturated, waiting on I/O, nor too few)"),
    }
    Ok(())
}
