//! One simulated job's kernel activity: segments of work and waiting, generated lazily.

use std::collections::VecDeque;

use super::{Rng, Scenario, GIB, TOTAL_MEM};

/// A stretch of time with one kind of activity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Segment {
    start: f64,
    end: f64,
    /// Share of time with a kernel resident while in this segment.
    pub(super) level: f64,
    /// How much of the SMs the kernels use when resident (SM activity = level × this).
    pub(super) sm_eff: f64,
    /// Host-to-device bytes per second during this segment.
    pub(super) rx_bps: f64,
    /// Device-to-host bytes per second during this segment.
    pub(super) tx_bps: f64,
}

/// Generates one job's activity as segments, extended lazily as time advances.
#[derive(Debug, Clone)]
pub(super) struct Job {
    pub(super) kind: Scenario,
    rng: Rng,
    segments: VecDeque<Segment>,
    horizon: f64,
    /// Period and busy share for starving jobs (varies per GPU and seed).
    period: f64,
    busy: f64,
    pub(super) mem_bytes: u64,
}

impl Job {
    pub(super) fn new(kind: Scenario, seed: u64, index: u32) -> Self {
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
    pub(super) fn extend(&mut self, until: f64) {
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
                Scenario::Mixed | Scenario::Faulty | Scenario::Shared => {
                    self.kind = Scenario::Healthy
                }
            }
        }
    }

    /// Forget segments that ended before `t`.
    pub(super) fn trim(&mut self, t: f64) {
        while self.segments.len() > 1 && self.segments.front().is_some_and(|s| s.end < t) {
            self.segments.pop_front();
        }
    }

    /// Time-weighted mean of `f(segment)` over [a, b).
    pub(super) fn mean(&mut self, a: f64, b: f64, f: impl Fn(&Segment) -> f64) -> f64 {
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
