//! Merging reads of the driver's utilization sample buffer into a stream of windows.
//!
//! `nvmlDeviceGetSamples(GPU_UTILIZATION_SAMPLES, last_seen)` returns the driver's samples (one
//! per 200 ms window on the H200) newer than `last_seen`, stamped in the driver's microseconds.
//! A read may overlap the previous one, repeat a sample, come out of order, or be empty when the
//! GPU is idle. [`SampleBufferMerger`] turns successive reads into each completed window exactly
//! once, on the wall clock.

use crate::model::{UnixTime, UtilWindow};

/// On the first read (or after the driver's clock restarts) keep only this much of the buffer:
/// the driver may hold minutes of old windows that the user did not ask to see.
pub const FIRST_READ_KEEP_S: f64 = 5.0;

/// When the offset implied by a read differs from the one in use by more than this, the driver's
/// clock or the wall clock has jumped: start again from the new offset.
pub const CLOCK_JUMP_S: f64 = 2.0;

/// How far ahead of the read time a driver stamp may lie and still count as wall-clock time
/// (the two clocks are read a little apart).
const EPOCH_SLACK_S: f64 = 0.5;

/// Seconds between buffer reads while neither the polled utilization nor the recent windows show
/// a dip: a third of the 14 s the H200's buffer holds, so no window is lost, and a third of the
/// reads (each 2.2–2.8 ms of CPU there) on a steadily busy or idle GPU.
pub const STEADY_PERIOD_S: f64 = 6.0;

/// Reads at the short period after the last one that saw a dip: the burst of a job that waits
/// seconds for each batch can be a single window, which the 250 ms polling often misses.
const CALM_READS: u32 = 4;

/// A value below this share of the highest one around it is a dip (the detector's `dip_enter`).
const DIP_SHARE: f64 = 0.5;

/// A highest value below this (percent) is an idle GPU: nothing to dip from.
const IDLE_UTIL: f64 = 5.0;

/// Whether the values from `lo` to `hi` hold a dip (or a GPU going idle or busy).
fn dips((lo, hi): (f64, f64)) -> bool {
    hi >= IDLE_UTIL && lo < DIP_SHARE * hi
}

/// The lowest and highest of `values`.
fn range(values: &[f64]) -> Option<(f64, f64)> {
    let (&first, rest) = values.split_first()?;
    Some(
        rest.iter()
            .fold((first, first), |(lo, hi), &u| (lo.min(u), hi.max(u))),
    )
}

/// When to read the driver's utilization buffer. While the driver's current value (polled every
/// tick, microseconds) or the windows of the last [`CALM_READS`] reads hold a dip or a change
/// between idle and busy, the buffer is read every `period_s`: the detector needs those windows
/// soon. Otherwise every [`STEADY_PERIOD_S`], and the windows of a steady GPU arrive later, still
/// every one of them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BufferCadence {
    /// Lowest and highest polled value since the last read (from the newest window it returned).
    polled: Option<(f64, f64)>,
    /// Reads in a row whose windows and polls showed no dip.
    calm: u32,
}

impl BufferCadence {
    /// Take one polled value (percent).
    pub fn polled(&mut self, u: f64) {
        self.polled = Some(match self.polled {
            Some((lo, hi)) => (lo.min(u), hi.max(u)),
            None => (u, u),
        });
    }

    /// The buffer was read: `windows` the values it returned, oldest first; `current` the polled
    /// value when it returned none.
    pub fn read(&mut self, windows: &[f64], current: Option<f64>) {
        let seen = range(windows);
        let dipped = self.polled.is_some_and(dips) || seen.is_some_and(dips);
        self.calm = if dipped {
            0
        } else {
            self.calm.saturating_add(1)
        };
        self.polled = windows.last().copied().or(current).map(|u| (u, u));
    }

    /// Whether the buffer is read at the short period: the polls since the last read or the
    /// windows of the recent reads hold a dip.
    pub fn moving(&self) -> bool {
        self.calm < CALM_READS || self.polled.is_some_and(dips)
    }

