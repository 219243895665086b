//! The queries one refresh asks Prometheus, run side by side, each with its own deadline.
//!
//! Sparklines come from range queries over the window on a coarse grid (a few points per screen
//! column); the detector and the scrape interval come from the raw samples of the last minutes;
//! verdicts, findings and totals from instant queries.

use std::time::Instant;

use super::api::{Answer, ApiError, PromClient, Series};
use super::build::Grid;

/// Which question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Query {
    Util,
    MemoryUsed,
    Power,
    RawUtil,
    MemoryFree,
    Verdict,
    Findings,
    LostFraction,
    StarvationPeriod,
    Up,
}

impl Query {
    pub const ALL: [Query; 10] = [
        Query::Util,
        Query::MemoryUsed,
        Query::Power,
        Query::RawUtil,
        Query::MemoryFree,
        Query::Verdict,
        Query::Findings,
        Query::LostFraction,
        Query::StarvationPeriod,
        Query::Up,
    ];

    /// The PromQL; `raw_window_s` is the span of raw samples the detector reads.
    pub fn promql(self, raw_window_s: f64) -> String {
        match self {
            Query::Util => "DCGM_FI_DEV_GPU_UTIL".into(),
            Query::MemoryUsed => "DCGM_FI_DEV_FB_USED".into(),
            Query::Power => "DCGM_FI_DEV_POWER_USAGE".into(),
            Query::RawUtil => format!("DCGM_FI_DEV_GPU_UTIL[{}s]", raw_window_s.round().max(1.0)),
            Query::MemoryFree => "DCGM_FI_DEV_FB_FREE".into(),
            Query::Verdict => "gpulse_verdict".into(),
            Query::Findings => "gpulse_finding_active".into(),
            Query::LostFraction => "gpulse_lost_fraction".into(),
            Query::StarvationPeriod => "gpulse_starvation_period_seconds".into(),
            Query::Up => "up".into(),
        }
    }

    /// Whether this is a range query over the sparkline grid.
    pub fn is_range(self) -> bool {
        matches!(self, Query::Util | Query::MemoryUsed | Query::Power)
    }

    /// A short name for messages.
    pub fn name(self) -> &'static str {
        match self {
            Query::Util => "utilization",
            Query::MemoryUsed => "memory used",
            Query::Power => "power",
            Query::RawUtil => "raw utilization",
            Query::MemoryFree => "memory free",
            Query::Verdict => "verdicts",
            Query::Findings => "findings",
            Query::LostFraction => "lost fraction",
            Query::StarvationPeriod => "starvation period",
            Query::Up => "targets",
        }
    }
}

/// The answers of one round, each a success or its error.
#[derive(Debug, Default)]
pub struct QueryResults {
    pub results: Vec<(Query, Result<Answer, ApiError>)>,
    /// Wall time of the slowest query, seconds.
    pub took_s: f64,
}

impl QueryResults {
    /// The series of a query that answered (none when it failed).
    pub fn series(&self, q: Query) -> impl Iterator<Item = &Series> {
        self.results
            .iter()
            .filter(move |(k, _)| *k == q)
            .filter_map(|(_, r)| r.as_ref().ok())
            .flat_map(|a| a.series.iter())
    }

    /// Failed queries and Prometheus's warnings, in words.
    pub fn problems(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (q, r) in &self.results {
            match r {
                Err(e) => out.push(format!("{} query failed: {e}", q.name())),
                Ok(a) => {
                    for w in &a.warnings {
                        let line = format!("Prometheus warns: {w}");
                        if !out.contains(&line) {
                            out.push(line);
                        }
                    }
                }
            }
        }
        out
    }

    /// The first error, when every query failed (Prometheus is unreachable or refuses all).
    pub fn all_failed(&self) -> Option<&ApiError> {
        let mut first = None;
        for (_, r) in &self.results {
            match r {
                Ok(_) => return None,
                Err(e) => {
                    first.get_or_insert(e);
                }
            }
        }
        first
    }
}

/// Ask every query, side by side, at time `now`.
pub fn fetch(client: &PromClient, grid: Grid, now: f64, raw_window_s: f64) -> QueryResults {
    let started = Instant::now();
    let results = std::thread::scope(|scope| {
        let handles: Vec<_> = Query::ALL
            .iter()
            .map(|&q| {
                let promql = q.promql(raw_window_s);
                let handle = scope.spawn(move || {
                    if q.is_range() {
                        client.range(&promql, grid.start, now, grid.step)
                    } else {
                        client.instant(&promql, now)
                    }
                });
                (q, handle)
            })
            .collect();
        handles
            .into_iter()
            .map(|(q, h)| {
                let r = h.join().unwrap_or_else(|_| {
                    Err(ApiError::BadJson {
                        reason: "the query thread panicked".into(),
                        snippet: String::new(),
                    })
                });
                (q, r)
            })
            .collect()
    });
    QueryResults {
        results,
        took_s: started.elapsed().as_secs_f64(),
    }
}
