//! One GPU's utilization samples of the last `window_s`, as the detector keeps them between
//! evaluations: the readings that arrived since the last tick are appended, those older than the
//! window (or than the current job) leave it.

use std::collections::VecDeque;

use super::signal::{WindowHist, GRID_S};
use super::DetectorConfig;
use crate::history::GpuHistory;
use crate::model::UnixTime;

/// The samples of the window and what is kept alongside them.
#[derive(Debug, Default)]
pub(super) struct Window {
    /// Utilization samples `(t, percent)` of the window, oldest first.
    pub ts: VecDeque<f64>,
    pub us: VecDeque<f32>,
    /// Histograms of `us`.
    pub hist: WindowHist,
    last_t: Option<f64>,
    /// The lowest and highest samples taken in since the last full analysis.
    pub low_since: f32,
    pub high_since: f32,
    /// The last power reading of a polled source and the time of its tick (see
    /// [`Window::fill_missed_burst`]).
    last_power: Option<f64>,
    power_t: Option<UnixTime>,
    /// The last reading taken as a missed burst: its time and the value the source read.
    filled: Option<(UnixTime, f32)>,
}

/// Activity in the last rules window of samples.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct RecentActivity {
    pub mean: Option<f64>,
    /// Seconds with activity (≥ `idle_util`), each reading standing for the time to the next.
    pub active_s: f64,
    /// Separate bursts of activity.
    pub bursts: usize,
}

impl Window {
    pub fn new(cfg: &DetectorConfig) -> Self {
        Window {
            hist: WindowHist::new(cfg.idle_util),
            low_since: f32::INFINITY,
            high_since: f32::NEG_INFINITY,
            ..Default::default()
        }
    }

    /// The readings of `h` newer than the window's latest into `fresh`: the driver windows that
    /// arrived, or, from a source without them, the tick's own reading.
    pub fn take_fresh(&self, h: &GpuHistory, fresh: &mut Vec<(f64, f32)>) {
        let last = self.last_t;
        fresh.clear();
        if h.util.is_empty() {
            if let Some(tk) = h.ticks.last() {
                if let Some(u) = tk
                    .metrics
                    .util_gpu
                    .filter(|_| last.is_none_or(|l| tk.t > l))
                {
                    fresh.push((tk.t, u as f32));
                }
            }
            return;
        }
        for w in h.util.iter_rev() {
            if last.is_some_and(|l| w.t <= l) {
                break;
            }
            fresh.push((w.t, w.util as f32));
        }
        fresh.reverse();
    }

    /// Append `fresh` and drop the samples before `keep_from`.
    pub fn push(&mut self, fresh: &[(f64, f32)], keep_from: UnixTime) {
        for &(t, u) in fresh {
            self.ts.push_back(t);
            self.us.push_back(u);
            self.hist.add(u);
            self.last_t = Some(t);
            self.low_since = self.low_since.min(u);
            self.high_since = self.high_since.max(u);
        }
        while self.ts.front().is_some_and(|t| *t < keep_from) {
            self.ts.pop_front();
            if let Some(u) = self.us.pop_front() {
                self.hist.remove(u);
            }
        }
    }

    /// A full analysis was made: the extremes start again.
    pub fn analysed(&mut self) {
        self.low_since = f32::INFINITY;
        self.high_since = f32::NEG_INFINITY;
    }

    /// The activity of the samples since `from`, newest first over plain slices.
    pub fn recent_activity(&mut self, from: UnixTime, cfg: &DetectorConfig) -> RecentActivity {
        let (mut rn, mut rsum) = (0usize, 0.0f64);
        let (mut active_s, mut bursts, mut next_t) = (0.0f64, 0usize, None::<f64>);
        let mut active_n = 0usize;
        let mut next_active = false;
        let (ts, us) = (self.ts.make_contiguous(), self.us.make_contiguous());
        for (tt, u) in ts.iter().zip(us.iter()).rev() {
            if *tt < from {
                break;
            }
            rn += 1;
            rsum += *u as f64;
            let active = *u as f64 >= cfg.idle_util;
            if active {
                active_n += 1;
                // Each reading stands for the time to the next one (at most a second).
                active_s += next_t.map_or(GRID_S, |n| (n - tt).clamp(0.0, 1.0));
            } else if next_active {
                bursts += 1;
            }
            next_active = active;
            next_t = Some(*tt);
        }
        bursts += usize::from(next_active);
        // A source that reads seldom (a scrape every 15 s) has few readings, each standing for
        // its whole interval: most of them active is evidence too.
        if rn >= 2 && active_n * 2 >= rn {
            active_s = active_s.max(cfg.busy_evidence_s);
        }
        RecentActivity {
            mean: (rn > 0).then(|| rsum / rn as f64),
            active_s,
            bursts,
        }
    }

    /// A polled source (one reading per poll, not every driver window) misses some bursts that
    /// fall between its polls, while the power, a ~1 s average, rises at every one: a reading
    /// that shows no activity on a tick whose power rose by at least `power_burst_w` (and
    /// `power_burst_share` of the earlier reading) becomes the busy level of the window's active
    /// readings (with none yet there is no scale, and it stays as it is). A missed burst
    /// followed by a reading that shows activity was caught after all (the power rose a tick
    /// before the source's utilization did), and goes back to what the source read: left
    /// filled, a burst caught at a third of the busy level would stand beside one at the full
    /// level, and the caught bursts without a rise before them would end no dip.
    pub fn fill_missed_burst(
        &mut self,
        h: &GpuHistory,
        fresh: &mut [(f64, f32)],
        cfg: &DetectorConfig,
    ) {
        self.caught_after_all(fresh);
        let Some(tk) = h
            .ticks
            .last()
            .filter(|tk| self.power_t.is_none_or(|t| tk.t > t))
        else {
            return;
        };
        self.power_t = Some(tk.t);
        let power = tk.metrics.power_w;
        let rose = match (self.last_power, power) {
            (Some(q), Some(p)) => p - q >= cfg.power_burst_w.max(cfg.power_burst_share * q),
            _ => false,
        };
        self.last_power = power.or(self.last_power);
        if !rose {
            return;
        }
        if let (Some(m), Some(reading)) = (self.hist.busy_level(), fresh.last_mut()) {
            if !self.hist.active(reading.1 as f64) {
                self.filled = Some((reading.0, reading.1));
                reading.1 = m as f32;
            }
        }
    }

    /// See [`Window::fill_missed_burst`].
    fn caught_after_all(&mut self, fresh: &[(f64, f32)]) {
        let Some(&(_, next)) = fresh.first() else {
            return;
        };
        let Some((t, read)) = self.filled.take() else {
            return;
        };
        if !self.hist.active(next as f64) || self.ts.back() != Some(&t) {
            return;
        }
        if let Some(u) = self.us.back_mut() {
            self.hist.remove(*u);
            self.hist.add(read);
            *u = read;
        }
    }
}
