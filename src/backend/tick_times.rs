//! The times of recorded ticks and driver windows, checked before they reach the engine.
//!
//! A file may hold a damaged time (one digit changed, a number overwritten): left in, a tick far
//! in the future makes every later tick look out of order, and a window far from its tick makes
//! the detector's window span years. So, reading a file:
//!
//! - a tick whose time is not after the previous tick's is dropped;
//! - a tick more than [`JUMP_S`] after the previous one (or the first tick of a file) is held
//!   until the next tick shows whether time went on from it (a real gap: the machine slept, the
//!   log was paused) or from before it (a damaged time: the held tick is dropped). A first tick
//!   is believed when the next one follows within [`FIRST_GAP_S`], a later one when the next
//!   follows within twice its own gap (or [`JUMP_S`]); the last tick of a file, with no next one,
//!   within [`LAST_GAP_S`] of the tick before;
//! - a driver window more than [`WINDOW_BEFORE_TICK_S`] before or [`WINDOW_AFTER_TICK_S`] after
//!   its tick, or not after the GPU's previous window, is dropped.
//!
//! Nothing is sized from a time here: what is dropped is counted, with the first place it
//! happened, and told as one warning per kind.

use std::collections::VecDeque;

use crate::model::{Sample, UnixTime};

/// A gap between ticks longer than this is a jump the next tick must confirm.
pub const JUMP_S: f64 = 10.0;
/// The longest gap believed between the first two ticks of a file (an hourly log's).
pub const FIRST_GAP_S: f64 = 3600.0;
/// The longest gap believed before the last tick of a file, which no tick after confirms.
pub const LAST_GAP_S: f64 = 3600.0;
/// How long before its tick a driver window may end: the driver keeps a few seconds of windows,
/// all handed over at the first tick or after a stalled one.
pub const WINDOW_BEFORE_TICK_S: f64 = 60.0;
/// How long after its tick a driver window may end (the driver's clock against the tick's).
pub const WINDOW_AFTER_TICK_S: f64 = 2.0;

/// What holds a sample: a sample, or a recording's tick with its findings.
pub trait HasSample {
    fn sample(&self) -> &Sample;
    fn sample_mut(&mut self) -> &mut Sample;
}

impl HasSample for Sample {
    fn sample(&self) -> &Sample {
        self
    }
    fn sample_mut(&mut self) -> &mut Sample {
        self
    }
}

/// Things dropped for one reason: how many, and the place and time of the first.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Dropped {
    pub count: u64,
    pub first: Option<(u64, UnixTime)>,
}

impl Dropped {
    fn add(&mut self, at: u64, t: UnixTime) {
        self.count += 1;
        self.first.get_or_insert((at, t));
    }
}

/// Everything dropped so far, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TimeDrops {
    /// Ticks not after the previous tick.
    pub out_of_order: Dropped,
    /// Ticks that jumped ahead of the ticks around them.
    pub jumped: Dropped,
    /// Driver windows far from their tick or not after the GPU's previous window.
    pub windows: Dropped,
}

impl TimeDrops {
    /// One warning per reason that dropped anything; `unit` names a place ("line", "sample").
    pub fn warnings(&self, unit: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut tell = |d: &Dropped, what: String| {
            if let Some((at, t)) = d.first {
                out.push(format!(
                    "dropped {} {what} (the first at {unit} {at}, time {})",
                    d.count,
                    show_time(t)
                ));
            }
        };
        tell(
            &self.out_of_order,
            "tick(s) whose time was not after the previous tick's".into(),
        );
        tell(
            &self.jumped,
            "tick(s) whose time jumped away from the ticks around them (a damaged time)".into(),
        );
        tell(
            &self.windows,
            format!(
                "utilization window(s) out of order or more than {WINDOW_BEFORE_TICK_S:.0} s before or {WINDOW_AFTER_TICK_S:.0} s after their tick"
            ),
        );
        out
    }

    pub fn total(&self) -> u64 {
        self.out_of_order.count + self.jumped.count + self.windows.count
    }
}

/// A time as a message shows it: seconds with milliseconds, or in exponent form when it is far
/// beyond any clock (a damaged `1e308` would otherwise print 309 digits).
pub fn show_time(t: UnixTime) -> String {
    if t.is_finite() && t.abs() < 1e12 {
        format!("{t:.3}")
    } else {
        format!("{t:e}")
    }
}

/// Checks the times of a file's ticks in order; ticks come out one tick late (see the module's
/// rules).
#[derive(Debug)]
pub struct TickTimes<T> {
    /// Time of the last tick let out.
    last: Option<UnixTime>,
    /// A tick that jumped, its place, waiting for the next tick.
    held: Option<(T, u64)>,
    /// Ticks let out, in order.
    ready: VecDeque<T>,
    /// The last driver window let out, by GPU index.
    last_window: Vec<(u32, UnixTime)>,
    drops: TimeDrops,
}

impl<T> Default for TickTimes<T> {
    fn default() -> Self {
        TickTimes {
            last: None,
            held: None,
            ready: VecDeque::new(),
            last_window: Vec::new(),
            drops: TimeDrops::default(),
        }
    }
}

