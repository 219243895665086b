//! The waste ledger's cost per GPU per tick: 8 GPUs (starving, healthy, host-bound and
//! checkpoint-like jobs, the detector's verdicts and findings), two processes each, power every
//! tick and the energy counter every 5 s, one hour of data time at 250 ms. Measured twice: as
//! `analyze` runs it (nothing else holds the ledger), and as the live front ends do (the previous
//! snapshot still holds it, so each tick copies it first).
//!
//! `cargo bench --bench ledger`

#[path = "support/mixed_jobs.rs"]
mod mixed_jobs;

use std::sync::Arc;
use std::time::{Duration, Instant};

use gpulse::detector::{Detector, DetectorConfig};
use gpulse::history::{GpuHistory, TickMetrics};
use gpulse::ledger::{GpuLedger, LedgerBook, TickInput};
use gpulse::model::{DeviceInfo, GpuProcess, Metrics, Sample, SystemInfo};

const GPUS: usize = 8;
const SECS: f64 = 3600.0;

fn main() {
    let t0 = 1_800_000_000.0;
    let jobs = mixed_jobs::mixed_jobs(GPUS, SECS, t0);
    let processes: Vec<GpuProcess> = (0..2)
        .map(|k| GpuProcess {
            pid: 1000 + k,
            user: Some(format!("user{k}")),
            command: Some("python train.py".into()),
            gpu_memory_bytes: Some((20 + k as u64) << 30),
            sm_util: Some(30.0 + 10.0 * k as f64),
            ..Default::default()
        })
        .collect();
    for held in [false, true] {
        let (per, cpu) = run(&jobs, &processes, held);
        let how = if held {
            "snapshot held (live)"
        } else {
            "no snapshot (analyze)"
        };
        println!(
            "ledger, {how}: mean {:.2} µs wall, {:.2} µs CPU per GPU per tick ({GPUS} GPUs, {SECS} s at 250 ms)",
            per * 1e6,
            cpu * 1e6
        );
    }
}

/// Mean wall and CPU seconds of one ledger tick per GPU; `held`: a reader keeps the previous view.
fn run(jobs: &[Vec<Sample>], processes: &[GpuProcess], held: bool) -> (f64, f64) {
    let system = SystemInfo {
        hostname: "bench".into(),
        backend: "synthetic".into(),
        devices: (0..GPUS as u32)
            .map(|index| DeviceInfo {
                index,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let config = DetectorConfig::default();
    let mut det = Detector::new(config.clone(), &system);
    let mut hist: Vec<GpuHistory> = (0..GPUS).map(|_| GpuHistory::new(600.0, 0.25)).collect();
    let mut books: Vec<LedgerBook> = (0..GPUS)
        .map(|_| LedgerBook::new(config.window_s + config.rules_window_s))
        .collect();
    let mut views: Vec<Arc<GpuLedger>> = (0..GPUS).map(|_| Arc::default()).collect();
    let mut readers: Vec<Arc<GpuLedger>> = Vec::new();
    let (mut total, mut cpu) = (Duration::ZERO, 0.0);
    let ticks = jobs[0].len();
    for k in 0..ticks {
        for (h, job) in hist.iter_mut().zip(jobs) {
            let r = &job[k].gpus[0];
            h.ticks.push(TickMetrics {
                t: job[k].t,
                ok: true,
                metrics: r.metrics,
            });
            r.util_windows.iter().for_each(|w| h.util.push(*w));
        }
        let t = jobs[0][k].t;
        let refs: Vec<&GpuHistory> = hist.iter().collect();
        det.update(t, &refs);
        let metrics: Vec<Metrics> = jobs
            .iter()
            .map(|job| Metrics {
                power_w: Some(150.0 + 4.0 * job[k].gpus[0].metrics.util_gpu.unwrap_or(0.0)),
                energy_j: Some(1e6 + 500.0 * ((t - 1_800_000_000.0) / 5.0).floor() * 5.0),
                mem_used_bytes: Some(41 << 30),
                ..job[k].gpus[0].metrics
            })
            .collect();
        readers = if held { views.clone() } else { Vec::new() };
        let start = Instant::now();
        let c0 = gpulse::clock::thread_cpu_s().unwrap_or(0.0);
        for (pos, (book, view)) in books.iter_mut().zip(views.iter_mut()).enumerate() {
            book.tick(
                view,
                &TickInput {
                    t,
                    gpu: pos as u32,
                    answering: true,
                    metrics: &metrics[pos],
                    processes,
                    verdict: det.verdict(pos),
                    full_level: det.full_level(pos),
                    findings: det.active(),
                    xids: &[],
                    sm_clock_max_mhz: Some(1980),
                },
            );
        }
        cpu += gpulse::clock::thread_cpu_s().unwrap_or(0.0) - c0;
        total += start.elapsed();
    }
    drop(readers);
    let lost: f64 = views.iter().map(|v| v.lost_gpu_seconds).sum();
    assert!(lost > 0.0, "the starving jobs lose time");
    let n = (ticks * GPUS) as f64;
    (total.as_secs_f64() / n, cpu / n)
}
