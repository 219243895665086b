//! What the detector keeps of a GPU's health between evaluations: the XIDs seen, the newest
//! health counters, and the corrected-error counts of the last minutes (to tell a rising count).

use std::collections::VecDeque;

use super::Detector;
use crate::history::{GpuHistory, TickMetrics};
use crate::model::{GpuHealth, UnixTime, XidEvent};

/// XIDs kept per GPU (the newest).
const MAX_XIDS: usize = 32;
/// How far back corrected-error counts are kept: a count that rose within this span is rising.
pub const RISING_SPAN_S: f64 = 600.0;

/// The health counters the rules judge, from the newest read.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct HealthRead {
    pub t: UnixTime,
    /// Uncorrectable ECC errors since the driver loaded.
    pub uncorrectable: Option<u64>,
    /// Rows remapped after uncorrectable errors, over the GPU's life.
    pub rows_uncorrectable: Option<u64>,
    /// A remap or page retirement waits for a reset.
    pub pending: bool,
    pub remap_failed: bool,
    /// Corrected ECC errors since the driver loaded.
    pub corrected: Option<u64>,
}

/// One GPU's health as the detector knows it.
#[derive(Debug, Clone, Default)]
pub struct HealthTrack {
    /// The XIDs seen, oldest first (the newest [`MAX_XIDS`]).
    pub xids: Vec<XidEvent>,
    pub latest: Option<HealthRead>,
    /// Rows remapped after uncorrectable errors at the first read: a rise since is new.
    pub rows_uncorrectable_first: Option<u64>,
    /// Corrected-error counts of the last [`RISING_SPAN_S`], oldest first.
    corrected: VecDeque<(UnixTime, u64)>,
    /// The newest tick at which a serious reason held the clocks (its bit set or its counter
    /// above 0): the throttle rule reads its window only when a reason held them within it.
    pub serious_throttle_at: Option<UnixTime>,
    /// The history's count of ticks pushed, and its newest tick's time, at the last look.
    throttle_seen: Option<(u64, UnixTime)>,
}

impl HealthTrack {
    /// Take in a tick's health read (when there was one) and its XIDs.
    pub fn note(&mut self, health: Option<&GpuHealth>, xids: &[XidEvent]) {
        self.xids.extend_from_slice(xids);
        if self.xids.len() > MAX_XIDS {
            self.xids.drain(..self.xids.len() - MAX_XIDS);
        }
        let Some(h) = health else {
            return;
        };
        let read = HealthRead {
            t: h.t,
            uncorrectable: h.ecc.volatile_uncorrected,
            rows_uncorrectable: h.remapped_rows.and_then(|r| r.uncorrectable),
            pending: h.pending_repair(),
            remap_failed: h.remap_failed(),
            corrected: h.ecc.volatile_corrected,
        };
        if self.rows_uncorrectable_first.is_none() {
            self.rows_uncorrectable_first = read.rows_uncorrectable;
        }
        if let Some(c) = read.corrected {
            // A count lower than the last is a driver reload: start again.
            if self.corrected.back().is_some_and(|(_, last)| c < *last) {
                self.corrected.clear();
            }
            self.corrected.push_back((h.t, c));
            while self
                .corrected
                .front()
                .is_some_and(|(t, _)| *t < h.t - RISING_SPAN_S)
            {
                self.corrected.pop_front();
            }
        }
        self.latest = Some(read);
    }

    /// Look at the ticks of `h` added since the last look for a serious reason holding the
    /// clocks.
    pub fn watch_throttle(&mut self, h: &GpuHistory) {
        let Some(last) = h.ticks.last() else {
            return;
        };
        let pushed = h.ticks.pushed();
        // Another history, or time went back (a recording read again): look at every tick.
        if self
            .throttle_seen
            .is_some_and(|(n, t)| pushed < n || last.t < t)
        {
            self.throttle_seen = None;
            self.serious_throttle_at = None;
        }
        let new = pushed - self.throttle_seen.map_or(0, |(n, _)| n);
        self.throttle_seen = Some((pushed, last.t));
        let held = |tk: &TickMetrics| tk.metrics.throttle_held.any_serious(tk.metrics.throttle);
        // One new tick at each look (a plain check, no walk back).
        let found = if new == 1 {
            held(last).then_some(last.t)
        } else {
            let new = usize::try_from(new).unwrap_or(usize::MAX);
            h.ticks
                .iter_rev()
                .take(new)
                .find(|tk| held(tk))
                .map(|tk| tk.t)
        };
        if found.is_some() {
            self.serious_throttle_at = found;
        }
    }

