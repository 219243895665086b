//! Simulated GPUs running named scenarios, modelled on real H200 traces.
//!
//! Each simulated GPU runs a job whose kernel activity is a sequence of segments (busy at some
//! level, or waiting). The driver is modelled as the H200's: one utilization sample per 200 ms
//! window, each the share of the window with a kernel resident, integer percent; the sampler reads
//! them at its own interval (250 ms by default), so some ticks see two windows and some one, as on
//! the real card. Power is a 1 s average, clocks and temperature lag, and PCIe bursts arrive with
//! each batch. Everything is a deterministic function of the seed and the time since start.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::{Backend, DeviceError, DeviceSampler};
use crate::model::{
    throttle, DeviceInfo, GpuProcess, GpuReading, GpuStatus, HostProcess, Metrics, ProcessKind,
    SystemInfo, UnixTime, UtilSampling, UtilWindow, Vendor,
};

/// The driver's utilization window on the H200.
pub const DRIVER_WINDOW_S: f64 = 0.2;
const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;
const TOTAL_MEM: u64 = 143_771 * MIB;
const POWER_LIMIT_W: f64 = 700.0;
const IDLE_POWER_W: f64 = 75.0;

/// The named scenarios of `gpulse demo`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    /// Every GPU trains with its data already on the device.
    Healthy,
    /// DataLoaders that cannot keep up: bursts of work, then ~1 s waits.
    Starving,
    /// Busy, with a multi-second checkpoint pause every ~10 s.
    Checkpoint,
    /// A tiny model syncing with the host every step: a flat low plateau.
    HostBound,
    /// Memory held by a process that computes almost nothing.
    MemoryIdle,
    /// Training in plain fp32: the SMs busy on the CUDA cores, the tensor cores idle.
    Fp32,
    /// A different job on each GPU (starving, healthy, checkpoint, memory-idle, ...).
    #[default]
    Mixed,
    /// No process on any GPU.
    Idle,
}

impl Scenario {
    pub fn as_str(self) -> &'static str {
        match self {
            Scenario::Healthy => "healthy",
            Scenario::Starving => "starving",
            Scenario::Checkpoint => "checkpoint",
            Scenario::HostBound => "host-bound",
            Scenario::MemoryIdle => "memory-idle",
            Scenario::Fp32 => "fp32",
            Scenario::Mixed => "mixed",
            Scenario::Idle => "idle",
        }
    }

    /// The job GPU `index` runs under this scenario.
    pub fn job_for(self, index: u32) -> Scenario {
        const MIX: [Scenario; 8] = [
            Scenario::Starving,
            Scenario::Healthy,
            Scenario::Checkpoint,
            Scenario::MemoryIdle,
            Scenario::HostBound,
            Scenario::Healthy,
            Scenario::Starving,
            Scenario::Idle,
        ];
        match self {
            Scenario::Mixed => MIX[index as usize % MIX.len()],
            other => other,
        }
    }
}

impl std::fmt::Display for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How to simulate.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    pub scenario: Scenario,
    pub gpus: u32,
    pub seed: u64,
    /// The simulated jobs start at this time (the sampler's first tick, normally now).
    pub start: Option<UnixTime>,
    /// Host name shown in the header (defaults to this machine's).
    pub hostname: Option<String>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            scenario: Scenario::Mixed,
            gpus: 4,
            seed: 1,
            start: None,
            hostname: None,
        }
    }
}

/// A small deterministic generator (splitmix64): reproducible runs without a dependency.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in [lo, hi).
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.f64()
    }
    /// Roughly normal (sum of uniforms), mean 0, standard deviation `sd`.
    pub fn noise(&mut self, sd: f64) -> f64 {
        let s: f64 = (0..4).map(|_| self.f64()).sum::<f64>() - 2.0;
        s * sd * 1.732
    }
}

/// A stretch of time with one kind of activity.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Segment {
    start: f64,
    end: f64,
    /// Share of time with a kernel resident while in this segment.
    level: f64,
    /// How much of the SMs the kernels use when resident (SM activity = level × this).
    sm_eff: f64,
    /// Host-to-device bytes per second during this segment.
    rx_bps: f64,
    /// Device-to-host bytes per second during this segment.
    tx_bps: f64,
}

