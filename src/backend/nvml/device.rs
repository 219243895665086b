//! One GPU's sampler: every tick's NVML calls, each metric absent where unsupported.

use std::time::Instant;

use nvml_wrapper::enum_wrappers::device::{Clock, Sampling, TemperatureSensor};
use nvml_wrapper::enums::gpm::GpmMetricId;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::gpm::{gpm_metrics_get, GpmSample};
use nvml_wrapper::{Device, Nvml};

use super::calls::{Call, Unsupported};
use super::errors::{classify, Failure};
use super::health::{HealthReader, XidWatchCell};
use super::merge::{BufferCadence, SampleBufferMerger};
use super::mig::MigReader;
use super::pcie::PcieReader;
use super::processes::{merge_processes, newest_per_process, ProcessUtil};
use super::values::{pstate_number, sample_value};
use super::xid_events::{XidFeed, XidQueue};
use crate::backend::{CallCost, DeviceError, DeviceSampler};
use crate::model::{
    DeviceInfo, GpuProcess, GpuReading, GpuStatus, Metrics, UnixTime, UtilWindow, XidEvent,
};

/// How often the slow readings are taken ([`NvmlDeviceSampler::slow_fields`]). Memory and the
/// current utilization are read every tick; the utilization windows and the processes from the
/// driver's buffers on their own periods.
pub const SLOW_PERIOD_S: f64 = 1.0;
/// How often the driver's utilization sample buffer is read while the polled utilization moves
/// (a dip, or a GPU going idle or busy: [`BufferCadence`]); every
/// [`super::merge::STEADY_PERIOD_S`] otherwise.
/// It holds 14 s of 200 ms windows on the H200, so every window still arrives, in batches; one
/// read costs 2.2–2.7 ms of CPU there (the sampler's largest cost). Between reads each tick
/// carries the driver's current value, which the charts draw until the windows arrive.
pub const SAMPLES_PERIOD_S: f64 = 2.0;
/// How often the process list is read (compute and graphics: 170 µs on the H200 while a job runs).
pub const PROCESS_PERIOD_S: f64 = 1.0;
/// How often per-process utilization is read. It is shown, never used by the detector, and one
/// read costs about 2.4 ms of CPU on the H200 (a driver buffer, like the utilization windows).
pub const PROCESS_UTIL_PERIOD_S: f64 = 10.0;
/// How often the total energy counter is read: one read costs milliseconds on the H200 (a driver
/// round trip), and a counter loses nothing between reads.
pub const ENERGY_PERIOD_S: f64 = 5.0;
/// A tick that falls this close before the period is due takes the slow readings already.
pub(super) const SLOW_SLACK_S: f64 = 0.05;

/// GPM metrics need two samples at least 100 ms apart.
const GPM_MIN_GAP_S: f64 = 0.1;
/// The GPM metrics read (SM activity, occupancy, tensor, DRAM bandwidth, PCIe rx/tx).
pub const GPM_METRICS: [GpmMetricId; 6] = [
    GpmMetricId::SmUtil,
    GpmMetricId::SmOccupancy,
    GpmMetricId::AnyTensorUtil,
    GpmMetricId::DramBwUtil,
    GpmMetricId::PcieRxPerSec,
    GpmMetricId::PcieTxPerSec,
];
const MIB: f64 = 1024.0 * 1024.0;

pub struct NvmlDeviceSampler {
    nvml: &'static Nvml,
    device: Device<'static>,
    info: DeviceInfo,
    unsupported: Unsupported,
    merger: SampleBufferMerger,
    proc_util_seen: Option<u64>,
    /// The processes as last read and when.
    procs: Option<(Instant, Vec<GpuProcess>)>,
    /// The last read of their utilization.
    proc_util: Option<ProcessUtil>,
    gpm_prev: Option<(GpmSample<'static>, Instant)>,
    pcie: Option<PcieReader>,
    /// When the driver's sample buffer was last read, and when to read it next.
    samples_at: Option<Instant>,
    cadence: BufferCadence,
    /// The slow readings and when they were taken, carried between their reads.
    slow: Option<(Instant, Metrics)>,
    /// The energy counter (joules) and when it was read, carried between reads.
    energy: Option<(Instant, Option<f64>)>,
    /// What each kind of call cost, once asked to measure ([`DeviceSampler::measure_calls`]).
    costs: Option<[CallCost; Call::ALL.len()]>,
    /// Health counters and the clock event counters.
    health: HealthReader,
    /// This GPU's XID queue, and the feed that keeps the XID thread running.
    xids: Option<(XidQueue, std::sync::Arc<XidFeed>)>,
    /// The GPU's MIG instances, when it is in MIG mode.
    mig: Option<MigReader>,
}

impl NvmlDeviceSampler {
    pub fn new(
        nvml: &'static Nvml,
        device: Device<'static>,
        info: DeviceInfo,
        xids: Option<((XidQueue, XidWatchCell), std::sync::Arc<XidFeed>)>,
    ) -> Self {
        let mut unsupported = Unsupported::default();
        if info.has_fan != Some(true) {
            unsupported.add(Call::Fan);
        }
        if !info.gpm_supported {
            unsupported.add(Call::Gpm);
        }
        // Without GPM, PCIe throughput comes from the blocking call on its own thread.
        let pcie = if info.gpm_supported {
            None
        } else {
            nvml.device_by_index(info.index)
                .ok()
                .and_then(|d| PcieReader::start(info.index, d))
        };
        let watch = xids.as_ref().map(|x| x.0 .1.clone()).unwrap_or_default();
        NvmlDeviceSampler {
            mig: MigReader::open(nvml, info.index, info.gpm_supported),
            nvml,
            health: HealthReader::new(nvml, &device, watch),
            xids: xids.map(|((queue, _), feed)| (queue, feed)),
            device,
            info,
            unsupported,
            merger: SampleBufferMerger::new(),
            proc_util_seen: None,
            procs: None,
            proc_util: None,
            gpm_prev: None,
            pcie,
            samples_at: None,
            cadence: BufferCadence::default(),
            slow: None,
            energy: None,
            costs: None,
        }
    }

