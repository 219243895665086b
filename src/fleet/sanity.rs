//! Values and times from Prometheus checked against what they can be, before the fleet is built.
//!
//! A Prometheus (or an exporter it scrapes) may hold anything: a utilization of `1e308` or `-5`,
//! a lost fraction of `-5`, a sample timed years from now. Passed on, such a value shows as a
//! reading, and a raw sample far in the future makes the detector of a dcgm-only GPU fill every
//! scrape it "missed" up to it. So every point of every answer is checked: a time more than
//! [`FUTURE_SLACK_S`] ahead of now or (in a series of raw samples) not after the point before
//! it, and a value outside what its query can hold, drop the point; each query's drops are
//! counted in one problem line. `NaN` stays: it is Prometheus's "no value" and reads as absent.
//! An old time is no harm (a stale GPU's newest sample may be old): it only shows as old.

use std::ops::RangeInclusive;

use super::queries::{Query, QueryResults};

/// How far ahead of this machine's clock a sample may be (the server's clock may differ).
pub const FUTURE_SLACK_S: f64 = 60.0;

/// Memory in MiB up to 1 PiB.
const MAX_MIB: f64 = (1u64 << 30) as f64;

/// The values a query's points can hold.
pub fn valid(q: Query, now: f64) -> RangeInclusive<f64> {
    match q {
        Query::Util | Query::RecentRaw | Query::RawUtil => 0.0..=100.0,
        Query::MemoryUsed | Query::MemoryFree => 0.0..=MAX_MIB,
        Query::Power => 0.0..=100_000.0,
        // A time: the newest sample's.
        Query::LastSample => 0.0..=now + FUTURE_SLACK_S,
        Query::SampleCount => 0.0..=1e9,
        Query::Verdict | Query::Findings | Query::Up | Query::LostFraction => 0.0..=1.0,
        // Seconds between stalls: at most a day.
        Query::StarvationPeriod => 0.0..=86_400.0,
        // XID codes, error counts and 0/1 flags: never negative.
        Query::Health => 0.0..=1e15,
    }
}

/// Drop the points of `results` with impossible values or times (asked at `now`); the problems
/// in words, one per query that dropped any.
pub fn clean(results: &mut QueryResults, now: f64) -> Vec<String> {
    let mut problems = Vec::new();
    for (q, answer) in &mut results.results {
        let Ok(answer) = answer else { continue };
        let range = valid(*q, now);
        let ordered = matches!(q, Query::RecentRaw | Query::RawUtil);
        let mut dropped = 0usize;
        let mut first: Option<(f64, f64)> = None;
        for s in &mut answer.series {
            let mut last = f64::NEG_INFINITY;
            s.points.retain(|&(t, v)| {
                let keep = t.is_finite()
                    && t <= now + FUTURE_SLACK_S
                    && (!ordered || t > last)
                    && (v.is_nan() || range.contains(&v));
                if keep {
                    last = t;
                } else {
                    dropped += 1;
                    first.get_or_insert((t, v));
                }
                keep
            });
        }
        if let Some((t, v)) = first {
            problems.push(format!(
                "{} query: dropped {dropped} sample(s) with a value outside {} to {} or a time out of order or more than {FUTURE_SLACK_S:.0} s ahead (the first: {} at {})",
                q.name(),
                range.start(),
                range.end(),
                number(v),
                number(t)
            ));
        }
    }
    problems
}

/// A number as a message shows it: plainly, or in exponent form when it is huge.
fn number(v: f64) -> String {
    if v.is_finite() && v.abs() < 1e12 {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::api::{Answer, ResultType, Series};

    fn answer(points: Vec<(f64, f64)>) -> Result<Answer, crate::fleet::api::ApiError> {
        Ok(Answer {
            result_type: ResultType::Matrix,
            series: vec![Series {
                labels: Default::default(),
                points,
            }],
            warnings: Vec::new(),
        })
    }

    #[test]
    fn impossible_values_and_times_are_dropped_and_counted() {
        let now = 1_800_000_000.0;
        let mut results = QueryResults {
            results: vec![
                (
                    Query::RawUtil,
                    answer(vec![
                        (now - 3.0, 50.0),
                        (now - 2.0, 1e308),
                        (now - 1.0, -5.0),
                        (now - 3.5, 40.0),
                        (now + 1e10, 60.0),
                        (now, f64::NAN),
                    ]),
                ),
                (Query::LostFraction, answer(vec![(now, -5.0), (now, 0.4)])),
                (
                    Query::Util,
                    answer(vec![(now - 1e6, 50.0), (now + 1e10, 30.0)]),
                ),
            ],
            took_s: 0.0,
        };
        let problems = clean(&mut results, now);
        let kept = |i: usize| -> Vec<(f64, f64)> {
            results.results[i].1.as_ref().expect("answer").series[0]
                .points
                .clone()
        };
        assert_eq!(kept(0)[0], (now - 3.0, 50.0));
        assert_eq!(kept(0).len(), 2, "{:?}", kept(0));
        assert!(kept(0)[1].1.is_nan());
        assert_eq!(kept(1), vec![(now, 0.4)]);
        assert_eq!(kept(2), vec![(now - 1e6, 50.0)]);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(
            problems[0].contains("raw utilization query: dropped 4 sample(s)")
                && problems[0].contains("(the first: 1e308 at"),
            "{}",
            problems[0]
        );
    }
}