/// Generates one job's activity as segments, extended lazily as time advances.
#[derive(Debug, Clone)]
struct Job {
    kind: Scenario,
    rng: Rng,
    segments: VecDeque<Segment>,
    horizon: f64,
    /// Period and busy share for starving jobs (varies per GPU and seed).
    period: f64,
    busy: f64,
    mem_bytes: u64,
}

impl Job {
    fn new(kind: Scenario, seed: u64, index: u32) -> Self {
        let mut rng = Rng::new(seed.wrapping_mul(1_000_003).wrapping_add(index as u64));
        let period = rng.range(1.4, 2.0);
        let busy = rng.range(0.3, 0.45) * period;
        let mem_bytes = match kind {
            Scenario::Idle => 0,
            Scenario::MemoryIdle => (TOTAL_MEM as f64 * rng.range(0.86, 0.92)) as u64,
            Scenario::HostBound => rng.range(0.9, 1.6) as u64 * GIB,
            _ => (rng.range(28.0, 60.0) * GIB as f64) as u64,
        };
        Job {
            kind,
            rng,
            segments: VecDeque::new(),
            horizon: 0.0,
            period,
            busy,
            mem_bytes,
        }
    }

    fn push(&mut self, len: f64, level: f64, sm_eff: f64, rx_bps: f64, tx_bps: f64) {
        let start = self.horizon;
        self.horizon += len.max(1e-5);
        self.segments.push_back(Segment {
            start,
            end: self.horizon,
            level,
            sm_eff,
            rx_bps,
            tx_bps,
        });
    }

    /// Extend the schedule to cover up to `until` (seconds since start).
    fn extend(&mut self, until: f64) {
        while self.horizon < until {
            match self.kind {
                Scenario::Idle => self.push(10.0, 0.0, 0.0, 0.0, 0.0),
                Scenario::Healthy => {
                    let run = self.rng.range(2.0, 6.0);
                    self.push(run, 0.995, 0.82, 40e6, 2e6);
                    // A short host sync (logging) that the 200 ms window mostly hides.
                    let gap = self.rng.range(0.02, 0.07);
                    self.push(gap, 0.0, 0.0, 0.0, 0.0);
                }
                Scenario::Starving => {
                    let jitter = 1.0 + self.rng.noise(0.06);
                    let busy = self.busy * jitter;
                    // The batch arrives over PCIe just before the burst.
                    self.push(0.05, 0.05, 0.1, 2.4e9, 1e6);
                    let level = self.rng.range(0.7, 0.95);
                    self.push(busy, level, 0.78, 30e6, 1e6);
                    let wait = (self.period - self.busy) * (1.0 + self.rng.noise(0.08)) - 0.05;
                    self.push(wait, 0.0, 0.0, 0.0, 0.0);
                }
                Scenario::Checkpoint => {
                    let run = self.rng.range(7.8, 8.4);
                    self.push(run, 0.995, 0.8, 40e6, 2e6);
                    // Copy the weights to the host, then wait on a slow file system.
                    self.push(0.4, 0.3, 0.05, 0.0, 6e9);
                    let pause = self.rng.range(2.3, 2.7);
                    self.push(pause, 0.0, 0.0, 0.0, 0.0);
                }
                Scenario::Fp32 => {
                    let run = self.rng.range(2.0, 6.0);
                    self.push(run, 0.995, 0.96, 40e6, 2e6);
                    let gap = self.rng.range(0.02, 0.07);
                    self.push(gap, 0.0, 0.0, 0.0, 0.0);
                }
                Scenario::HostBound => {
                    let run = self.rng.range(3.0, 8.0);
                    let level = self.rng.range(0.11, 0.17);
                    self.push(run, level, 0.02, 3e6, 1e6)
                }
                Scenario::MemoryIdle => {
                    // One small matmul (tens of µs on an H200) every 100 ms: the real
                    // memory_hog trace reads 0% utilization.
                    self.push(0.09995, 0.0, 0.0, 0.0, 0.0);
                    self.push(0.00005, 1.0, 0.05, 0.0, 0.0);
                }
                Scenario::Mixed => self.kind = Scenario::Healthy,
            }
        }
    }

    /// Forget segments that ended before `t`.
    fn trim(&mut self, t: f64) {
        while self.segments.len() > 1 && self.segments.front().is_some_and(|s| s.end < t) {
            self.segments.pop_front();
        }
    }

