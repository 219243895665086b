//! A GPU's verdicts over time: contiguous segments, each the verdict shown from its start until
//! the next one, built from the verdicts of successive snapshots (live) or evaluations (a file
//! through `analyze`). Anything that accounts for time per verdict (time lost, time idle) reads
//! these segments.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::{FindingKind, UnixTime};

/// A stretch of time with one verdict.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct VerdictSegment {
    pub start: UnixTime,
    pub end: UnixTime,
    pub verdict: FindingKind,
}

impl VerdictSegment {
    pub fn duration_s(&self) -> f64 {
        (self.end - self.start).max(0.0)
    }
}

/// Builds the segments of one GPU from verdicts observed at successive times.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VerdictTimeline {
    segments: Vec<VerdictSegment>,
}

impl VerdictTimeline {
    pub fn new() -> Self {
        Self::default()
    }

    /// `verdict` is shown from `t` on. An observation earlier than the last one's time (a
    /// clock that stepped back) continues the last segment.
    pub fn observe(&mut self, t: UnixTime, verdict: FindingKind) {
        match self.segments.last_mut() {
            Some(last) if last.verdict == verdict || t <= last.start => {
                last.end = last.end.max(t);
            }
            Some(last) => {
                last.end = t;
                self.segments.push(VerdictSegment {
                    start: t,
                    end: t,
                    verdict,
                });
            }
            None => self.segments.push(VerdictSegment {
                start: t,
                end: t,
                verdict,
            }),
        }
    }

    /// The segments so far, the last one running to `end` (at least to its own start).
    pub fn finish(mut self, end: UnixTime) -> Vec<VerdictSegment> {
        if let Some(last) = self.segments.last_mut() {
            last.end = last.end.max(end);
        }
        self.segments
    }

    /// The segments as observed so far.
    pub fn segments(&self) -> &[VerdictSegment] {
        &self.segments
    }
}

/// The segments of `observations` (time, verdict), in time order, the last one running to `end`.
pub fn timeline_of(
    observations: impl IntoIterator<Item = (UnixTime, FindingKind)>,
    end: UnixTime,
) -> Vec<VerdictSegment> {
    let mut timeline = VerdictTimeline::new();
    for (t, v) in observations {
        timeline.observe(t, v);
    }
    timeline.finish(end)
}

/// Seconds spent under each verdict.
pub fn seconds_by_verdict(segments: &[VerdictSegment]) -> BTreeMap<FindingKind, f64> {
    let mut out = BTreeMap::new();
    for s in segments {
        *out.entry(s.verdict).or_insert(0.0) += s.duration_s();
    }
    out
}

/// The verdict covering most of `[from, to)`, if any segment overlaps it.
pub fn dominant_verdict(
    segments: &[VerdictSegment],
    from: UnixTime,
    to: UnixTime,
) -> Option<FindingKind> {
    let mut time: BTreeMap<FindingKind, f64> = BTreeMap::new();
    for s in segments.iter().filter(|s| s.end > from && s.start < to) {
        *time.entry(s.verdict).or_insert(0.0) += s.end.min(to) - s.start.max(from);
    }
    // A point in time (a zero-length range) takes the segment it falls in.
    if time.is_empty() {
        return segments
            .iter()
            .find(|s| s.start <= from && from <= s.end)
            .map(|s| s.verdict);
    }
    time.into_iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(k, _)| k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use FindingKind::{Healthy, Idle, InputStarvation};

    #[test]
    fn segments_are_contiguous_and_cover_the_span() {
        let obs = [
            (10.0, Idle),
            (11.0, Idle),
            (12.0, Healthy),
            (15.0, Healthy),
            (16.0, InputStarvation),
        ];
        let s = timeline_of(obs, 20.0);
        assert_eq!(
            s,
            vec![
                VerdictSegment {
                    start: 10.0,
                    end: 12.0,
                    verdict: Idle
                },
                VerdictSegment {
                    start: 12.0,
                    end: 16.0,
                    verdict: Healthy
                },
                VerdictSegment {
                    start: 16.0,
                    end: 20.0,
                    verdict: InputStarvation
                },
            ]
        );
        let secs = seconds_by_verdict(&s);
        assert_eq!(secs[&Healthy], 4.0);
        assert_eq!(secs.values().sum::<f64>(), 10.0);
    }

    #[test]
    fn a_clock_that_steps_back_continues_the_last_segment() {
        let s = timeline_of([(10.0, Idle), (12.0, Healthy), (11.0, Idle)], 13.0);
        assert_eq!(s.len(), 2);
        assert_eq!(s[1].verdict, Healthy);
        assert_eq!((s[1].start, s[1].end), (12.0, 13.0));
        assert!(timeline_of([], 5.0).is_empty());
    }

    #[test]
    fn the_dominant_verdict_of_a_range_is_the_one_covering_most_of_it() {
        let s = timeline_of([(0.0, Idle), (4.0, Healthy), (7.0, Idle)], 10.0);
        assert_eq!(dominant_verdict(&s, 3.0, 6.0), Some(Healthy));
        assert_eq!(dominant_verdict(&s, 0.0, 10.0), Some(Idle));
        assert_eq!(dominant_verdict(&s, 5.0, 5.0), Some(Healthy));
        assert_eq!(dominant_verdict(&s, 11.0, 12.0), None);
    }
}