    /// Whether the buffer is due, `since_read_s` after the last read (`None`: never read), with
    /// `period_s` the period while something moves and `slack_s` the early tick allowance.
    pub fn due(&self, since_read_s: Option<f64>, period_s: f64, slack_s: f64) -> bool {
        since_read_s.is_none_or(|age| {
            age >= STEADY_PERIOD_S - slack_s || (age >= period_s - slack_s && self.moving())
        })
    }
}

/// Turns reads of the driver's sample buffer into windows, each once, on the wall clock.
#[derive(Debug, Clone, Default)]
pub struct SampleBufferMerger {
    /// Driver timestamp (µs) of the newest window already returned.
    last_ts: Option<u64>,
    /// wall seconds = driver µs / 1e6 + offset.
    offset_s: Option<f64>,
    /// How many times the driver's clock was seen to restart.
    resets: u32,
}

impl SampleBufferMerger {
    pub fn new() -> Self {
        Self::default()
    }

    /// The timestamp to pass to the next read (`None` on the first read: the whole buffer).
    pub fn last_seen(&self) -> Option<u64> {
        self.last_ts
    }

    /// The offset in use from driver seconds to wall seconds, once known.
    pub fn offset_s(&self) -> Option<f64> {
        self.offset_s
    }

    /// How many times the driver's timestamps went backwards (a driver reload or GPU reset).
    pub fn resets(&self) -> u32 {
        self.resets
    }

