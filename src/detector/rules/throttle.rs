//! Throttled: the share of busy time each clock event reason held the clocks down, from the
//! driver's counters where it keeps them, else from the reason's bit at each tick. Raised when
//! a serious reason (HW slowdown, HW thermal, power brake, SW thermal; never the power cap,
//! where a busy GPU normally runs) held them for `throttled_share` of `min_busy_ticks` or more
//! busy ticks.

use super::candidate::{Candidate, Summary};
use super::Evaluation;
use crate::history::GpuHistory;
use crate::model::{FindingKind, Metrics, Severity, ThrottleReason, UnixTime};

/// The share of busy time each reason held the clocks over a span of ticks.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ThrottleShares {
    pub busy_ticks: usize,
    /// Per reason (in [`ThrottleReason::ALL`] order): the mean share over the busy ticks that
    /// measured it; absent when none did.
    pub held: [Option<f64>; 5],
    /// Per reason: a counter (not only the bit) measured it.
    pub counted: [bool; 5],
}

impl ThrottleShares {
    pub fn get(&self, r: ThrottleReason) -> Option<f64> {
        self.held[r as usize]
    }

    /// The most any serious reason held the clocks, and that reason.
    pub fn worst_serious(&self) -> Option<(ThrottleReason, f64)> {
        ThrottleReason::ALL
            .into_iter()
            .filter(|r| r.serious())
            .filter_map(|r| self.get(r).map(|s| (r, s)))
            .fold(None, |best, (r, s)| match best {
                Some((_, b)) if b >= s => best,
                _ => Some((r, s)),
            })
    }

    /// The summary in words: each serious reason that held the clocks, with its share.
    pub fn text(&self) -> String {
        let parts: Vec<String> = ThrottleReason::ALL
            .into_iter()
            .filter(|r| r.serious())
            .filter_map(|r| {
                let s = self.get(r).filter(|s| *s >= 0.005)?;
                Some(format!("{} {:.0}%", r.words(), s * 100.0))
            })
            .collect();
        format!(
            "{} of busy time with the clocks held down",
            parts.join(", ")
        )
    }
}

/// The shares over the ticks of `h` since `since` whose utilization is at least `busy_util`.
pub fn held_over(h: &GpuHistory, since: UnixTime, busy_util: f64) -> ThrottleShares {
    let mut sums = ThrottleSums::default();
    'ticks: for chunk in h.ticks.chunks_rev() {
        for tk in chunk.iter().rev() {
            if tk.t < since {
                break 'ticks;
            }
            let m = &tk.metrics;
            if tk.ok && m.util_gpu.is_some_and(|u| u >= busy_util) {
                sums.add_busy(m);
            }
        }
    }
    sums.finish()
}

/// The running sums behind [`ThrottleShares`], fed the busy ticks.
#[derive(Debug, Clone, Copy, Default)]
pub struct ThrottleSums {
    busy_ticks: usize,
    /// Per reason: the sum of its shares and the ticks that measured it.
    sums: [(f64, usize); 5],
    /// Ticks without a counter whose bits say no reason held the clocks: each reason measured
    /// at 0 (most ticks; counted apart).
    clear: usize,
    counted: [bool; 5],
}

impl ThrottleSums {
    /// Add a busy tick's readings.
    #[inline]
    pub fn add_busy(&mut self, m: &Metrics) {
        self.busy_ticks += 1;
        if m.throttle_held.is_empty() {
            match m.throttle {
                None => return,
                Some(b) if b & ThrottleReason::ALL_BITS == 0 => {
                    self.clear += 1;
                    return;
                }
                Some(_) => {}
            }
        }
        for r in ThrottleReason::ALL {
            if let Some(s) = m.throttle_held.share(r, m.throttle) {
                let slot = &mut self.sums[r as usize];
                slot.0 += s;
                slot.1 += 1;
                self.counted[r as usize] |= m.throttle_held.get(r).is_some();
            }
        }
    }