    /// Time-weighted mean of `f(segment)` over [a, b).
    fn mean(&mut self, a: f64, b: f64, f: impl Fn(&Segment) -> f64) -> f64 {
        self.extend(b);
        let span = (b - a).max(1e-9);
        let mut acc = 0.0;
        for s in &self.segments {
            if s.end <= a {
                continue;
            }
            if s.start >= b {
                break;
            }
            let overlap = s.end.min(b) - s.start.max(a);
            if overlap > 0.0 {
                acc += overlap * f(s);
            }
        }
        acc / span
    }
}

/// One simulated GPU.
pub struct SimDevice {
    index: u32,
    start: UnixTime,
    job: Job,
    noise: Rng,
    /// Index of the next driver window not yet reported.
    next_window: i64,
    /// Offset of the driver's window grid (each GPU's differs).
    phase: f64,
    temp_c: f64,
    last_t: Option<f64>,
    /// The simulated energy counter, joules: the power drawn over the ticks so far.
    energy_j: f64,
    pid: u32,
    /// The processes as last read and the second they were read in: like the NVML backend,
    /// the list is read once per [`PROCESS_PERIOD_S`] and carried between.
    processes: Option<(i64, Vec<GpuProcess>)>,
}

/// Seconds between readings of a simulated GPU's processes (as on NVML).
pub const PROCESS_PERIOD_S: f64 = 1.0;

impl SimDevice {
    fn new(index: u32, config: &SimConfig, start: UnixTime) -> Self {
        let kind = config.scenario.job_for(index);
        let mut noise = Rng::new(config.seed ^ (0xA5A5 + index as u64 * 7919));
        let phase = noise.range(0.0, DRIVER_WINDOW_S);
        SimDevice {
            index,
            start,
            job: Job::new(kind, config.seed, index),
            noise,
            next_window: 0,
            phase,
            temp_c: 34.0,
            last_t: None,
            energy_j: 0.0,
            pid: 4100 + index * 37 + (config.seed % 1000) as u32,
            processes: None,
        }
    }

    pub fn scenario(&self) -> Scenario {
        self.job.kind
    }

    fn window_end(&self, k: i64) -> f64 {
        self.phase + (k as f64 + 1.0) * DRIVER_WINDOW_S
    }

    /// The training process's DataLoader workers (forked, so they share its command line).
    /// Starving jobs on GPUs 0-1, 4-5, ... have CPU-saturated workers; on GPUs 2-3, 6-7, ...
    /// workers waiting on disk. Healthy and checkpointing jobs have a few mostly idle workers. The
    /// worker count depends on the seed (through the PID) and the GPU; the jitter on the tick too.
    fn sim_workers(&self, now: UnixTime, command: &str) -> Vec<HostProcess> {
        let mut fixed = Rng::new(u64::from(self.pid) * 31 + u64::from(self.index));
        let mut tick = Rng::new(
            u64::from(self.pid) * 1_000_003 + ((now - self.start).max(0.0) * 4.0).round() as u64,
        );
        let io_bound = (self.index / 2) % 2 == 1;
        let many = 4 + (fixed.next_u64() % 5) as u32;
        // (workers, CPU range, the share of ticks a worker is in `busy_state`, busy_state)
        let (count, cpu, busy_share, busy_state) = match self.job.kind {
            Scenario::Starving if io_bound => (many, (2.0, 12.0), 0.85, 'D'),
            Scenario::Starving => (many, (92.0, 100.0), 0.9, 'R'),
            Scenario::Healthy => (2, (8.0, 30.0), 0.2, 'R'),
            Scenario::Checkpoint => (4, (15.0, 40.0), 0.3, 'R'),
            _ => return Vec::new(),
        };
        let rss = (fixed.range(1.0, 2.0) * GIB as f64) as u64;
        (1..=count)
            .map(|k| HostProcess {
                pid: self.pid + k,
                ppid: Some(self.pid),
                cpu_percent: Some((tick.range(cpu.0, cpu.1) * 10.0).round() / 10.0),
                state: Some(if tick.f64() < busy_share {
                    busy_state
                } else {
                    'S'
                }),
                rss_bytes: Some(rss),
                command: Some(command.to_string()),
                start_ticks: None,
            })
            .collect()
    }

