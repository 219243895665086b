//! One simulated GPU: its job, the driver's windows over it, and every reading derived.

use super::faults::SimFaults;
use super::job::Job;
use super::mig::MigSim;
use super::{
    Rng, Scenario, SimConfig, DRIVER_WINDOW_S, GIB, IDLE_POWER_W, MIB, POWER_LIMIT_W, TOTAL_MEM,
};
use crate::backend::{DeviceError, DeviceSampler};
use crate::model::{
    throttle, GpuProcess, GpuReading, GpuStatus, HostProcess, Metrics, ProcessKind, UnixTime,
    UtilWindow,
};

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
    /// The sick hardware of the `faulty` scenario.
    faults: Option<SimFaults>,
    /// Whose jobs run here, under the `shared` scenario.
    shared: bool,
    /// The GPU's MIG instances, when it is in MIG mode.
    mig: Option<MigSim>,
}

/// Seconds between readings of a simulated GPU's processes (as on NVML).
pub const PROCESS_PERIOD_S: f64 = 1.0;

impl SimDevice {
    pub(super) fn new(index: u32, config: &SimConfig, start: UnixTime) -> Self {
        let kind = config.scenario.job_for(index);
        let mut noise = Rng::new(config.seed ^ (0xA5A5 + index as u64 * 7919));
        let phase = noise.range(0.0, DRIVER_WINDOW_S);
        let shared = config.scenario == Scenario::Shared;
        let pid = 4100 + index * 37 + (config.seed % 1000) as u32;
        SimDevice {
            shared,
            mig: (shared && index == super::shared::MIG_GPU)
                .then(|| MigSim::new(config.seed, index, pid)),
            index,
            start,
            job: Job::new(kind, config.seed, index),
            noise,
            next_window: 0,
            phase,
            temp_c: 34.0,
            last_t: None,
            energy_j: 0.0,
            pid,
            processes: None,
            faults: (config.scenario == Scenario::Faulty)
                .then(|| SimFaults::new(index, config.seed, start)),
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

    /// Everything the driver would report at `now`, advancing the simulation to it.
    pub(super) fn reading(&mut self, now: UnixTime) -> GpuReading {
        let rel = (now - self.start).max(0.0);
        if self.mig.is_some() {
            return self.mig_reading(now, rel);
        }
        self.job.extend(rel + 1.0);
        let windows = self.driver_windows(rel);
        let util_gpu = self.latest_util(&windows);
        let idle_job = self.job.kind == Scenario::Idle;
        let act = self.activity(rel);
        let power = self.power(&act, idle_job);
        self.advance_thermals(now, power);
        let mem_used = if idle_job {
            0
        } else {
            self.job.mem_bytes + (self.noise.range(0.0, 12.0) as u64) * MIB
        };
        let mut processes = if idle_job {
            Vec::new()
        } else {
            vec![self.main_process(now, rel, mem_used, &act)]
        };
        if self.shared {
            processes.extend(super::shared::guests(self.index, self.pid));
        }
        let processes = self.carried_processes(rel, processes);
        self.job.trim(rel - 5.0);
        let mut reading = GpuReading {
            index: self.index,
            status: GpuStatus::Ok,
            metrics: self.metrics(util_gpu, &act, power, mem_used),
            util_windows: windows,
            processes,
            ..Default::default()
        };
        if let Some(f) = self.faults.as_mut() {
            f.apply(now, &mut reading);
        }
        reading
    }

    /// A reading in MIG mode: no utilization, GPM per instance, each process in its instance.
    fn mig_reading(&mut self, now: UnixTime, rel: f64) -> GpuReading {
        let Some(mig) = self.mig.as_mut() else {
            return GpuReading::empty(self.index, GpuStatus::Ok);
        };
        let tick = mig.tick(rel);
        let act = Activity {
            recent: 0.0,
            power_avg: tick.power_avg,
            sm_active: 0.0,
            rx: 0.0,
            tx: 0.0,
        };
        let power = self.power(&act, false);
        self.advance_thermals(now, power);
        let processes = self.carried_processes(rel, tick.processes);
        let mut metrics = self.metrics(None, &act, power, tick.memory_used);
        metrics.util_mem = None;
        metrics.sm_active = tick.sm_active;
        metrics.sm_occupancy = None;
        metrics.tensor_active = tick.tensor_active;
        metrics.dram_active = tick.dram_active;
        metrics.pcie_rx_bytes_per_s = Some(2e5);
        metrics.pcie_tx_bytes_per_s = Some(3e5);
        metrics.sm_clock_mhz = Some(1980);
        if let Some(t) = metrics.throttle.as_mut() {
            *t &= !throttle::GPU_IDLE;
        }
        GpuReading {
            index: self.index,
            status: GpuStatus::Ok,
            metrics,
            util_windows: Vec::new(),
            processes,
            mig: tick.mig,
            ..Default::default()
        }
    }

    /// The driver windows completed up to `rel` (seconds since start) and not yet reported,
    /// keeping only those the driver's buffer would still hold.
    fn driver_windows(&mut self, rel: f64) -> Vec<UtilWindow> {
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
        windows
    }

    /// The current utilization: the newest window read, else the last completed window's share
    /// without the driver's noise.
    fn latest_util(&mut self, windows: &[UtilWindow]) -> Option<f64> {
        windows.last().map(|w| w.util).or_else(|| {
            let end = self.window_end(self.next_window - 1);
            Some((self.job.mean(end - DRIVER_WINDOW_S, end, |s| s.level) * 100.0).round())
        })
    }

    /// The job's activity over the recent past at `rel` (seconds since start).
    fn activity(&mut self, rel: f64) -> Activity {
        let recent = self
            .job
            .mean((rel - 0.25).max(0.0), rel.max(0.001), |s| s.level);
        let power_avg = self.job.mean((rel - 1.0).max(0.0), rel.max(0.001), |s| {
            s.level * s.sm_eff.max(0.15)
        });
        let sm_active = self.job.mean((rel - 0.25).max(0.0), rel.max(0.001), |s| {
            s.level * s.sm_eff
        });
        let rx = self
            .job
            .mean((rel - 0.25).max(0.0), rel.max(0.001), |s| s.rx_bps);
        let tx = self
            .job
            .mean((rel - 0.25).max(0.0), rel.max(0.001), |s| s.tx_bps);
        Activity {
            recent,
            power_avg,
            sm_active,
            rx,
            tx,
        }
    }

    /// The power drawn (watts): idle power plus the share of the limit the activity takes, with
    /// the driver's noise, and a job's baseline while one runs.
    fn power(&mut self, act: &Activity, idle_job: bool) -> f64 {
        IDLE_POWER_W
            + (POWER_LIMIT_W * 0.87 - IDLE_POWER_W) * act.power_avg
            + self.noise.noise(1.5)
            + if idle_job { 0.0 } else { 50.0 }
    }

    /// Count the energy drawn since the last reading and move the temperature toward where the
    /// power takes it: it follows power with a lag of tens of seconds.
    fn advance_thermals(&mut self, now: UnixTime, power: f64) {
        let dt = self.last_t.map_or(0.25, |t| (now - t).clamp(0.0, 5.0));
        self.last_t = Some(now);
        self.energy_j += power.max(0.0) * dt;
        let target = 30.0 + 40.0 * (power / POWER_LIMIT_W);
        self.temp_c += (target - self.temp_c) * (dt / 20.0).min(1.0);
    }

    /// The training process with its workers, holding `mem_used` bytes less the driver's share.
    fn main_process(
        &mut self,
        now: UnixTime,
        rel: f64,
        mem_used: u64,
        act: &Activity,
    ) -> GpuProcess {
        let main_cpu = match self.job.kind {
            Scenario::HostBound => 99.0,
            Scenario::Starving => 35.0 + self.noise.range(0.0, 10.0),
            _ => 100.0 + self.noise.range(0.0, 15.0),
        };
        let command = format!("python train.py --job {}", self.job.kind.as_str());
        let owner = self
            .shared
            .then(|| super::shared::owner(self.index))
            .flatten();
        GpuProcess {
            pid: self.pid,
            kind: ProcessKind::Compute,
            user: Some(owner.as_ref().map_or("sim", |o| o.1).to_string()),
            gpu_memory_bytes: Some(mem_used.saturating_sub(512 * MIB)),
            sm_util: Some((act.sm_active * 100.0).round()),
            mem_util: Some((act.recent * 40.0).round()),
            cpu_percent: Some(main_cpu),
            rss_bytes: Some(6 * GIB),
            running_s: Some(rel + 600.0),
            children: self.sim_workers(now, &command),
            command: Some(command),
            state: Some(if main_cpu >= 50.0 { 'R' } else { 'S' }),
            resolved: true,
            start_ticks: None,
            job: owner.map(|o| o.0),
            ..Default::default()
        }
    }

    /// The process list as read once per [`PROCESS_PERIOD_S`]: `drawn` when a new period has
    /// begun, else the list kept from the period's first reading. `drawn` is drawn every tick
    /// all the same, so the noise stream (and every other reading) does not depend on the
    /// cadence.
    fn carried_processes(&mut self, rel: f64, drawn: Vec<GpuProcess>) -> Vec<GpuProcess> {
        let period = (rel / PROCESS_PERIOD_S).floor() as i64;
        match &self.processes {
            Some((p, kept)) if *p == period => kept.clone(),
            _ => {
                self.processes = Some((period, drawn.clone()));
                drawn
            }
        }
    }

    /// The tick's metrics from the job's activity, the power drawn and the memory in use.
    fn metrics(&self, util_gpu: Option<f64>, act: &Activity, power: f64, mem_used: u64) -> Metrics {
        // The share of SM activity on the tensor cores: 45% for mixed-precision training (the
        // H200's bf16 jobs read 28–36% tensor at 77–87% SM), 2% for plain fp32 (0–3%).
        let tensor_share = if self.job.kind == Scenario::Fp32 {
            0.02
        } else {
            0.45
        };
        let busy_now = act.recent > 0.02;
        let sm_clock = if busy_now || act.power_avg > 0.05 {
            1980
        } else {
            345
        };
        let mut bits = 0u64;
        if !busy_now {
            bits |= throttle::GPU_IDLE;
        }
        if act.power_avg > 0.8 {
            bits |= throttle::SW_POWER_CAP;
        }
        let (recent, sm_active) = (act.recent, act.sm_active);
        Metrics {
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
            pcie_rx_bytes_per_s: Some(act.rx.max(0.0) + 2e5),
            pcie_tx_bytes_per_s: Some(act.tx.max(0.0) + 3e5),
            sm_active: Some((sm_active * 1000.0).round() / 10.0),
            sm_occupancy: Some((sm_active * 600.0).round() / 10.0),
            energy_j: Some((self.energy_j * 1000.0).round() / 1000.0),
            tensor_active: Some((sm_active * tensor_share * 1000.0).round() / 10.0),
            dram_active: Some((recent * 350.0).round() / 10.0),
            throttle: Some(bits),
            throttle_held: Default::default(),
        }
    }
}

/// The job's activity over the recent past, as the readings see it.
struct Activity {
    /// Share of the last 250 ms with a kernel resident.
    recent: f64,
    /// The power-weighted activity of the last second (power is a 1 s average).
    power_avg: f64,
    /// SM activity over the last 250 ms.
    sm_active: f64,
    /// Host-to-device and device-to-host bytes per second over the last 250 ms.
    rx: f64,
    tx: f64,
}

impl DeviceSampler for SimDevice {
    fn index(&self) -> u32 {
        self.index
    }

    fn sample(&mut self, now: UnixTime) -> Result<GpuReading, DeviceError> {
        Ok(self.reading(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::sim::{SimBackend, SimConfig};

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
