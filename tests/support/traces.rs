//! The recorded inputs read back for the tests: a 50 ms NVML poller's trace (`poller.csv`) as a
//! live gpulse run would see it, and the true burst period of a job, from the poller's readings
//! or from a recording's 200 ms driver windows.

use std::path::Path;

use super::api::{
    DeviceInfo, GpuReading, Metrics, RecordingReader, Sample, SampleSource, SystemInfo, UtilWindow,
};
use super::labels::{Folder, Input, Label};

/// The true period of `label`'s job: the job's own count (`period_s`) where the label has one,
/// else the median spacing of burst starts in its recording's driver windows, else in its
/// poller's readings. `None` with fewer than four spacings.
pub fn true_period(folder: &Folder, label: &Label) -> Option<f64> {
    if label.period_s.is_some() {
        return label.period_s;
    }
    if let Some(path) = folder.input(Input::Recording) {
        return recording_burst_period(&path, label);
    }
    folder
        .input(Input::Poller)
        .and_then(|p| poller_burst_period(&p))
}

/// The median spacing of burst starts in a recording's 200 ms driver windows (a window of at
/// least 20% of the peak after at least 0.35 s of windows below 5% of it), from
/// 1 s after `onset` (the last fast steps end) to `recovered` where the label has them; with
/// several bursts to a cycle (`bursts_per_cycle`), the spacing of every so many bursts.
pub fn recording_burst_period(path: &Path, label: &Label) -> Option<f64> {
    let mut reader = RecordingReader::open(path).expect("recording");
    let (lo, hi) = (
        label.onset.map_or(f64::MIN, |o| o + 1.0),
        label.recovered.unwrap_or(f64::MAX),
    );
    let mut windows = Vec::new();
    while let Some(s) = reader.next_sample() {
        windows.extend(
            s.gpus[0]
                .util_windows
                .iter()
                .filter(|w| (lo..=hi).contains(&w.t))
                .map(|w| (w.t, w.util)),
        );
    }
    median_spacing(&burst_starts(&windows, 0.35), label.bursts_per_cycle())
}

/// The median spacing of burst starts in a poller's 50 ms readings (a reading of at least 20%
/// of the peak after at least 0.3 s below 5% of it).
pub fn poller_burst_period(path: &Path) -> Option<f64> {
    let text = std::fs::read_to_string(path).ok()?;
    let rows: Vec<(f64, f64)> = text
        .lines()
        .skip(1)
        .filter_map(|l| {
            let mut c = l.split(',');
            Some((c.next()?.parse().ok()?, c.next()?.parse().ok()?))
        })
        .collect();
    median_spacing(&burst_starts(&rows, 0.3), 1)
}

/// The times at which bursts start in `(t, util)` readings: a reading of at least 20% of the
/// peak after at least `quiet_s` of readings below 5% of it.
fn burst_starts(readings: &[(f64, f64)], quiet_s: f64) -> Vec<f64> {
    let peak = readings.iter().map(|r| r.1).fold(0.0, f64::max);
    let mut starts = Vec::new();
    let mut quiet_since: Option<f64> = None;
    for &(t, u) in readings {
        if u < peak / 20.0 {
            quiet_since.get_or_insert(t);
        } else {
            if u >= peak / 5.0 && quiet_since.is_some_and(|q| t - q >= quiet_s) {
                starts.push(t);
            }
            quiet_since = None;
        }
    }
    starts
}

/// The median spacing of every `k`-th start; `None` with fewer than four spacings.
fn median_spacing(starts: &[f64], k: usize) -> Option<f64> {
    let mut sp: Vec<f64> = starts.windows(k + 1).map(|w| w[k] - w[0]).collect();
    if sp.len() < 4 {
        return None;
    }
    sp.sort_by(|a, b| a.total_cmp(b));
    Some(sp[sp.len() / 2])
}

/// A poller's trace as a live gpulse run would see it: a tick every 250 ms with GPM SM
/// activity, PCIe and throttle bits, and every 200 ms driver window.
pub struct PollerSource {
    system: SystemInfo,
    samples: std::vec::IntoIter<Sample>,
}

/// The poller's columns, by name.
struct Columns {
    t: usize,
    util: usize,
    util_mem: usize,
    mem: usize,
    power: usize,
    sm_mhz: usize,
    temp: usize,
    tx: usize,
    rx: usize,
    throttle: usize,
    sm_active: usize,
    sm_occupancy: usize,
    tensor: usize,
    dram: usize,
}