    /// Corrected errors added over the counts kept (the last [`RISING_SPAN_S`]) and the span
    /// they cover; `None` without two counts.
    pub fn corrected_rise(&self) -> Option<(u64, f64)> {
        let (first, last) = (self.corrected.front()?, self.corrected.back()?);
        (last.0 > first.0).then(|| (last.1.saturating_sub(first.1), last.0 - first.0))
    }

    /// Rows remapped after uncorrectable errors since the first read.
    pub fn new_uncorrectable_rows(&self) -> u64 {
        match (
            self.rows_uncorrectable_first,
            self.latest.and_then(|l| l.rows_uncorrectable),
        ) {
            (Some(first), Some(now)) => now.saturating_sub(first),
            _ => 0,
        }
    }
}

impl Detector {
    /// Take in the health read of GPU `pos` at this tick, when there was one, and the XIDs that
    /// arrived.
    pub fn note_health(&mut self, pos: usize, health: Option<&GpuHealth>, xids: &[XidEvent]) {
        if health.is_none() && xids.is_empty() {
            return;
        }
        if let Some(state) = self.gpus.get_mut(pos) {
            state.health.note(health, xids);
            // A new XID is judged at the next tick, not at the next evaluation.
            if !xids.is_empty() {
                self.next_eval = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{EccCounts, RemappedRows};

    fn read(t: f64, corrected: u64, rows: u64) -> GpuHealth {
        GpuHealth {
            t,
            ecc: EccCounts {
                volatile_corrected: Some(corrected),
                volatile_uncorrected: Some(0),
                ..Default::default()
            },
            remapped_rows: Some(RemappedRows {
                uncorrectable: Some(rows),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_corrected_count_rises_over_the_span_kept() {
        let mut h = HealthTrack::default();
        assert_eq!(h.corrected_rise(), None);
        h.note(Some(&read(0.0, 10, 2)), &[]);
        h.note(Some(&read(5.0, 10, 2)), &[]);
        assert_eq!(h.corrected_rise(), Some((0, 5.0)));
        h.note(Some(&read(10.0, 14, 3)), &[]);
        assert_eq!(h.corrected_rise(), Some((4, 10.0)));
        assert_eq!(h.new_uncorrectable_rows(), 1);
        // Older than the span: forgotten, and one count tells no rise.
        h.note(Some(&read(700.0, 14, 3)), &[]);
        assert_eq!(h.corrected_rise(), None);
        h.note(Some(&read(705.0, 15, 3)), &[]);
        assert_eq!(h.corrected_rise(), Some((1, 5.0)));
        // A driver reload starts the counts again.
        h.note(Some(&read(710.0, 1, 3)), &[]);
        assert_eq!(h.corrected_rise(), None);
    }

    #[test]
    fn only_the_newest_xids_are_kept() {
        let mut h = HealthTrack::default();
        let xids: Vec<XidEvent> = (0..40)
            .map(|k| XidEvent {
                t: f64::from(k),
                xid: 13,
            })
            .collect();
        h.note(None, &xids);
        assert_eq!(h.xids.len(), MAX_XIDS);
        assert_eq!(h.xids[0].t, 8.0);
    }

    #[test]
    fn a_serious_reason_is_noted_at_the_newest_tick_it_held() {
        use crate::model::{throttle, Metrics, ThrottleReason};
        let tick = |t: f64, bits: u64, thermal: f32| {
            let mut m = Metrics {
                throttle: Some(bits),
                ..Default::default()
            };
            m.throttle_held
                .set(ThrottleReason::HwThermal, Some(thermal));
            TickMetrics {
                t,
                ok: true,
                metrics: m,
            }
        };
        let mut hist = GpuHistory::new(60.0, 0.25);
        let mut h = HealthTrack::default();
        hist.ticks.push(tick(0.0, throttle::SW_POWER_CAP, 0.0));
        h.watch_throttle(&hist);
        assert_eq!(h.serious_throttle_at, None);
        // A counter above 0, then a bit; then a tick no reason held.
        hist.ticks.push(tick(0.25, 0, 0.3));
        h.watch_throttle(&hist);
        assert_eq!(h.serious_throttle_at, Some(0.25));
        hist.ticks.push(tick(0.5, throttle::HW_SLOWDOWN, 0.0));
        hist.ticks.push(tick(0.75, 0, 0.0));
        h.watch_throttle(&hist);
        assert_eq!(h.serious_throttle_at, Some(0.5));
        // A recording read again from its start.
        let mut again = GpuHistory::new(60.0, 0.25);
        again.ticks.push(tick(0.0, 0, 0.0));
        h.watch_throttle(&again);
        assert_eq!(h.serious_throttle_at, None);
    }
}
