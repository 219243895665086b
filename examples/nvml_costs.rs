//! What each NVML call the sampler makes costs on this machine, in steady state: every call is
//! made once per 250 ms tick for a number of ticks (after a warm-up), and its wall time and the
//! process's CPU time around it are summarised. Run it beside a real job: some calls cost more
//! while processes run.
//!
//! `cargo run --release --example nvml_costs -- [TICKS] [GPU]`  (default 40 ticks, GPU 0)

use std::time::{Duration, Instant};

use gpulse::backend::nvml::GPM_METRICS;
use nvml_wrapper::enum_wrappers::device::{Clock, Sampling, TemperatureSensor};
use nvml_wrapper::gpm::{gpm_metrics_get, GpmSample};
use nvml_wrapper::{Device, Nvml};

/// The process's CPU time (user + system) in microseconds.
fn cpu_us() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e6 + ts.tv_nsec as f64 / 1e3
}

struct Costs {
    name: &'static str,
    wall: Vec<f64>,
    cpu: Vec<f64>,
    errors: usize,
}

impl Costs {
    fn new(name: &'static str) -> Self {
        Costs {
            name,
            wall: Vec::new(),
            cpu: Vec::new(),
            errors: 0,
        }
    }

    fn time<T, E>(&mut self, f: impl FnOnce() -> Result<T, E>) -> Option<T> {
        let (w, c) = (Instant::now(), cpu_us());
        let r = f();
        self.cpu.push(cpu_us() - c);
        self.wall.push(w.elapsed().as_secs_f64() * 1e6);
        match r {
            Ok(v) => Some(v),
            Err(_) => {
                self.errors += 1;
                None
            }
        }
    }

    fn print(&self) {
        let stats = |v: &[f64]| {
            let mut s = v.to_vec();
            s.sort_by(|a, b| a.total_cmp(b));
            let mean = s.iter().sum::<f64>() / s.len().max(1) as f64;
            (mean, s.get(s.len() / 2).copied().unwrap_or(0.0))
        };
        let (wm, wp) = stats(&self.wall);
        let (cm, cp) = stats(&self.cpu);
        println!(
            "{:<28} wall mean {wm:>8.0} µs p50 {wp:>8.0} µs   CPU mean {cm:>8.0} µs p50 {cp:>8.0} µs   {} calls, {} errors",
            self.name,
            self.wall.len(),
            self.errors
        );
    }
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let ticks: usize = args.next().map_or(Ok(40), |s| s.parse())?;
    let gpu: u32 = args.next().map_or(Ok(0), |s| s.parse())?;
    let nvml = Nvml::init()?;
    let device: Device = nvml.device_by_index(gpu)?;
    let mut costs: Vec<Costs> = [
        "memory_info",
        "utilization_rates",
        "running_compute_processes",
        "running_graphics_processes",
        "process_utilization_stats",
        "samples(GpuUtilization)",
        "power_usage",
        "total_energy_consumption",
        "temperature",
        "clock_info(SM)",
        "clock_info(Memory)",
        "performance_state",
        "current_pcie_link_gen",
        "current_pcie_link_width",
        "current_throttle_reasons",
        "gpm_sample",
        "gpm_metrics_get(6)",
    ]
    .into_iter()
    .map(Costs::new)
    .collect();
    let mut proc_seen: Option<u64> = None;
    let mut util_seen: Option<u64> = None;
    let mut gpm_prev: Option<GpmSample> = None;
    let warmup = 4;
    for tick in 0..ticks + warmup {
        let start = Instant::now();
        let mut i = 0;
        let mut next = || {
            i += 1;
            i - 1
        };
        let k = next();
        costs[k].time(|| device.memory_info());
        let k = next();
        costs[k].time(|| device.utilization_rates());
        let k = next();
        let procs = costs[k].time(|| device.running_compute_processes());
        let k = next();
        costs[k].time(|| device.running_graphics_processes());
        let k = next();
        if let Some(s) = costs[k].time(|| device.process_utilization_stats(proc_seen)) {
            proc_seen = s.iter().map(|s| s.timestamp).max().or(proc_seen);
        }
        let k = next();
        if let Some(s) = costs[k].time(|| device.samples(Sampling::GpuUtilization, util_seen)) {
            util_seen = s.iter().map(|s| s.timestamp).max().or(util_seen);
        }
        let k = next();
        costs[k].time(|| device.power_usage());
        let k = next();
        costs[k].time(|| device.total_energy_consumption());
        let k = next();
        costs[k].time(|| device.temperature(TemperatureSensor::Gpu));
        let k = next();
        costs[k].time(|| device.clock_info(Clock::SM));
        let k = next();
        costs[k].time(|| device.clock_info(Clock::Memory));
        let k = next();
        costs[k].time(|| device.performance_state());
        let k = next();
        costs[k].time(|| device.current_pcie_link_gen());
        let k = next();
        costs[k].time(|| device.current_pcie_link_width());
        let k = next();
        costs[k].time(|| device.current_throttle_reasons());
        let k = next();
        let sample = costs[k].time(|| device.gpm_sample());
        let k = next();
        if let (Some(prev), Some(cur)) = (gpm_prev.as_ref(), sample.as_ref()) {
            costs[k].time(|| gpm_metrics_get(&nvml, prev, cur, &GPM_METRICS));
        }
        if sample.is_some() {
            gpm_prev = sample;
        }
        if tick == warmup - 1 {
            for c in &mut costs {
                c.wall.clear();
                c.cpu.clear();
                c.errors = 0;
            }
            println!(
                "GPU {gpu}: {} process(es) on it; timing {ticks} ticks",
                procs.map_or(0, |p| p.len())
            );
        }
        if let Some(rest) = Duration::from_millis(250).checked_sub(start.elapsed()) {
            std::thread::sleep(rest);
        }
    }
    for c in &costs {
        c.print();
    }
    Ok(())
}
