//! The queries one refresh asks Prometheus, run side by side, each with its own deadline.
//!
//! Sparklines come from range queries over the window on a coarse grid (a few points per screen
//! column); the detector and the scrape interval come from the raw samples of the last minutes;
//! verdicts, findings and totals from instant queries.

use std::time::Instant;

use super::api::{Answer, ApiError, PromClient, Series};
use super::model::Trace;

/// The time grid of the sparkline range queries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Grid {
    pub start: f64,
    pub step: f64,
    pub len: usize,
}

impl Grid {
    /// `points` slots ending at `end`, covering `window_s`.
    pub fn ending_at(end: f64, window_s: f64, points: usize) -> Grid {
        let len = points.max(2);
        let step = window_s / (len - 1) as f64;
        Grid {
            start: end - step * (len - 1) as f64,
            step,
            len,
        }
    }

    pub fn trace(&self) -> Trace {
        Trace::on_grid(self.start, self.step, self.len)
    }
}

/// Which question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Query {
    Util,
    MemoryUsed,
    Power,
    /// Time of each GPU's newest sample.
    LastSample,
    /// Raw samples of the last [`RECENT_WINDOW_S`] of every GPU: its scrape interval.
    RecentRaw,
    /// Samples in the last [`COUNT_WINDOW_S`]: the interval of GPUs scraped too rarely for that.
    SampleCount,
    /// Raw samples of the GPUs no gpulse exporter judges (asked in a second round).
    RawUtil,
    MemoryFree,
    Verdict,
    Findings,
    LostFraction,
    StarvationPeriod,
    Up,
    /// The last XID, uncorrectable errors and row remaps (dcgm-exporter's names, either naming).
    Health,
}

impl Query {
    /// The first round, asked side by side.
    pub const FIRST: [Query; 13] = [
        Query::Util,
        Query::MemoryUsed,
        Query::Power,
        Query::LastSample,
        Query::RecentRaw,
        Query::SampleCount,
        Query::MemoryFree,
        Query::Verdict,
        Query::Findings,
        Query::LostFraction,
        Query::StarvationPeriod,
        Query::Up,
        Query::Health,
    ];

    /// The PromQL of a first-round query ([`raw_util_promql`] for the second). Utilization and
    /// power are read under dcgm-exporter's names up to 4.8 and those of 4.10 and later
    /// (utilization as a ratio, scaled back to percent).
    pub fn promql(self) -> String {
        match self {
            Query::Util => format!("{UTIL} or ({UTIL_RATIO} * 100)"),
            Query::MemoryUsed => "DCGM_FI_DEV_FB_USED".into(),
            Query::Power => "DCGM_FI_DEV_POWER_USAGE or DCGM_FI_DEV_BOARD_POWER_WATTS".into(),
            Query::LastSample => format!("timestamp({UTIL} or {UTIL_RATIO})"),
            Query::RecentRaw => raw_util_promql(None, RECENT_WINDOW_S),
            Query::SampleCount => format!(
                "count_over_time({UTIL}[{COUNT_WINDOW_S}s]) or count_over_time({UTIL_RATIO}[{COUNT_WINDOW_S}s])"
            ),
            Query::RawUtil => raw_util_promql(None, 120.0),
            Query::MemoryFree => "DCGM_FI_DEV_FB_FREE".into(),
            Query::Verdict => "gpulse_verdict".into(),
            Query::Findings => "gpulse_finding_active".into(),
            Query::LostFraction => "gpulse_lost_fraction".into(),
            Query::StarvationPeriod => "gpulse_starvation_period_seconds".into(),
            Query::Up => "up".into(),
            Query::Health => super::health::health_promql(),
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
            Query::LastSample => "newest samples",
            Query::RecentRaw => "recent samples",
            Query::SampleCount => "sample counts",
            Query::RawUtil => "raw utilization",
            Query::MemoryFree => "memory free",
            Query::Verdict => "verdicts",
            Query::Findings => "findings",
            Query::LostFraction => "lost fraction",
            Query::StarvationPeriod => "starvation period",
            Query::Up => "targets",
            Query::Health => "health",
        }
    }
}