impl Columns {
    fn of(header: &str) -> Columns {
        let names: Vec<&str> = header.split(',').collect();
        let col = |n: &str| names.iter().position(|h| *h == n).expect(n);
        Columns {
            t: col("t"),
            util: col("util_gpu"),
            util_mem: col("util_mem"),
            mem: col("mem_used_mib"),
            power: col("power_w"),
            sm_mhz: col("sm_mhz"),
            temp: col("temp_c"),
            tx: col("pcie_tx_kbs"),
            rx: col("pcie_rx_kbs"),
            throttle: col("throttle_bits"),
            sm_active: col("gpm_sm_util"),
            sm_occupancy: col("gpm_sm_occ"),
            tensor: col("gpm_tensor"),
            dram: col("gpm_dram_bw"),
        }
    }

    /// A tick's metrics from a 250 ms row (the one that carries the slow fields).
    fn metrics(&self, num: impl Fn(usize) -> Option<f64>) -> Metrics {
        Metrics {
            util_gpu: num(self.util),
            util_mem: num(self.util_mem),
            mem_used_bytes: num(self.mem).map(|m| (m * 1048576.0) as u64),
            mem_total_bytes: Some(143_771 * 1048576),
            power_w: num(self.power),
            power_limit_w: Some(700.0),
            temp_c: num(self.temp),
            sm_clock_mhz: num(self.sm_mhz).map(|x| x as u32),
            pcie_gen: Some(5),
            pcie_width: Some(16),
            pcie_rx_bytes_per_s: num(self.rx).map(|k| k * 1000.0),
            pcie_tx_bytes_per_s: num(self.tx).map(|k| k * 1000.0),
            sm_active: num(self.sm_active),
            sm_occupancy: num(self.sm_occupancy),
            tensor_active: num(self.tensor),
            dram_active: num(self.dram),
            throttle: num(self.throttle).map(|b| b as u64),
            ..Default::default()
        }
    }
}

impl PollerSource {
    pub fn open(path: &Path) -> Self {
        let text =
            std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut lines = text.lines();
        let cols = Columns::of(lines.next().expect("header"));
        let mut samples = Vec::new();
        let mut windows = Vec::new();
        let mut last_window = f64::MIN;
        for line in lines {
            let c: Vec<&str> = line.split(',').collect();
            let num = |i: usize| c.get(i).and_then(|v| v.parse::<f64>().ok());
            let Some(time) = num(cols.t) else { continue };
            if time - last_window >= 0.199 {
                if let Some(util) = num(cols.util) {
                    windows.push(UtilWindow { t: time, util });
                    last_window = time;
                }
            }
            // The 250 ms rows carry the slow fields: one tick each.
            if num(cols.rx).is_none() {
                continue;
            }
            samples.push(Sample {
                t: time,
                gpus: vec![GpuReading {
                    index: 0,
                    metrics: cols.metrics(num),
                    util_windows: std::mem::take(&mut windows),
                    ..Default::default()
                }],
                ..Default::default()
            });
        }
        PollerSource {
            system: h200_system(),
            samples: samples.into_iter(),
        }
    }

    /// The same trace with its SM activity mapped through `f`.
    pub fn map_sm(mut self, f: impl Fn(f64) -> f64) -> Self {
        let v: Vec<Sample> = self
            .samples
            .map(|mut s| {
                s.gpus[0].metrics.sm_active = s.gpus[0].metrics.sm_active.map(&f);
                s
            })
            .collect();
        self.samples = v.into_iter();
        self
    }
}

/// The one H200 the poller read.
fn h200_system() -> SystemInfo {
    SystemInfo {
        hostname: "h200".into(),
        backend: "trace".into(),
        devices: vec![DeviceInfo {
            index: 0,
            name: "NVIDIA H200".into(),
            memory_total_bytes: Some(143_771 * 1048576),
            power_limit_watts: Some(700.0),
            pcie_gen_max: Some(5),
            pcie_width_max: Some(16),
            gpm_supported: true,
            ..Default::default()
        }],
        ..Default::default()
    }
}

impl SampleSource for PollerSource {
    fn system(&self) -> &SystemInfo {
        &self.system
    }
    fn next_sample(&mut self) -> Option<Sample> {
        self.samples.next()
    }
}