    /// Merge one read taken at wall time `now`: `(driver timestamp µs, percent)` in any order,
    /// possibly overlapping earlier reads. Returns the windows not returned before, oldest first.
    pub fn merge(&mut self, read: &[(u64, f64)], now: UnixTime) -> Vec<UtilWindow> {
        let mut samples: Vec<(u64, f64)> = read
            .iter()
            .copied()
            .filter(|(_, v)| v.is_finite())
            .collect();
        samples.sort_by_key(|(ts, _)| *ts);
        samples.dedup_by_key(|(ts, _)| *ts);
        let Some(&(newest_ts, _)) = samples.last() else {
            return Vec::new();
        };

        // The newest window ended at or before `now`, so `now - newest` bounds the offset from
        // above; the tightest bound seen is the best estimate and does not wander tick to tick.
        let candidate = now - newest_ts as f64 / 1e6;
        let restarted = self
            .last_ts
            .is_some_and(|last| newest_ts.saturating_add(1_000_000) < last);
        let jumped = self
            .offset_s
            .is_some_and(|off| (candidate - off).abs() > CLOCK_JUMP_S);
        if restarted || jumped {
            if restarted {
                self.resets += 1;
            }
            self.last_ts = None;
            self.offset_s = None;
        }
        // Where the driver already stamps its windows on the wall clock (the H200 does: its
        // samples are epoch microseconds), its stamps are exact: use them as they are rather than
        // an estimate that would move the first windows by up to a tick.
        let epoch_like = (-EPOCH_SLACK_S..CLOCK_JUMP_S).contains(&candidate);
        let offset = match self.offset_s {
            _ if epoch_like => 0.0,
            Some(off) => off.min(candidate),
            None => candidate,
        };
        self.offset_s = Some(offset);

        // The first read keeps the windows within FIRST_READ_KEEP_S of the newest one.
        let keep_from = match self.last_ts {
            Some(last) => last.saturating_add(1),
            None => newest_ts.saturating_sub((FIRST_READ_KEEP_S * 1e6) as u64),
        };
        let out: Vec<UtilWindow> = samples
            .into_iter()
            .filter(|(ts, _)| *ts >= keep_from)
            .map(|(ts, v)| UtilWindow {
                t: ts as f64 / 1e6 + offset,
                util: v.clamp(0.0, 100.0),
            })
            .collect();
        self.last_ts = Some(self.last_ts.map_or(newest_ts, |l| l.max(newest_ts)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A driver clock that is not epoch: boot-relative microseconds.
    const BOOT_US: u64 = 1_234_000_000;
    const NOW0: f64 = 1_796_217_987.0;

    fn windows(from_us: u64, n: u64, util: f64) -> Vec<(u64, f64)> {
        (0..n).map(|i| (from_us + i * 200_000, util)).collect()
    }

    #[test]
    fn first_read_keeps_only_the_last_seconds_and_maps_to_wall_clock() {
        let mut m = SampleBufferMerger::new();
        // 100 windows (20 s) in the buffer.
        let read = windows(BOOT_US, 100, 10.0);
        let newest = BOOT_US + 99 * 200_000;
        let out = m.merge(&read, NOW0);
        assert_eq!(out.len(), 26, "5 s of 200 ms windows, both ends included");
        let last = out.last().map(|w| w.t).unwrap_or(f64::NAN);
        assert!(
            (last - NOW0).abs() < 1e-6,
            "newest maps to the read time: {last}"
        );
        let first = out.first().map(|w| w.t).unwrap_or(f64::NAN);
        assert!((last - first - 5.0).abs() < 1e-6);
        assert_eq!(m.last_seen(), Some(newest));
    }

    #[test]
    fn epoch_stamps_are_used_as_they_are() {
        // The H200 stamps windows in epoch microseconds: no offset, no drift between reads.
        let mut m = SampleBufferMerger::new();
        let base = (NOW0 * 1e6) as u64 - 1_000_000;
        let out = m.merge(&windows(base, 1, 0.0), NOW0 - 0.9);
        assert_eq!(out.len(), 1);
        assert!((out[0].t - base as f64 / 1e6).abs() < 1e-6);
        // A later read that lags the driver by less than before does not move earlier stamps.
        let out = m.merge(&windows(base, 6, 0.0), NOW0 + 0.01);
        assert_eq!(out.len(), 5);
        assert!((out[0].t - (base + 200_000) as f64 / 1e6).abs() < 1e-6);
        assert_eq!(m.offset_s(), Some(0.0));
    }

    #[test]
    fn overlapping_reads_return_each_window_once() {
        let mut m = SampleBufferMerger::new();
        let a = windows(BOOT_US, 5, 20.0);
        let out_a = m.merge(&a, NOW0);
        assert_eq!(out_a.len(), 5);
        // The next read repeats the last two windows and adds three new ones.
        let b = windows(BOOT_US + 3 * 200_000, 5, 30.0);
        let out_b = m.merge(&b, NOW0 + 0.6);
        assert_eq!(out_b.len(), 3);
        assert!(out_b.iter().all(|w| w.util == 30.0));
        assert!(out_b[0].t > out_a[4].t);
    }

    #[test]
    fn duplicates_and_out_of_order_are_sorted_and_counted_once() {
        let mut m = SampleBufferMerger::new();
        let read = vec![
            (BOOT_US + 400_000, 3.0),
            (BOOT_US, 1.0),
            (BOOT_US + 200_000, 2.0),
            (BOOT_US + 200_000, 2.0),
        ];
        let out = m.merge(&read, NOW0);
        let utils: Vec<f64> = out.iter().map(|w| w.util).collect();
        assert_eq!(utils, vec![1.0, 2.0, 3.0]);
        assert!(out.windows(2).all(|p| p[1].t - p[0].t > 0.19));
    }

    #[test]
    fn an_empty_buffer_when_idle_returns_nothing_and_keeps_state() {
        let mut m = SampleBufferMerger::new();
        m.merge(&windows(BOOT_US, 3, 50.0), NOW0);
        let seen = m.last_seen();
        assert!(m.merge(&[], NOW0 + 0.25).is_empty());
        assert_eq!(m.last_seen(), seen);
        let out = m.merge(&windows(BOOT_US + 600_000, 1, 7.0), NOW0 + 0.5);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].util, 7.0);
    }

    #[test]
    fn the_offset_is_stable_across_reads_taken_at_jittery_times() {
        let mut m = SampleBufferMerger::new();
        m.merge(&windows(BOOT_US, 1, 0.0), NOW0 + 0.15);
        let mut ts = BOOT_US;
        let mut ends = Vec::new();
        for i in 1..40u64 {
            ts += 200_000;
            // Reads land 10..190 ms after the window closed.
            let lag = 0.01 + (i * 37 % 19) as f64 * 0.01;
            let now = NOW0 + (ts - BOOT_US) as f64 / 1e6 + lag;
            for w in m.merge(&[(ts, 1.0)], now) {
                ends.push((i, w.t));
            }
        }
        assert_eq!(ends.len(), 39, "one window per read, none lost");
        let steps: Vec<f64> = ends.windows(2).map(|p| p[1].1 - p[0].1).collect();
        assert!(
            steps.iter().all(|s| *s > 0.0 && (s - 0.2).abs() < 0.19),
            "never backwards, never more than one lag off: {steps:?}"
        );
        // Once the tightest lag (10 ms, at read 19) has been seen the offset no longer moves.
        let settled: Vec<f64> = ends
            .windows(2)
            .filter(|p| p[0].0 >= 19)
            .map(|p| p[1].1 - p[0].1)
            .collect();
        assert!(
            settled.iter().all(|s| (s - 0.2).abs() < 1e-6),
            "windows stay 200 ms apart on the wall clock: {settled:?}"
        );
        let off = m.offset_s().unwrap_or(f64::NAN);
        let ideal = NOW0 - BOOT_US as f64 / 1e6;
        assert!(
            (off - ideal - 0.01).abs() < 1e-6,
            "tightest bound kept: {off}"
        );
    }

    #[test]
    fn epoch_timestamps_map_to_themselves() {
        let mut m = SampleBufferMerger::new();
        let ts = 1_796_217_987_303_702u64;
        let out = m.merge(&[(ts, 36.0)], 1_796_217_987.303_7);
        assert_eq!(out.len(), 1);
        assert!((out[0].t - 1_796_217_987.303_702).abs() < 1e-3);
    }

    #[test]
    fn a_timestamp_reset_starts_again_without_losing_new_windows() {
        let mut m = SampleBufferMerger::new();
        m.merge(&windows(BOOT_US, 10, 5.0), NOW0);
        // The driver restarts: its clock is back near zero.
        let out = m.merge(&windows(1_000_000, 3, 9.0), NOW0 + 1.0);
        assert_eq!(m.resets(), 1);
        assert_eq!(out.len(), 3);
        assert!(out.iter().all(|w| w.util == 9.0));
        let last = out.last().map(|w| w.t).unwrap_or(f64::NAN);
        assert!((last - (NOW0 + 1.0)).abs() < 1e-6);
        assert_eq!(m.last_seen(), Some(1_400_000));
    }

    #[test]
    fn a_wall_clock_step_re_estimates_the_offset() {
        let mut m = SampleBufferMerger::new();
        m.merge(&windows(BOOT_US, 2, 5.0), NOW0);
        // NTP steps the wall clock forward by an hour.
        let out = m.merge(&windows(BOOT_US + 400_000, 1, 6.0), NOW0 + 3600.2);
        assert_eq!(out.len(), 1);
        assert!((out[0].t - (NOW0 + 3600.2)).abs() < 1e-6);
    }

    #[test]
    fn values_outside_percent_are_clamped_and_nan_dropped() {
        let mut m = SampleBufferMerger::new();
        let out = m.merge(&[(BOOT_US, 140.0), (BOOT_US + 200_000, f64::NAN)], NOW0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].util, 100.0);
    }

