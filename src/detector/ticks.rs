//! The tick readings of the last `rules_window_s` (SM activity, power, PCIe, memory, clock
//! events), reduced to what the rules need.

use super::DetectorConfig;
use crate::history::GpuHistory;
use crate::model::{DeviceInfo, Metrics, UnixTime};

/// Readings of the recent ticks, reduced to what the rules need.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TickSummary {
    pub ticks: usize,
    pub util_mean: Option<f64>,
    pub sm_mean: Option<f64>,
    pub power_mean: Option<f64>,
    pub power_limit: Option<f64>,
    pub rx_mean: Option<f64>,
    pub mem_used_first: Option<u64>,
    pub mem_used_last: Option<u64>,
    pub mem_total: Option<u64>,
    pub busy_ticks: usize,
    /// Busy ticks with the PCIe link below its maximum, and the lowest gen/width seen.
    pub degraded_ticks: usize,
    pub link_seen: Option<(u32, u32)>,
    pub link_current: Option<(u32, u32)>,
    /// The last tick on which no process held a context on the GPU, and the first tick of that
    /// stretch without one (see [`TickSummary::of_the_current_job`]).
    pub no_context_at: Option<UnixTime>,
    pub context_lost_at: Option<UnixTime>,
    /// Since when the memory in use has stayed at its latest reading (within the steady band):
    /// within the ticks summarised, or, steady over all of them, since it settled in the
    /// detector's longer memory of the GPU; `None` without memory readings.
    pub mem_steady_since: Option<UnixTime>,
    /// The most power the GPU drew on a tick at or above `busy_util`, over everything the
    /// detector has seen of it (not only the rules window).
    pub busy_power_peak: Option<f64>,
    /// The ticks busy with compute (SM activity at least `tensor_idle_min_sm`, with tensor and
    /// DRAM activity read).
    pub compute: ComputeTicks,
}

/// The ticks busy with compute (SM activity at least `tensor_idle_min_sm`) that also read
/// tensor-core and DRAM activity: how many, and their mean SM, tensor and DRAM activity
/// (percent). None of them on a source that does not read the three.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ComputeTicks {
    pub ticks: usize,
    pub sm_mean: f64,
    pub tensor_mean: f64,
    pub dram_mean: f64,
}

impl ComputeTicks {
    #[inline]
    fn add(&mut self, sm: f64, tensor: f64, dram: f64) {
        self.ticks += 1;
        self.sm_mean += sm;
        self.tensor_mean += tensor;
        self.dram_mean += dram;
    }

    /// The sums added turned into means.
    fn finish(mut self) -> Self {
        if self.ticks > 0 {
            let n = self.ticks as f64;
            self.sm_mean /= n;
            self.tensor_mean /= n;
            self.dram_mean /= n;
        }
        self
    }
}

/// How far memory in use may move from `bytes` and still be steady (`mem_steady_share` of it,
/// or `mem_steady_mib`, whichever is more): a job starting up moves it by GiBs, a job waiting
/// for its input holds the same MiB for minutes.
pub fn mem_steady_band(bytes: u64, cfg: &DetectorConfig) -> u64 {
    DetectorConfig::bytes(cfg.mem_steady_mib).max((cfg.mem_steady_share * bytes as f64) as u64)
}

impl TickSummary {
    /// Whether a pattern whose first and last cycles (or stalls) began at `first` and `last`
    /// belongs to the job on the GPU now. A pattern belongs to one job: when the GPU had no
    /// context after its first cycle, the cycles before were an ended job's, and it goes on only
    /// with `n` of its cycles (`spacing` apart) after that (the same job started again), not with
    /// the next job's start-up blips. A pattern seen as its job ended (within `job_end_grace_s`
    /// of the context going) still counts.
    pub fn of_the_current_job(
        &self,
        (first, last): (UnixTime, UnixTime),
        spacing: f64,
        n: usize,
        now: UnixTime,
        cfg: &DetectorConfig,
    ) -> bool {
        let Some(gone) = self.no_context_at.filter(|&t| t >= first) else {
            return true;
        };
        let just_ended = gone >= now - 0.5 * spacing.min(1.0)
            && self
                .context_lost_at
                .is_some_and(|l| now - l <= cfg.job_end_grace_s);
        just_ended || last - gone >= n.saturating_sub(1) as f64 * spacing
    }
}

/// The mean of the readings present, summed in the order given.
#[derive(Debug, Default, Clone, Copy)]
struct Mean {
    n: usize,
    sum: f64,
}

impl Mean {
    #[inline]
    fn add(&mut self, v: Option<f64>) {
        if let Some(v) = v {
            self.n += 1;
            self.sum += v;
        }
    }

    fn get(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / self.n as f64)
    }
}

