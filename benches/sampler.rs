//! Sampler cost per tick per GPU: the simulated backend always, NVML when a GPU answers.
//!
//! `cargo bench --bench sampler` prints one line per backend: mean, p50, p99 and max of one
//! `DeviceSampler::sample` call. On NVML the ticks are 250 ms apart in real time (the driver's
//! sample buffer and GPM need real time between reads), so that part takes ~15 s
//! (`GPULSE_BENCH_TICKS` ticks, 60 by default), and each kind of driver call's cost is listed.

use std::time::{Duration, Instant};

use gpulse::backend::nvml::NvmlBackend;
use gpulse::backend::sim::{Scenario, SimBackend, SimConfig};
use gpulse::backend::{Backend, DeviceSampler};
use gpulse::engine::{Engine, EngineConfig};
use gpulse::model::Sample;

fn summary(name: &str, mut us: Vec<f64>) {
    us.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| us[((us.len() - 1) as f64 * p).round() as usize];
    let mean = us.iter().sum::<f64>() / us.len() as f64;
    println!(
        "{name:<28} per tick per GPU: mean {mean:>8.1} µs  p50 {:>8.1} µs  p99 {:>8.1} µs  max {:>8.1} µs  ({} calls)",
        pct(0.5),
        pct(0.99),
        us[us.len() - 1],
        us.len()
    );
}

fn time_ticks(
    devices: &mut [Box<dyn DeviceSampler>],
    ticks: u32,
    t0: f64,
    step: f64,
    real_time: bool,
) -> Vec<f64> {
    let mut us = Vec::new();
    let start = Instant::now();
    for k in 0..ticks {
        if real_time {
            let due = start + Duration::from_secs_f64(step * f64::from(k));
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
        }
        let now = if real_time {
            gpulse::clock::now()
        } else {
            t0 + step * f64::from(k)
        };
        for d in devices.iter_mut() {
            let s = Instant::now();
            let r = d.sample(now);
            us.push(s.elapsed().as_secs_f64() * 1e6);
            if let Err(e) = r {
                eprintln!("GPU {}: {e}", d.index());
            }
        }
    }
    us
}

/// The engine's work per tick as the dashboard asks it: ingest the sample (history, detector)
/// and publish a snapshot, while the previous snapshot is still held by a reader. CPU time.
fn engine_ticks(devices: &mut [Box<dyn DeviceSampler>], t0: f64) {
    let system = SimBackend::new(SimConfig {
        scenario: Scenario::Mixed,
        gpus: devices.len() as u32,
        seed: 1,
        start: Some(t0),
        hostname: Some("bench".into()),
    })
    .system()
    .clone();
    let mut engine = Engine::new(system, EngineConfig::default());
    let mut held = engine.snapshot();
    let mut us = Vec::new();
    // 10 minutes to fill the history, then 10 minutes measured.
    for k in 0..4800u32 {
        let t = t0 + 0.25 * f64::from(k);
        let gpus = devices
            .iter_mut()
            .filter_map(|d| d.sample(t).ok())
            .collect();
        let sample = Sample {
            t,
            gpus,
            ..Sample::default()
        };
        let c = gpulse::clock::thread_cpu_s().unwrap_or(f64::NAN);
        engine.ingest(sample);
        held = engine.snapshot();
        if k >= 2400 {
            us.push((gpulse::clock::thread_cpu_s().unwrap_or(f64::NAN) - c) * 1e6);
        }
    }
    drop(held);
    let n = devices.len().max(1) as f64;
    summary(
        &format!("engine+snapshot ({} GPUs)", devices.len()),
        us.into_iter().map(|u| u / n).collect(),
    );
}

fn main() {
    let t0 = gpulse::clock::now();
    let mut sim = SimBackend::new(SimConfig {
        scenario: Scenario::Mixed,
        gpus: 8,
        seed: 1,
        start: Some(t0),
        hostname: Some("bench".into()),
    });
    let mut devices = sim.take_devices();
    // Warm-up, then 2,400 ticks (10 minutes of simulated time at 250 ms) on 8 GPUs.
    time_ticks(&mut devices, 40, t0, 0.25, false);
    summary(
        "sim (8 GPUs, mixed)",
        time_ticks(&mut devices, 2400, t0 + 10.0, 0.25, false),
    );
    engine_ticks(&mut devices, t0 + 700.0);

    match NvmlBackend::open() {
        Err(e) => println!("nvml                         not measured: {e}"),
        Ok(mut b) => {
            let n = b.system().devices.len();
            let gpm = b
                .system()
                .devices
                .iter()
                .filter(|d| d.gpm_supported)
                .count();
            let mut devices = b.take_devices();
            // The first tick reads the whole sample buffer and the first GPM sample: shown apart.
            let first = time_ticks(&mut devices, 1, 0.0, 0.25, true);
            summary("nvml first tick", first);
            // Each kind of call's cost over the measured ticks (GPULSE_BENCH_TICKS of them, 60
            // by default: 15 s).
            devices.iter_mut().for_each(|d| d.measure_calls());
            let ticks = std::env::var("GPULSE_BENCH_TICKS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(60);
            let us = time_ticks(&mut devices, ticks, 0.0, 0.25, true);
            summary(&format!("nvml ({n} GPU(s), {gpm} with GPM)"), us);
            let secs = f64::from(ticks) * 0.25;
            let mut costs: Vec<(String, gpulse::backend::CallCost)> =
                devices.iter().flat_map(|d| d.call_costs()).collect();
            costs.sort_by(|a, b| b.1.cpu_s.total_cmp(&a.1.cpu_s));
            println!("nvml calls over {secs:.0} s, all GPUs, by CPU time:");
            for (name, c) in &costs {
                let calls = f64::from(c.calls.max(1));
                println!(
                    "  {name:<14} {:>5} calls ({:>5.2}/s)  mean {:>8.1} µs wall {:>8.1} µs CPU  = {:.3}% of a core",
                    c.calls,
                    f64::from(c.calls) / secs,
                    c.wall_s / calls * 1e6,
                    c.cpu_s / calls * 1e6,
                    c.cpu_s / secs * 100.0
                );
            }
            let total: f64 = costs.iter().map(|c| c.1.cpu_s).sum();
            println!("  all calls: {:.3}% of a core", total / secs * 100.0);
        }
    }
}
