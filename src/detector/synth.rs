//! Synthetic utilization for testing the detector: a job's idle gaps, seen through the H200's
//! 200 ms driver window and a 250 ms poller.
//!
//! A job is busy except in its gaps. Each driver window reports the busy share of its 200 ms,
//! rounded to a whole percent. A poller reading NVML's sample buffer every 250 ms gets every window
//! (some ticks two, some one); a poller like `nvidia-smi -lms 250` sees only the latest window at
//! each tick, so about one window in five is never seen ([`Polling::LatestOnly`]).

use crate::backend::sim::Rng;
use crate::model::{DeviceInfo, GpuReading, Metrics, Sample, SystemInfo, UnixTime, UtilWindow};

/// The driver's utilization window.
pub const WINDOW_S: f64 = 0.2;

/// How the poller reads the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Polling {
    /// Every window from the sample buffer (gpulse with NVML).
    EveryWindow,
    /// Only the latest window at each tick, as a tick reading (an nvidia-smi log).
    LatestOnly,
}

/// A job as a list of idle gaps `(start, end)` in seconds from its start, sorted.
#[derive(Debug, Clone, PartialEq)]
pub struct SynthJob {
    pub gaps: Vec<(f64, f64)>,
    pub duration_s: f64,
    /// Busy share of the time outside gaps (1.0 = a kernel always resident).
    pub level: f64,
}

impl SynthJob {
    /// Busy for `busy` of each `period`, idle for the rest, with relative jitter on both.
    pub fn periodic(period_s: f64, lost: f64, jitter: f64, seed: u64, duration_s: f64) -> Self {
        let mut rng = Rng::new(seed);
        let mut gaps = Vec::new();
        let mut t = rng.range(0.0, period_s);
        while t < duration_s {
            let busy = (period_s * (1.0 - lost) * (1.0 + rng.noise(jitter))).max(0.05);
            let gap = (period_s * lost * (1.0 + rng.noise(jitter))).max(0.05);
            gaps.push((t + busy, t + busy + gap));
            t += busy + gap;
        }
        SynthJob {
            gaps,
            duration_s,
            level: 1.0,
        }
    }

    /// Gaps at random times (exponential spacing around `mean_spacing_s`), lengths uniform in
    /// `gap_s`: no period to recover.
    pub fn noise(mean_spacing_s: f64, gap_s: (f64, f64), seed: u64, duration_s: f64) -> Self {
        let mut rng = Rng::new(seed);
        let mut gaps = Vec::new();
        let mut t = 0.0;
        loop {
            t += -mean_spacing_s * (1.0 - rng.f64()).ln();
            if t >= duration_s {
                break;
            }
            let len = rng.range(gap_s.0, gap_s.1);
            gaps.push((t, t + len));
            t += len;
        }
        SynthJob {
            gaps,
            duration_s,
            level: 1.0,
        }
    }

    /// One stall of `len_s` at `at_s`, busy otherwise.
    pub fn single_stall(at_s: f64, len_s: f64, duration_s: f64) -> Self {
        SynthJob {
            gaps: vec![(at_s, at_s + len_s)],
            duration_s,
            level: 1.0,
        }
    }

    /// Busy all the time at `level` (1.0: always a kernel resident).
    pub fn steady(level: f64, duration_s: f64) -> Self {
        SynthJob {
            gaps: Vec::new(),
            duration_s,
            level,
        }
    }

    /// Share of the job's time lost to gaps.
    pub fn lost_fraction(&self) -> f64 {
        let idle: f64 = self
            .gaps
            .iter()
            .map(|(a, b)| b.min(self.duration_s) - a.min(self.duration_s))
            .sum();
        idle / self.duration_s
    }

    /// Driver windows `(end, util%)` over the whole job.
    pub fn windows(&self) -> Vec<(f64, f64)> {
        let n = (self.duration_s / WINDOW_S).floor() as usize;
        let mut out = Vec::with_capacity(n);
        let mut gi = 0;
        for k in 0..n {
            let (a, b) = (k as f64 * WINDOW_S, (k + 1) as f64 * WINDOW_S);
            while gi < self.gaps.len() && self.gaps[gi].1 <= a {
                gi += 1;
            }
            let mut idle = 0.0;
            let mut j = gi;
            while j < self.gaps.len() && self.gaps[j].0 < b {
                idle += self.gaps[j].1.min(b) - self.gaps[j].0.max(a);
                j += 1;
            }
            let busy = ((WINDOW_S - idle) / WINDOW_S).clamp(0.0, 1.0) * self.level;
            out.push((b, (busy * 100.0).round()));
        }
        out
    }

    /// The samples a poller at `poll_s` would record, with the job starting at `t0`.
    pub fn samples(&self, t0: UnixTime, poll_s: f64, polling: Polling) -> Vec<Sample> {
        let windows = self.windows();
        let mut out = Vec::new();
        let mut wi = 0;
        let mut k = 1;
        loop {
            let t = k as f64 * poll_s;
            if t > self.duration_s {
                break;
            }
            let mut fresh = Vec::new();
            while wi < windows.len() && windows[wi].0 <= t + 1e-9 {
                fresh.push(UtilWindow {
                    t: t0 + windows[wi].0,
                    util: windows[wi].1,
                });
                wi += 1;
            }
            let latest = wi.checked_sub(1).map(|i| windows[i].1);
            let reading = GpuReading {
                index: 0,
                metrics: Metrics {
                    util_gpu: latest,
                    ..Default::default()
                },
                util_windows: match polling {
                    Polling::EveryWindow => fresh,
                    Polling::LatestOnly => Vec::new(),
                },
                ..Default::default()
            };
            out.push(Sample {
                t: t0 + t,
                gpus: vec![reading],
                ..Default::default()
            });
            k += 1;
        }
        out
    }
}

/// A one-GPU system for synthetic runs.
pub fn system() -> SystemInfo {
    SystemInfo {
        hostname: "synthetic".into(),
        backend: "synthetic".into(),
        devices: vec![DeviceInfo {
            index: 0,
            name: "synthetic GPU".into(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_report_the_busy_share() {
        let job = SynthJob::periodic(2.0, 0.5, 0.0, 3, 20.0);
        let w = job.windows();
        assert_eq!(w.len(), 100);
        let mean = w.iter().map(|x| x.1).sum::<f64>() / w.len() as f64;
        assert!((mean / 100.0 - (1.0 - job.lost_fraction())).abs() < 0.02);
        let s = job.samples(1000.0, 0.25, Polling::EveryWindow);
        assert_eq!(s.len(), 80);
        let total: usize = s.iter().map(|s| s.gpus[0].util_windows.len()).sum();
        assert_eq!(total, 100);
        let latest = job.samples(1000.0, 0.25, Polling::LatestOnly);
        assert!(latest.iter().all(|s| s.gpus[0].util_windows.is_empty()));
    }
}