/// Reduce the ticks since `since` to what the rules need; a tick at or above `busy_util` is
/// busy. (Not inlined: inside the caller its loop compiled to more instructions, and how many
/// changed with unrelated code.)
#[inline(never)]
pub fn summarise(
    h: &GpuHistory,
    since: UnixTime,
    busy_util: f64,
    cfg: &DetectorConfig,
) -> TickSummary {
    let mut sums = Sums::new(busy_util, cfg);
    // Newest first, a plain loop per chunk of history.
    'ticks: for chunk in h.ticks.chunks_rev() {
        for tk in chunk.iter().rev() {
            if tk.t < since {
                break 'ticks;
            }
            if !tk.ok {
                continue;
            }
            sums.add(tk.t, &tk.metrics);
        }
    }
    sums.finish(since)
}

/// The running reduction of [`summarise`], fed the ticks newest first.
struct Sums<'a> {
    s: TickSummary,
    util: Mean,
    sm: Mean,
    power: Mean,
    rx: Mean,
    /// Memory in use still at its latest reading (within `band` of it), going back.
    steady: bool,
    band: u64,
    busy_util: f64,
    cfg: &'a DetectorConfig,
}

impl<'a> Sums<'a> {
    /// Nothing summed yet.
    fn new(busy_util: f64, cfg: &'a DetectorConfig) -> Self {
        Sums {
            s: TickSummary::default(),
            util: Mean::default(),
            sm: Mean::default(),
            power: Mean::default(),
            rx: Mean::default(),
            steady: true,
            band: 0,
            busy_util,
            cfg,
        }
    }

    /// Add one readable tick at `t`, older than every tick added before.
    #[inline]
    fn add(&mut self, t: UnixTime, m: &Metrics) {
        let s = &mut self.s;
        s.ticks += 1;
        self.util.add(m.util_gpu);
        self.sm.add(m.sm_active);
        self.power.add(m.power_w);
        self.rx.add(m.pcie_rx_bytes_per_s);
        if s.power_limit.is_none() {
            s.power_limit = m.power_limit_w;
        }
        if let (Some(sm), Some(tensor), Some(dram)) = (m.sm_active, m.tensor_active, m.dram_active)
        {
            if sm >= self.cfg.tensor_idle_min_sm {
                s.compute.add(sm, tensor, dram);
            }
        }
        if let Some(used) = m.mem_used_bytes {
            self.add_memory(t, used);
        }
        let s = &mut self.s;
        if s.mem_total.is_none() {
            s.mem_total = m.mem_total_bytes;
        }
        if let (Some(g), Some(w)) = (m.pcie_gen, m.pcie_width) {
            s.link_current.get_or_insert((g, w));
        }
        if m.util_gpu.is_some_and(|u| u >= self.busy_util) {
            s.busy_ticks += 1;
        }
    }

    /// Track memory in use: the first and last readings, and how far back it stayed steady
    /// (within the band of the latest reading).
    #[inline]
    fn add_memory(&mut self, t: UnixTime, used: u64) {
        let s = &mut self.s;
        let last = match s.mem_used_last {
            Some(last) => last,
            None => {
                self.band = mem_steady_band(used, self.cfg);
                *s.mem_used_last.insert(used)
            }
        };
        s.mem_used_first = Some(used);
        if self.steady {
            self.steady = used.abs_diff(last) <= self.band;
            if self.steady {
                s.mem_steady_since = Some(t);
            }
        }
    }

    /// The summary of the ticks added, the earliest of them at or after `since`.
    fn finish(self, since: UnixTime) -> TickSummary {
        let mut s = self.s;
        if self.steady {
            // Steady over every tick summarised: as far back as they go.
            s.mem_steady_since = s.mem_steady_since.map(|t| t.min(since));
        }
        s.util_mean = self.util.get();
        s.sm_mean = self.sm.get();
        s.power_mean = self.power.get();
        s.rx_mean = self.rx.get();
        s.compute = s.compute.finish();
        s
    }
}

/// Count the busy ticks whose link is below the device's maximum (needs the maximum to judge).
pub fn degraded_link(
    s: &mut TickSummary,
    h: &GpuHistory,
    dev: &DeviceInfo,
    since: UnixTime,
    busy_util: f64,
) {
    let (Some(gm), Some(wm)) = (dev.pcie_gen_max, dev.pcie_width_max) else {
        return;
    };
    for tk in h.ticks.iter_rev() {
        if tk.t < since {
            break;
        }
        let m = &tk.metrics;
        if !tk.ok || !m.util_gpu.is_some_and(|u| u >= busy_util) {
            continue;
        }
        if let (Some(g), Some(w)) = (m.pcie_gen, m.pcie_width) {
            if g < gm || w < wm {
                s.degraded_ticks += 1;
                s.link_seen = Some((g, w));
            }
        }
    }
}