    /// Run one call on the device, its cost counted while measuring.
    fn timed<T>(&mut self, c: Call, f: impl FnOnce(&Device<'static>) -> T) -> T {
        let Some(costs) = self.costs.as_mut() else {
            return f(&self.device);
        };
        let (wall, cpu) = (Instant::now(), crate::clock::thread_cpu_s());
        let out = f(&self.device);
        let cost = &mut costs[c as usize];
        cost.calls += 1;
        cost.wall_s += wall.elapsed().as_secs_f64();
        if let (Some(a), Some(b)) = (cpu, crate::clock::thread_cpu_s()) {
            cost.cpu_s += b - a;
        }
        out
    }

    /// Which calls this GPU turned out not to support.
    pub fn unsupported(&self) -> Unsupported {
        self.unsupported
    }

    /// Make one call unless known unsupported; a lost GPU is an error, anything else absent.
    fn call<T>(
        &mut self,
        c: Call,
        f: impl FnOnce(&Device<'static>) -> Result<T, NvmlError>,
    ) -> Result<Option<T>, DeviceError> {
        if self.unsupported.has(c) {
            return Ok(None);
        }
        match self.timed(c, f) {
            Ok(v) => Ok(Some(v)),
            Err(e) => match classify(&e, false) {
                Failure::Lost => Err(DeviceError::Lost(format!("{c:?}: {e}"))),
                Failure::Unsupported => {
                    tracing::debug!("GPU {}: {c:?} not supported ({e})", self.info.index);
                    self.unsupported.add(c);
                    Ok(None)
                }
                Failure::Absent => Ok(None),
            },
        }
    }

    /// The readings taken once per [`SLOW_PERIOD_S`]: power (already a 1 s average on recent GPUs),
    /// temperature, clocks, P-state, link state, throttle reasons, and GPM, whose metrics call alone
    /// costs milliseconds (3.5 ms on the H200).
    fn slow_fields(&mut self) -> Result<Metrics, DeviceError> {
        let mut m = Metrics {
            power_w: self
                .call(Call::Power, |d| d.power_usage())?
                .map(|mw| f64::from(mw) / 1000.0),
            temp_c: self
                .call(Call::Temperature, |d| d.temperature(TemperatureSensor::Gpu))?
                .map(f64::from),
            sm_clock_mhz: self.call(Call::SmClock, |d| d.clock_info(Clock::SM))?,
            mem_clock_mhz: self.call(Call::MemClock, |d| d.clock_info(Clock::Memory))?,
            fan_pct: self.call(Call::Fan, |d| d.fan_speed(0))?,
            pstate: self
                .call(Call::PState, |d| d.performance_state())?
                .and_then(pstate_number),
            pcie_gen: self.call(Call::PcieGen, |d| d.current_pcie_link_gen())?,
            pcie_width: self.call(Call::PcieWidth, |d| d.current_pcie_link_width())?,
            throttle: self
                .call(Call::Throttle, |d| d.current_throttle_reasons())?
                .map(|r| r.bits()),
            ..Default::default()
        };
        self.gpm(&mut m)?;
        if let Some(pcie) = &self.pcie {
            let (rx, tx) = pcie.read();
            m.pcie_rx_bytes_per_s = rx;
            m.pcie_tx_bytes_per_s = tx;
        }
        Ok(m)
    }

    /// The energy counter in joules, read once per [`ENERGY_PERIOD_S`] and carried between reads.
    fn energy(&mut self) -> Result<Option<f64>, DeviceError> {
        let due = self
            .energy
            .as_ref()
            .is_none_or(|(at, _)| at.elapsed().as_secs_f64() >= ENERGY_PERIOD_S - SLOW_SLACK_S);
        if due {
            let joules = self
                .call(Call::Energy, |d| d.total_energy_consumption())?
                .map(|mj| mj as f64 / 1000.0);
            self.energy = Some((Instant::now(), joules));
        }
        Ok(self.energy.as_ref().and_then(|(_, j)| *j))
    }

    fn gpm(&mut self, m: &mut Metrics) -> Result<(), DeviceError> {
        let Some(new) = self.call(Call::Gpm, |d| d.gpm_sample())? else {
            return Ok(());
        };
        let now = Instant::now();
        let Some((prev, at)) = self.gpm_prev.take() else {
            self.gpm_prev = Some((new, now));
            return Ok(());
        };
        if now.duration_since(at).as_secs_f64() < GPM_MIN_GAP_S {
            // Too close to the previous sample to measure: keep the older one.
            self.gpm_prev = Some((prev, at));
            return Ok(());
        }
        let nvml = self.nvml;
        let results = self.timed(Call::GpmMetrics, |_| {
            gpm_metrics_get(nvml, &prev, &new, &GPM_METRICS)
        });
        self.gpm_prev = Some((new, now));
        let results = match results {
            Ok(r) => r,
            Err(e) => {
                return match classify(&e, false) {
                    Failure::Lost => Err(DeviceError::Lost(format!("GPM: {e}"))),
                    Failure::Unsupported => {
                        self.unsupported.add(Call::Gpm);
                        Ok(())
                    }
                    Failure::Absent => Ok(()),
                }
            }
        };
        for r in results.into_iter().flatten() {
            let v = r.value;
            if !v.is_finite() {
                continue;
            }
            match r.metric_id {
                GpmMetricId::SmUtil => m.sm_active = Some(v),
                GpmMetricId::SmOccupancy => m.sm_occupancy = Some(v),
                GpmMetricId::AnyTensorUtil => m.tensor_active = Some(v),
                GpmMetricId::DramBwUtil => m.dram_active = Some(v),
                GpmMetricId::PcieRxPerSec => m.pcie_rx_bytes_per_s = Some(v * MIB),
                GpmMetricId::PcieTxPerSec => m.pcie_tx_bytes_per_s = Some(v * MIB),
                _ => {}
            }
        }
        Ok(())
    }

    /// This tick's metrics with memory in use and the limits known: memory info decides
    /// whether the GPU answers at all (a lost GPU is an error).
    fn memory(&mut self) -> Result<Metrics, DeviceError> {
        let mem = match self.timed(Call::Memory, |d| d.memory_info()) {
            Ok(m) => Some(m),
            Err(e) => match classify(&e, true) {
                Failure::Lost => return Err(DeviceError::Lost(format!("memory_info: {e}"))),
                Failure::Unsupported | Failure::Absent => None,
            },
        };
        Ok(Metrics {
            mem_used_bytes: mem.as_ref().map(|m| m.used),
            mem_total_bytes: mem
                .as_ref()
                .map(|m| m.total)
                .or(self.info.memory_total_bytes),
            power_limit_w: self.info.power_limit_watts,
            ..Default::default()
        })
    }

    /// The utilization into `m` (GPU and memory), and the driver windows new since the last read
    /// of its sample buffer when that read is due.
    fn utilization(
        &mut self,
        now: UnixTime,
        m: &mut Metrics,
    ) -> Result<Vec<UtilWindow>, DeviceError> {
        // The driver's current value first: it decides whether the buffer is due.
        let rates = self.call(Call::Utilization, |d| d.utilization_rates())?;
        if let Some(u) = &rates {
            self.cadence.polled(f64::from(u.gpu));
        }
        // The driver keeps several seconds of windows (14 s on the H200), so reading its buffer
        // once per SAMPLES_PERIOD_S (STEADY_PERIOD_S while nothing moves) still returns every
        // window, and that call is the costly one (about 2.8 ms on the H200, against
        // microseconds for the current value).
        let buffer_due = self.cadence.due(
            self.samples_at.map(|at| at.elapsed().as_secs_f64()),
            SAMPLES_PERIOD_S,
            SLOW_SLACK_S,
        );
        let read: Vec<(u64, f64)> = if buffer_due {
            self.samples_at = Some(Instant::now());
            let seen = self.merger.last_seen();
            self.call(Call::Samples, |d| d.samples(Sampling::GpuUtilization, seen))?
                .unwrap_or_default()
                .iter()
                .map(|s| (s.timestamp, sample_value(&s.value)))
                .collect()
        } else {
            Vec::new()
        };
        let util_windows = self.merger.merge(&read, now);
        if buffer_due {
            let values: Vec<f64> = util_windows.iter().map(|w| w.util).collect();
            self.cadence
                .read(&values, rates.as_ref().map(|u| f64::from(u.gpu)));
        }
        // The newest window when the buffer was read this tick; between reads, the driver's
        // current value (the same newest window, without the buffer's cost).
        m.util_gpu = util_windows
            .last()
            .map(|w| w.util)
            .or(rates.as_ref().map(|u| f64::from(u.gpu)));
        m.util_mem = rates.map(|u| f64::from(u.memory));
        Ok(util_windows)
    }

    /// The slow readings into `m`: read again when [`SLOW_PERIOD_S`] has passed, else the last.
    fn carry_slow_fields(&mut self, m: &mut Metrics) -> Result<(), DeviceError> {
        if self
            .slow
            .as_ref()
            .is_none_or(|(at, _)| at.elapsed().as_secs_f64() >= SLOW_PERIOD_S - SLOW_SLACK_S)
        {
            let slow = self.slow_fields()?;
            self.slow = Some((Instant::now(), slow));
        }
        if let Some((_, slow)) = &self.slow {
            super::values::carry_slow(m, slow);
        }
        Ok(())
    }

    /// The processes on the GPU with their memory, read once per [`PROCESS_PERIOD_S`], and their
    /// utilization, read once per [`PROCESS_UTIL_PERIOD_S`]; both carried between reads.
    fn processes(&mut self) -> Result<Vec<GpuProcess>, DeviceError> {
        let due = |at: &Instant, period: f64| at.elapsed().as_secs_f64() >= period - SLOW_SLACK_S;
        let mut procs = match &self.procs {
            Some((at, procs)) if !due(at, PROCESS_PERIOD_S) => procs.clone(),
            _ => {
                let compute = self
                    .call(Call::ComputeProcs, |d| d.running_compute_processes())?
                    .unwrap_or_default();
                let graphics = self
                    .call(Call::GraphicsProcs, |d| d.running_graphics_processes())?
                    .unwrap_or_default();
                let procs = merge_processes(&compute, &graphics);
                self.procs = Some((Instant::now(), procs.clone()));
                procs
            }
        };
        if procs.is_empty() {
            return Ok(procs);
        }
        if ProcessUtil::read_due(self.proc_util.as_ref(), &procs, Instant::now()) {
            let seen = self.proc_util_seen;
            // NotFound (no samples since the last read) leaves the processes' utilization absent.
            let stats = self.call(Call::ProcessUtil, |d| d.process_utilization_stats(seen))?;
            if let Some(ts) = stats.iter().flatten().map(|s| s.timestamp).max() {
                self.proc_util_seen = Some(ts);
            }
            self.proc_util = Some(ProcessUtil {
                at: Instant::now(),
                newest: stats.map(|s| newest_per_process(&s)),
                listed: procs.iter().map(|p| p.pid).collect(),
            });
        }
        if let Some(u) = &self.proc_util {
            u.apply(&mut procs);
        }
        Ok(procs)
    }
}

impl DeviceSampler for NvmlDeviceSampler {
    fn index(&self) -> u32 {
        self.info.index
    }

    fn measure_calls(&mut self) {
        self.costs.get_or_insert_with(Default::default);
    }

    fn call_costs(&self) -> Vec<(String, CallCost)> {
        self.costs
            .iter()
            .flat_map(|costs| Call::ALL.iter().zip(costs))
            .filter(|(_, c)| c.calls > 0)
            .map(|(call, c)| (format!("{call:?}"), *c))
            .collect()
    }

    fn sample(&mut self, now: UnixTime) -> Result<GpuReading, DeviceError> {
        let mut m = self.memory()?;
        let util_windows = self.utilization(now, &mut m)?;
        self.carry_slow_fields(&mut m)?;
        m.energy_j = self.energy()?;
        let (held, health) = self.health.tick(&self.device, now)?;
        m.throttle_held = held;
        let mut processes = self.processes()?;
        let mig = self.mig.as_mut().map(|r| r.read(&mut processes));

        Ok(GpuReading {
            index: self.info.index,
            status: GpuStatus::Ok,
            metrics: m,
            util_windows,
            processes,
            health,
            mig: mig.unwrap_or_default(),
            ..Default::default()
        })
    }

    fn take_events(&mut self) -> Vec<XidEvent> {
        self.xids
            .as_ref()
            .and_then(|(q, _)| q.lock().ok().map(|mut q| std::mem::take(&mut *q)))
            .unwrap_or_default()
    }
}