    proptest::proptest! {
        /// However the stream of windows is cut into reads (overlapping, repeated, shuffled,
        /// some empty), every window after the first read comes out exactly once, in order.
        #[test]
        fn any_sequence_of_overlapping_reads_yields_each_window_once(
            cuts in proptest::collection::vec((0usize..6, 0usize..4, proptest::bool::ANY), 1..60),
        ) {
            let total: usize = cuts.iter().map(|c| c.0).sum::<usize>() + 1;
            let stream: Vec<(u64, f64)> =
                (0..total).map(|i| (BOOT_US + i as u64 * 200_000, (i % 101) as f64)).collect();
            let mut m = SampleBufferMerger::new();
            let mut got = m.merge(&stream[..1], NOW0);
            let mut end: usize = 1;
            for (new, overlap, reverse) in cuts {
                let start = end.saturating_sub(overlap);
                end += new;
                let mut read: Vec<(u64, f64)> = stream[start..end].to_vec();
                read.extend_from_slice(&stream[start..end.min(start + 1)]);
                if reverse {
                    read.reverse();
                }
                let now = NOW0 + (end - 1) as f64 * 0.2 + 0.05;
                got.extend(m.merge(&read, now));
            }
            let utils: Vec<f64> = got.iter().map(|w| w.util).collect();
            let want: Vec<f64> = stream.iter().map(|s| s.1).collect();
            proptest::prop_assert_eq!(utils, want);
            proptest::prop_assert!(got.windows(2).all(|p| p[1].t > p[0].t));
        }
    }