/// Seconds of raw samples read for every GPU (its scrape interval, the detail view's recent
/// scrapes).
pub const RECENT_WINDOW_S: f64 = 30.0;

/// Seconds over which samples are counted to estimate an interval longer than
/// [`RECENT_WINDOW_S`] (an estimate: a series younger than this reads as scraped less often).
pub const COUNT_WINDOW_S: f64 = 300.0;

/// Utilization under dcgm-exporter's names up to 4.8 (percent) and from 4.10 (a 0–1 ratio).
pub const UTIL: &str = "DCGM_FI_DEV_GPU_UTIL";
pub const UTIL_RATIO: &str = "DCGM_FI_DEV_GPU_UTIL_RATIO";

/// Raw utilization samples of the last `window_s`, of the `instances` given (all when `None`),
/// under either name (each series keeps its name: [`util_percent`] reads it).
///
/// Instances are matched exactly (regex metacharacters escaped) inside a PromQL raw string.
pub fn raw_util_promql(instances: Option<&[&str]>, window_s: f64) -> String {
    let window = window_s.round().max(1.0);
    let names = format!("__name__=~`{UTIL}|{UTIL_RATIO}`");
    match instances {
        None => format!("{{{names}}}[{window}s]"),
        Some(list) => {
            let alternatives: Vec<String> = list.iter().map(|i| regex_escape(i)).collect();
            format!(
                "{{{names},instance=~`{}`}}[{window}s]",
                alternatives.join("|")
            )
        }
    }
}

/// A raw utilization series' points in percent: a ratio series (dcgm-exporter 4.10 and later)
/// scaled by 100.
pub fn util_percent(s: &Series) -> Vec<(f64, f64)> {
    if s.label("__name__") == Some(UTIL_RATIO) {
        s.points.iter().map(|&(t, v)| (t, v * 100.0)).collect()
    } else {
        s.points.clone()
    }
}

fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 4);
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
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

/// Ask every query at time `now`: the first round side by side, then the raw utilization of
/// the GPUs that no gpulse exporter judges (the detector's input), if there are any.
pub fn fetch(client: &PromClient, grid: Grid, now: f64, raw_window_s: f64) -> QueryResults {
    let started = Instant::now();
    let first = Query::FIRST.iter().map(|&q| (q, q.promql())).collect();
    let mut results = QueryResults {
        results: ask(client, first, grid, now),
        took_s: 0.0,
    };
    if let Some(instances) = dcgm_only_instances(&results) {
        let refs: Vec<&str> = instances.iter().map(String::as_str).collect();
        let promql = raw_util_promql(Some(&refs), raw_window_s);
        let raw = ask(client, vec![(Query::RawUtil, promql)], grid, now);
        results.results.extend(raw);
    }
    results.took_s = started.elapsed().as_secs_f64();
    results
}

/// Instances with utilization series but no gpulse verdicts, sorted; `None` when there are none.
/// When the verdict query failed every instance counts (the detector judges them all).
pub fn dcgm_only_instances(first: &QueryResults) -> Option<Vec<String>> {
    let verdicts_failed = first
        .results
        .iter()
        .any(|(q, r)| *q == Query::Verdict && r.is_err());
    let gpulse: std::collections::HashSet<&str> = if verdicts_failed {
        Default::default()
    } else {
        first
            .series(Query::Verdict)
            .filter_map(|s| s.label("instance"))
            .collect()
    };
    let mut out: Vec<String> = [Query::LastSample, Query::Util]
        .iter()
        .flat_map(|&q| first.series(q))
        .filter_map(|s| s.label("instance"))
        .filter(|i| !gpulse.contains(i))
        .map(str::to_string)
        .collect();
    out.sort();
    out.dedup();
    (!out.is_empty()).then_some(out)
}

fn ask(
    client: &PromClient,
    queries: Vec<(Query, String)>,
    grid: Grid,
    now: f64,
) -> Vec<(Query, Result<Answer, ApiError>)> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = queries
            .into_iter()
            .map(|(q, promql)| {
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
                let r = h.join().unwrap_or_else(|payload| {
                    Err(ApiError::Internal(format!(
                        "the query's thread failed: {}",
                        super::panic_message(payload.as_ref())
                    )))
                });
                (q, r)
            })
            .collect()
    })
}