    pub fn finish(self) -> ThrottleShares {
        let mut out = ThrottleShares {
            busy_ticks: self.busy_ticks,
            counted: self.counted,
            ..ThrottleShares::default()
        };
        for (held, (sum, n)) in out.held.iter_mut().zip(self.sums) {
            let n = n + self.clear;
            *held = (n > 0).then(|| sum / n as f64);
        }
        out
    }
}

/// The GPU's `throttled` candidate.
pub fn throttled(e: &Evaluation) -> Option<Candidate> {
    let cfg = e.cfg;
    let shares = &e.health.throttle;
    if shares.busy_ticks < cfg.min_busy_ticks {
        return None;
    }
    let (_, worst) = shares.worst_serious()?;
    // Never at 0: the detector reads the shares only where a serious reason held the clocks.
    if worst < cfg.throttled_share || worst <= 0.0 {
        return None;
    }
    let signals: Vec<(String, f64)> = ThrottleReason::ALL
        .into_iter()
        .filter_map(|r| shares.get(r).map(|s| (format!("held_{}", r.as_str()), s)))
        .collect();
    let refs: Vec<(&str, f64)> = signals.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    let mut c = Candidate::of_signals(
        FindingKind::Throttled,
        Severity::High,
        e.recent_start(),
        &refs,
        Summary::ThrottledTime(*shares),
    );
    c.evidence.notes = ThrottleReason::ALL
        .into_iter()
        .filter(|r| r.serious())
        .filter_map(|r| {
            let s = shares.get(r).filter(|s| *s > 0.0)?;
            let how = if shares.counted[r as usize] {
                "the driver's counter"
            } else {
                "its clock event bit"
            };
            Some(format!(
                "{} {:.0}% of busy time ({how})",
                r.words(),
                s * 100.0
            ))
        })
        .collect();
    Some(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::throttle;

    /// The shares over `n` busy ticks of `m`.
    fn shares(ticks: &[(usize, Metrics)]) -> ThrottleShares {
        let mut sums = ThrottleSums::default();
        for (n, m) in ticks {
            for _ in 0..*n {
                sums.add_busy(m);
            }
        }
        sums.finish()
    }

    #[test]
    fn counters_measure_where_present_and_bits_elsewhere() {
        let mut m = Metrics {
            util_gpu: Some(99.0),
            throttle: Some(throttle::HW_SLOWDOWN | throttle::HW_THERMAL_SLOWDOWN),
            ..Default::default()
        };
        // The counter says HW thermal held the clocks for 40% of each tick.
        m.throttle_held.set(ThrottleReason::HwThermal, Some(0.4));
        let s = shares(&[(36, m)]);
        assert_eq!(s.busy_ticks, 36);
        assert!((s.get(ThrottleReason::HwThermal).unwrap() - 0.4).abs() < 1e-6);
        assert!(s.counted[ThrottleReason::HwThermal as usize]);
        assert_eq!(s.get(ThrottleReason::HwSlowdown), Some(1.0));
        assert!(!s.counted[ThrottleReason::HwSlowdown as usize]);
        assert_eq!(s.get(ThrottleReason::SwThermal), Some(0.0));
        assert_eq!(s.worst_serious(), Some((ThrottleReason::HwSlowdown, 1.0)));
        assert_eq!(
            s.text(),
            "HW slowdown 100%, HW thermal 40% of busy time with the clocks held down"
        );
    }

    #[test]
    fn ticks_no_reason_held_count_at_zero() {
        let clear = Metrics {
            util_gpu: Some(99.0),
            // Idle and application-clock bits: no reason this tracks.
            throttle: Some(0x1 | 0x2),
            ..Default::default()
        };
        let held = Metrics {
            throttle: Some(throttle::SW_THERMAL_SLOWDOWN),
            ..clear
        };
        let unread = Metrics {
            throttle: None,
            ..clear
        };
        let s = shares(&[(3, clear), (1, held), (4, unread)]);
        assert_eq!(s.busy_ticks, 8);
        assert_eq!(s.get(ThrottleReason::SwThermal), Some(0.25));
        assert_eq!(s.get(ThrottleReason::HwThermal), Some(0.0));
        assert_eq!(
            shares(&[(2, Metrics::default())]).get(ThrottleReason::SwThermal),
            None
        );
    }
}