    fn reading(&mut self, now: UnixTime) -> GpuReading {
        let rel = (now - self.start).max(0.0);
        self.job.extend(rel + 1.0);

        // Driver windows completed since the last read.
        let mut windows = Vec::new();
        while self.window_end(self.next_window) <= rel {
            let end = self.window_end(self.next_window);
            let busy = self.job.mean(end - DRIVER_WINDOW_S, end, |s| s.level);
            // The driver's figure is noisy when kernels run a real share of the window; a few
            // microseconds of work read 0.
            let jitter = if busy >= 0.05 {
                self.noise.noise(1.2)
            } else {
                0.0
            };
            let util = (busy * 100.0 + jitter).round().clamp(0.0, 100.0);
            // Keep only what the driver's buffer would still hold (a few seconds).
            if rel - end < 3.0 {
                windows.push(UtilWindow {
                    t: self.start + end,
                    util,
                });
            }
            self.next_window += 1;
        }
        let util_gpu = windows.last().map(|w| w.util).or_else(|| {
            let end = self.window_end(self.next_window - 1);
            Some((self.job.mean(end - DRIVER_WINDOW_S, end, |s| s.level) * 100.0).round())
        });

        let idle_job = self.job.kind == Scenario::Idle;
        let recent = self
            .job
            .mean((rel - 0.25).max(0.0), rel.max(0.001), |s| s.level);
        let power_avg = self.job.mean((rel - 1.0).max(0.0), rel.max(0.001), |s| {
            s.level * s.sm_eff.max(0.15)
        });
        let sm_active = self.job.mean((rel - 0.25).max(0.0), rel.max(0.001), |s| {
            s.level * s.sm_eff
        });
        // The share of SM activity on the tensor cores: 45% for mixed-precision training (the
        // H200's bf16 jobs read 28–36% tensor at 77–87% SM), 2% for plain fp32 (0–3%).
        let tensor_share = if self.job.kind == Scenario::Fp32 {
            0.02
        } else {
            0.45
        };
        let rx = self
            .job
            .mean((rel - 0.25).max(0.0), rel.max(0.001), |s| s.rx_bps);
        let tx = self
            .job
            .mean((rel - 0.25).max(0.0), rel.max(0.001), |s| s.tx_bps);
        let power = IDLE_POWER_W
            + (POWER_LIMIT_W * 0.87 - IDLE_POWER_W) * power_avg
            + self.noise.noise(1.5)
            + if idle_job { 0.0 } else { 50.0 };

        // Temperature follows power with a lag of tens of seconds.
        let dt = self.last_t.map_or(0.25, |t| (now - t).clamp(0.0, 5.0));
        self.last_t = Some(now);
        self.energy_j += power.max(0.0) * dt;
        let target = 30.0 + 40.0 * (power / POWER_LIMIT_W);
        self.temp_c += (target - self.temp_c) * (dt / 20.0).min(1.0);

        let busy_now = recent > 0.02;
        let sm_clock = if busy_now || power_avg > 0.05 {
            1980
        } else {
            345
        };
        let mut bits = 0u64;
        if !busy_now {
            bits |= throttle::GPU_IDLE;
        }
        if power_avg > 0.8 {
            bits |= throttle::SW_POWER_CAP;
        }
        let mem_used = if idle_job {
            0
        } else {
            self.job.mem_bytes + (self.noise.range(0.0, 12.0) as u64) * MIB
        };

        let processes = if idle_job {
            Vec::new()
        } else {
            let main_cpu = match self.job.kind {
                Scenario::HostBound => 99.0,
                Scenario::Starving => 35.0 + self.noise.range(0.0, 10.0),
                _ => 100.0 + self.noise.range(0.0, 15.0),
            };
            let command = format!("python train.py --job {}", self.job.kind.as_str());
            vec![GpuProcess {
                pid: self.pid,
                kind: ProcessKind::Compute,
                user: Some("sim".to_string()),
                gpu_memory_bytes: Some(mem_used.saturating_sub(512 * MIB)),
                sm_util: Some((sm_active * 100.0).round()),
                mem_util: Some((recent * 40.0).round()),
                cpu_percent: Some(main_cpu),
                rss_bytes: Some(6 * GIB),
                running_s: Some(rel + 600.0),
                children: self.sim_workers(now, &command),
                command: Some(command),
                state: Some(if main_cpu >= 50.0 { 'R' } else { 'S' }),
                resolved: true,
                local_pid: None,
                namespace_pid: None,
                start_ticks: None,
            }]
        };

        // Drawn every tick all the same, so the noise stream (and every other reading) does not
        // depend on the cadence.
        let period = (rel / PROCESS_PERIOD_S).floor() as i64;
        let processes = match &self.processes {
            Some((p, kept)) if *p == period => kept.clone(),
            _ => {
                self.processes = Some((period, processes.clone()));
                processes
            }
        };

        self.job.trim(rel - 5.0);
        GpuReading {
            index: self.index,
            status: GpuStatus::Ok,
            metrics: Metrics {
                util_gpu,
                util_mem: Some((recent * 45.0).round()),
                mem_used_bytes: Some(mem_used),
                mem_total_bytes: Some(TOTAL_MEM),
                power_w: Some((power * 100.0).round() / 100.0),
                power_limit_w: Some(POWER_LIMIT_W),
                temp_c: Some(self.temp_c.round()),
                sm_clock_mhz: Some(sm_clock),
                mem_clock_mhz: Some(3201),
                fan_pct: None,
                pstate: Some(0),
                pcie_gen: Some(5),
                pcie_width: Some(16),
                pcie_rx_bytes_per_s: Some(rx.max(0.0) + 2e5),
                pcie_tx_bytes_per_s: Some(tx.max(0.0) + 3e5),
                sm_active: Some((sm_active * 1000.0).round() / 10.0),
                sm_occupancy: Some((sm_active * 600.0).round() / 10.0),
                energy_j: Some((self.energy_j * 1000.0).round() / 1000.0),
                tensor_active: Some((sm_active * tensor_share * 1000.0).round() / 10.0),
                dram_active: Some((recent * 350.0).round() / 10.0),
                throttle: Some(bits),
            },
            util_windows: windows,
            processes,
        }
    }
}