impl<T: HasSample> TickTimes<T> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Check `tick`, read at place `at` (a line or sample number).
    pub fn push(&mut self, tick: T, at: u64) {
        let t = tick.sample().t;
        if let Some((held, held_at)) = self.held.take() {
            let held_t = held.sample().t;
            // Twice the held gap: a log polled every 10 s has gaps of 10.002 s and 10.003 s.
            let allowed = match self.last {
                Some(before) => 2.0 * (held_t - before).max(JUMP_S),
                None => FIRST_GAP_S,
            };
            if t > held_t && t - held_t <= allowed {
                self.let_out(held, held_at);
            } else {
                self.drops.jumped.add(held_at, held_t);
            }
        }
        if !t.is_finite() || self.last.is_some_and(|l| t <= l) {
            self.drops.out_of_order.add(at, t);
            return;
        }
        if self.last.is_none_or(|l| t - l > JUMP_S) {
            self.held = Some((tick, at));
        } else {
            self.let_out(tick, at);
        }
    }

    /// The file ended: a tick still held is let out when it follows the tick before closely
    /// enough (or is the file's only tick).
    pub fn finish(&mut self) {
        if let Some((held, at)) = self.held.take() {
            let t = held.sample().t;
            if self.last.is_none_or(|l| t - l <= LAST_GAP_S) {
                self.let_out(held, at);
            } else {
                self.drops.jumped.add(at, t);
            }
        }
    }

    /// The next tick let out, if any.
    pub fn pop(&mut self) -> Option<T> {
        self.ready.pop_front()
    }

    pub fn drops(&self) -> &TimeDrops {
        &self.drops
    }

    fn let_out(&mut self, mut tick: T, at: u64) {
        let sample = tick.sample_mut();
        self.last = Some(sample.t);
        for g in &mut sample.gpus {
            if g.util_windows.is_empty() {
                continue;
            }
            let pos = match self.last_window.iter().position(|(i, _)| *i == g.index) {
                Some(p) => p,
                None => {
                    self.last_window.push((g.index, f64::NEG_INFINITY));
                    self.last_window.len() - 1
                }
            };
            let (lo, hi) = (
                sample.t - WINDOW_BEFORE_TICK_S,
                sample.t + WINDOW_AFTER_TICK_S,
            );
            let last = &mut self.last_window[pos].1;
            let drops = &mut self.drops.windows;
            g.util_windows.retain(|w| {
                let keep = w.t >= lo && w.t <= hi && w.t > *last;
                if keep {
                    *last = w.t;
                } else {
                    drops.add(at, w.t);
                }
                keep
            });
        }
        self.ready.push_back(tick);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{GpuReading, UtilWindow};

    fn tick(t: f64, windows: &[f64]) -> Sample {
        Sample {
            t,
            gpus: vec![GpuReading {
                util_windows: windows
                    .iter()
                    .map(|&t| UtilWindow { t, util: 50.0 })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn run(ticks: Vec<Sample>) -> (Vec<f64>, TimeDrops) {
        let mut check = TickTimes::new();
        for (i, s) in ticks.into_iter().enumerate() {
            check.push(s, i as u64 + 1);
        }
        check.finish();
        let times = std::iter::from_fn(|| check.pop()).map(|s| s.t).collect();
        (times, *check.drops())
    }

    #[test]
    fn a_tick_that_jumps_away_is_dropped_and_the_rest_kept() {
        let ts = [100.0, 100.25, 9_796_407_939.0, 100.5, 100.75, 1e308, 101.0];
        let (kept, drops) = run(ts.iter().map(|&t| tick(t, &[])).collect());
        assert_eq!(kept, vec![100.0, 100.25, 100.5, 100.75, 101.0]);
        assert_eq!(drops.jumped.count, 2);
        assert_eq!(drops.jumped.first, Some((3, 9_796_407_939.0)));
        assert_eq!(drops.out_of_order.count, 0);
    }

    #[test]
    fn a_real_gap_is_kept_and_a_damaged_first_tick_is_not() {
        let ts = [1_896_407_939.0, 100.0, 100.25, 5000.0, 5000.25, 100.0];
        let (kept, drops) = run(ts.iter().map(|&t| tick(t, &[])).collect());
        assert_eq!(kept, vec![100.0, 100.25, 5000.0, 5000.25]);
        assert_eq!(drops.jumped.count, 1);
        assert_eq!(drops.out_of_order.count, 1);
        // An hourly log: every gap is a jump, each confirmed by the next.
        let hourly: Vec<Sample> = (0..5).map(|i| tick(3600.0 * i as f64, &[])).collect();
        assert_eq!(run(hourly).0.len(), 5);
        // A log every 10 s: its gaps wander by milliseconds, each a little longer than the last.
        let coarse = [0.0, 10.002, 20.005, 30.009, 40.014, 50.02];
        let (kept, drops) = run(coarse.iter().map(|&t| tick(t, &[])).collect());
        assert_eq!(kept, coarse.to_vec());
        assert_eq!(drops.jumped.count, 0);
    }

    #[test]
    fn windows_far_from_their_tick_or_out_of_order_are_dropped() {
        let ticks = vec![
            tick(100.0, &[95.0, 99.8]),
            tick(100.25, &[1e308, 100.05]),
            tick(100.5, &[100.25, 9_796_407_939.0, 20.0, 100.45]),
            tick(100.75, &[100.45, 100.65]),
        ];
        let mut check = TickTimes::new();
        for (i, s) in ticks.into_iter().enumerate() {
            check.push(s, i as u64 + 1);
        }
        check.finish();
        let windows: Vec<f64> = std::iter::from_fn(|| check.pop())
            .flat_map(|s| s.gpus[0].util_windows.clone())
            .map(|w| w.t)
            .collect();
        assert_eq!(windows, vec![95.0, 99.8, 100.05, 100.25, 100.45, 100.65]);
        assert_eq!(check.drops().windows.count, 4);
        let w = check.drops().warnings("line").join("\n");
        assert!(
            w.contains("dropped 4 utilization window(s)") && w.contains("line 2, time 1e308"),
            "{w}"
        );
    }
}
