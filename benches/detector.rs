//! Detector cost per GPU per tick: 8 GPUs (starving, healthy, host-bound, checkpoint-like jobs),
//! 250 ms ticks with every 200 ms driver window, one hour of data time.
//!
//! `cargo bench --bench detector`

#[path = "support/mixed_jobs.rs"]
mod mixed_jobs;

use std::time::{Duration, Instant};

use gpulse::detector::{Detector, DetectorConfig};
use gpulse::history::{GpuHistory, TickMetrics};
use gpulse::model::{DeviceInfo, SystemInfo};

fn main() {
    const GPUS: usize = 8;
    const SECS: f64 = 3600.0;
    let t0 = 1_800_000_000.0;
    let jobs = mixed_jobs::mixed_jobs(GPUS, SECS, t0);
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
    let mut det = Detector::new(DetectorConfig::default(), &system);
    let mut hist: Vec<GpuHistory> = (0..GPUS).map(|_| GpuHistory::new(600.0, 0.25)).collect();
    let ticks = jobs[0].len();
    let mut total = Duration::ZERO;
    let mut worst = Duration::ZERO;
    let mut events = 0usize;
    let mut cpu = 0.0;
    for k in 0..ticks {
        for (h, job) in hist.iter_mut().zip(&jobs) {
            let s = &job[k];
            let r = &s.gpus[0];
            h.ticks.push(TickMetrics {
                t: s.t,
                ok: true,
                metrics: r.metrics,
            });
            for w in &r.util_windows {
                h.util.push(*w);
            }
        }
        let refs: Vec<&GpuHistory> = hist.iter().collect();
        let t = jobs[0][k].t;
        let start = Instant::now();
        let c0 = thread_cpu_s();
        events += det.update(t, &refs).len();
        cpu += thread_cpu_s() - c0;
        let d = start.elapsed();
        total += d;
        worst = worst.max(d);
    }
    let per = total.as_secs_f64() / (ticks * GPUS) as f64;
    println!("detector: {GPUS} GPUs, {ticks} ticks ({SECS} s of data at 250 ms), {events} events");
    println!(
        "detector: mean {:.2} µs wall, {:.2} µs CPU per GPU per tick (target <= 50 µs); worst tick {:.0} µs wall for all {GPUS} GPUs",
        per * 1e6,
        cpu / (ticks * GPUS) as f64 * 1e6,
        worst.as_secs_f64() * 1e6
    );
}

/// CPU time of this thread, seconds (wall time on a shared machine includes other processes).
fn thread_cpu_s() -> f64 {
    gpulse::clock::thread_cpu_s().unwrap_or(0.0)
}
