//! The recent booked intervals with the lost share each was booked at and the utilization read
//! at its start, so that a finding raised now can book the time from the start of its evidence:
//! the detector names a pattern only after seeing some cycles of it, and those cycles were lost
//! time too. Each interval is raised to its own shortfall against the finding's level (where
//! the GPU waited then), not to the finding's mean over its window.
//!
//! Intervals in a row with the same share and reading are kept as one segment; segments older
//! than the detector's window leave (a finding's evidence never begins before it).

use std::collections::VecDeque;

/// Consecutive booked time at one lost share.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Segment {
    from: f64,
    to: f64,
    share: f64,
    /// Utilization read at the start of each of its intervals (percent).
    util: Option<f64>,
    /// Energy integrated from power over the segment (none without power readings).
    joules: Option<f64>,
}

/// What raising a share over past time adds.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TopUp {
    /// GPU-seconds lost in addition to what was booked.
    pub lost_s: f64,
    /// Energy of that time (power integrated, not yet scaled to a counter).
    pub joules: f64,
}

/// The recent booked segments, oldest first.
#[derive(Debug, Clone, Default)]
pub struct RecentShares {
    segments: VecDeque<Segment>,
    /// Seconds of booked time kept.
    keep_s: f64,
}

impl RecentShares {
    pub fn new(keep_s: f64) -> Self {
        RecentShares {
            segments: VecDeque::new(),
            keep_s,
        }
    }

    /// The interval `from..to`, which read `util`, was booked at `share`, with `joules` drawn
    /// in it.
    pub fn push(&mut self, from: f64, to: f64, share: f64, util: Option<f64>, joules: Option<f64>) {
        match self.segments.back_mut() {
            Some(last) if last.to == from && last.share == share && last.util == util => {
                last.to = to;
                last.joules = match (last.joules, joules) {
                    (Some(a), Some(b)) => Some(a + b),
                    (a, b) => a.or(b),
                };
            }
            _ => self.segments.push_back(Segment {
                from,
                to,
                share,
                util,
                joules,
            }),
        }
        while self
            .segments
            .front()
            .is_some_and(|s| s.to < to - self.keep_s)
        {
            self.segments.pop_front();
        }
    }

    /// Raise the share of each interval booked since `since` to at least `share_of` its
    /// utilization reading; what that adds.
    pub fn top_up(&mut self, since: f64, share_of: impl Fn(Option<f64>) -> f64) -> TopUp {
        let mut added = TopUp::default();
        let mut split = None;
        for (i, s) in self.segments.iter_mut().enumerate().rev() {
            if s.to <= since {
                break;
            }
            let share = share_of(s.util);
            if s.share >= share {
                continue;
            }
            let len = s.to - s.from;
            let part = if s.from < since {
                split = Some((i, since, share));
                (s.to - since) / len
            } else {
                1.0
            };
            added.lost_s += (share - s.share) * len * part;
            added.joules += (share - s.share) * s.joules.unwrap_or(0.0) * part;
            if split.is_none() {
                s.share = share;
            }
        }
        // A segment that began before `since` keeps its share up to there.
        if let Some((i, at, share)) = split {
            if let Some(s) = self.segments.get_mut(i) {
                let head_part = (at - s.from) / (s.to - s.from);
                let head = Segment {
                    to: at,
                    joules: s.joules.map(|j| j * head_part),
                    ..*s
                };
                s.from = at;
                s.joules = s.joules.map(|j| j * (1.0 - head_part));
                s.share = share;
                self.segments.insert(i, head);
            }
        }
        added
    }

    /// Forget everything (after a gap, the time before it is out of reach).
    pub fn clear(&mut self) {
        self.segments.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::share::shortfall;

    /// The shortfall against `level`, `fallback` without a reading.
    fn against(level: f64, fallback: f64) -> impl Fn(Option<f64>) -> f64 {
        move |u| shortfall(u, level).unwrap_or(fallback)
    }

    #[test]
    fn a_raised_finding_tops_up_each_interval_to_its_own_shortfall_once() {
        let mut r = RecentShares::new(100.0);
        // 0..10 s booked at 0 reading 40%, 10..20 s at 0.5 reading 0% (another finding),
        // 100 J a second.
        for k in 0..20 {
            let (share, util) = if k < 10 { (0.0, 40.0) } else { (0.5, 0.0) };
            r.push(k as f64, k as f64 + 1.0, share, Some(util), Some(100.0));
        }
        // A finding measured against 80% whose evidence began at 5 s: 0.5 lost from 5 to 10 s,
        // all of 10..20 s.
        let t = r.top_up(5.0, against(80.0, 0.3));
        let want = 0.5 * 5.0 + 0.5 * 10.0;
        assert!((t.lost_s - want).abs() < 1e-9, "{t:?}");
        assert!((t.joules - want * 100.0).abs() < 1e-6, "{t:?}");
        // Raised again: nothing more. A higher level over the time before 5 s only.
        assert_eq!(r.top_up(5.0, against(80.0, 0.3)).lost_s, 0.0);
        let t = r.top_up(0.0, against(100.0, 0.3));
        assert!((t.lost_s - (0.6 * 5.0 + 0.1 * 5.0)).abs() < 1e-9, "{t:?}");
    }

    #[test]
    fn an_interval_without_a_reading_takes_the_findings_fraction() {
        let mut r = RecentShares::new(100.0);
        r.push(0.0, 4.0, 0.0, None, None);
        let t = r.top_up(0.0, against(100.0, 0.25));
        assert!((t.lost_s - 1.0).abs() < 1e-9, "{t:?}");
    }

    #[test]
    fn segments_older_than_the_kept_span_leave() {
        let mut r = RecentShares::new(10.0);
        for k in 0..30 {
            r.push(
                k as f64,
                k as f64 + 1.0,
                (k % 2) as f64 * 0.1,
                Some(0.0),
                None,
            );
        }
        assert!(r.segments.len() <= 12, "{}", r.segments.len());
        // Only the kept time can be topped up.
        let t = r.top_up(0.0, against(100.0, 1.0));
        assert!(t.lost_s > 9.0 && t.lost_s < 12.0, "{t:?}");
    }
}