impl DeviceSampler for SimDevice {
    fn index(&self) -> u32 {
        self.index
    }

    fn sample(&mut self, now: UnixTime) -> Result<GpuReading, DeviceError> {
        Ok(self.reading(now))
    }
}

/// Simulated H200s.
pub struct SimBackend {
    system: SystemInfo,
    devices: Vec<Box<dyn DeviceSampler>>,
}

impl SimBackend {
    pub fn new(config: SimConfig) -> Self {
        let start = config.start.unwrap_or_else(crate::clock::now);
        let gpus = config.gpus.max(1);
        let devices_info = (0..gpus).map(sim_device_info).collect();
        let system = SystemInfo {
            hostname: config.hostname.clone().unwrap_or_else(super::hostname),
            backend: "sim".to_string(),
            driver_version: Some("580.159.04 (simulated)".to_string()),
            cuda_version: Some("13.0".to_string()),
            nvml_version: None,
            devices: devices_info,
        };
        let devices = (0..gpus)
            .map(|i| Box::new(SimDevice::new(i, &config, start)) as Box<dyn DeviceSampler>)
            .collect();
        SimBackend { system, devices }
    }

    /// The samplers themselves, for driving the simulation on a virtual clock (tests, benchmarks).
    pub fn devices_for(config: &SimConfig) -> Vec<SimDevice> {
        let start = config.start.unwrap_or_else(crate::clock::now);
        (0..config.gpus.max(1))
            .map(|i| SimDevice::new(i, config, start))
            .collect()
    }
}

/// The static facts of simulated GPU `index` (an H200 SXM).
pub fn sim_device_info(index: u32) -> DeviceInfo {
    DeviceInfo {
        index,
        name: "NVIDIA H200 (simulated)".to_string(),
        vendor: Vendor::Nvidia,
        uuid: Some(format!("GPU-5e1a0000-0000-4000-8000-{:012x}", index)),
        bus_id: Some(format!("00000000:{:02X}:00.0", 0x18 + index * 0x10)),
        architecture: Some("Hopper".to_string()),
        memory_total_bytes: Some(TOTAL_MEM),
        power_limit_watts: Some(POWER_LIMIT_W),
        power_default_limit_watts: Some(POWER_LIMIT_W),
        power_max_limit_watts: Some(POWER_LIMIT_W),
        sm_clock_max_mhz: Some(1980),
        mem_clock_max_mhz: Some(3201),
        pcie_gen_max: Some(5),
        pcie_width_max: Some(16),
        temperature_slowdown_c: Some(87.0),
        has_fan: Some(false),
        gpm_supported: true,
        util_sampling: UtilSampling::DriverWindows,
    }
}