    /// Ticks every 250 ms polling `util(tick)`, 200 ms driver windows of `util(window end)`:
    /// the tick times at which the buffer is read.
    fn reads(seconds: f64, util: impl Fn(f64) -> f64) -> Vec<f64> {
        let mut c = BufferCadence::default();
        let (mut last, mut out, mut next_w) = (None::<f64>, Vec::new(), 0.2);
        for k in 0..=(seconds / 0.25) as u32 {
            let t = k as f64 * 0.25;
            c.polled(util(t));
            if c.due(last.map(|l| t - l), 2.0, 0.05) {
                let mut windows = Vec::new();
                while next_w <= t + 1e-9 {
                    windows.push(util(next_w));
                    next_w += 0.2;
                }
                c.read(&windows, Some(util(t)));
                last = Some(t);
                out.push(t);
            }
        }
        out
    }

    fn spacings(reads: &[f64]) -> Vec<f64> {
        reads.windows(2).map(|w| w[1] - w[0]).collect()
    }

    #[test]
    fn a_steady_gpu_reads_its_buffer_every_steady_period_and_a_dipping_one_every_period() {
        // Busy with jitter above half the busy level, and idle: four reads 2 s apart, then 6 s.
        let busy = reads(40.0, |t| 70.0 + 30.0 * (t * 3.1).sin().abs());
        assert_eq!(busy, vec![0.0, 2.0, 4.0, 6.0, 12.0, 18.0, 24.0, 30.0, 36.0]);
        assert_eq!(reads(40.0, |_| 0.0), busy);
        // Starving (a dip to 0 every 1.2 s): every 2 s.
        let starving = reads(40.0, |t| if t % 1.2 < 0.6 { 95.0 } else { 0.0 });
        assert!(
            spacings(&starving).iter().all(|s| *s == 2.0),
            "{starving:?}"
        );
        // A burst of one window every 5.6 s, which the polls mostly miss: every 2 s as well.
        let bursts = reads(60.0, |t| if (t + 0.1) % 5.6 < 0.15 { 28.0 } else { 0.0 });
        assert!(spacings(&bursts).iter().all(|s| *s == 2.0), "{bursts:?}");
        // Busy, then idle from 21 s: read at the tick that shows the change (3 s after the
        // steady read before it), every 2 s while calm reads accumulate, then 6 s again.
        let stops = reads(60.0, |t| if t < 21.0 { 90.0 } else { 0.0 });
        assert_eq!(
            stops,
            [
                0.0, 2.0, 4.0, 6.0, 12.0, 18.0, 21.0, 23.0, 25.0, 27.0, 29.0, 31.0, 37.0, 43.0,
                49.0, 55.0
            ]
        );
    }
}