impl Backend for SimBackend {
    fn system(&self) -> &SystemInfo {
        &self.system
    }

    fn take_devices(&mut self) -> Vec<Box<dyn DeviceSampler>> {
        std::mem::take(&mut self.devices)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(scenario: Scenario, seconds: f64) -> Vec<UtilWindow> {
        let cfg = SimConfig {
            scenario,
            gpus: 1,
            seed: 7,
            start: Some(1000.0),
            hostname: Some("t".into()),
        };
        let mut dev = SimBackend::devices_for(&cfg).remove(0);
        let mut out = Vec::new();
        let mut t = 1000.0;
        while t < 1000.0 + seconds {
            t += 0.25;
            out.extend(dev.reading(t).util_windows);
        }
        out
    }

    #[test]
    fn processes_are_read_once_a_second_and_carried_between() {
        let cfg = SimConfig {
            scenario: Scenario::Starving,
            gpus: 1,
            seed: 7,
            start: Some(1000.0),
            hostname: Some("t".into()),
        };
        let mut dev = SimBackend::devices_for(&cfg).remove(0);
        let cpu = |r: &GpuReading| r.processes.first().and_then(|p| p.cpu_percent);
        // Ticks 1000.25 .. 1005.0, grouped by the second of the run they fall in.
        let mut seconds: Vec<Vec<Option<f64>>> = vec![Vec::new(); 6];
        for k in 1..=20 {
            let t = 1000.0 + 0.25 * f64::from(k);
            seconds[(t - 1000.0).floor() as usize].push(cpu(&dev.reading(t)));
        }
        for s in &seconds[..5] {
            assert!(
                s[0].is_some() && s.iter().all(|c| *c == s[0]),
                "{seconds:?}"
            );
        }
        // A new list every second (the workers' CPU shares are drawn again).
        for pair in seconds[..5].windows(2) {
            assert_ne!(pair[0][0], pair[1][0], "{seconds:?}");
        }
    }

    #[test]
    fn driver_windows_are_200ms_apart_none_skipped_none_repeated() {
        let w = run(Scenario::Healthy, 20.0);
        assert!(w.len() >= 98 && w.len() <= 101, "{} windows", w.len());
        for p in w.windows(2) {
            assert!((p[1].t - p[0].t - DRIVER_WINDOW_S).abs() < 1e-9);
        }
    }

    #[test]
    fn same_seed_same_run() {
        let a = run(Scenario::Starving, 10.0);
        let b = run(Scenario::Starving, 10.0);
        assert_eq!(a, b);
    }

    #[test]
    fn scenarios_have_their_signature() {
        let mean = |w: &[UtilWindow]| w.iter().map(|x| x.util).sum::<f64>() / w.len() as f64;
        let healthy = run(Scenario::Healthy, 30.0);
        assert!(mean(&healthy) > 95.0);
        let starving = run(Scenario::Starving, 30.0);
        let zeros = starving.iter().filter(|w| w.util == 0.0).count() as f64;
        assert!(
            zeros / starving.len() as f64 > 0.4,
            "starving has long waits"
        );
        assert!(starving.iter().any(|w| w.util > 60.0), "and bursts of work");
        let host = run(Scenario::HostBound, 30.0);
        assert!((8.0..25.0).contains(&mean(&host)));
        let idle = run(Scenario::Idle, 10.0);
        assert_eq!(mean(&idle), 0.0);
        let ckpt = run(Scenario::Checkpoint, 30.0);
        let zero_run = ckpt
            .split(|w| w.util > 5.0)
            .map(|s| s.len())
            .max()
            .unwrap_or(0);
        assert!(
            zero_run >= 10,
            "a pause of 2 s or more, got {zero_run} windows"
        );
    }

    #[test]
    fn absent_fan_is_none_not_zero() {
        let cfg = SimConfig {
            gpus: 2,
            start: Some(0.0),
            ..Default::default()
        };
        let mut devs = SimBackend::devices_for(&cfg);
        let r = devs[1].reading(1.0);
        assert_eq!(r.metrics.fan_pct, None);
        assert!(r.metrics.sm_active.is_some());
    }
}
