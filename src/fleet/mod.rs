//! The fleet view's data side: every GPU a Prometheus server knows, from gpulse exporters and from
//! plain dcgm-exporter targets, grouped by host and ordered worst first.
//!
//! ```text
//! Prometheus HTTP API ── queries (side by side, each with a deadline) ── build ── Fleet
//!                                                                  │
//!                           dcgm-only GPUs: raw utilization → Engine + Detector
//! ```
//!
//! [`Refresher`] runs the refreshes on its own thread and publishes a [`FleetState`] on a watch
//! channel: the last good fleet, when it was fetched, and what went wrong since. Nothing here
//! touches the terminal.

pub mod answer_limits;
pub mod api;
pub mod build;
pub mod dcgm;
pub mod endpoint;
pub mod health;
pub mod http_client;
pub mod http_error;
pub mod http_options;
mod http_tls;
pub mod jobs;
pub mod json;
pub mod ledger;
pub mod model;
pub mod queries;
pub mod rank;
pub mod refresh;
pub mod sanity;

use std::time::Duration;

use thiserror::Error;

use crate::detector::DetectorConfig;

pub use api::PromClient;
pub use dcgm::DetectorCache;
pub use model::{Fleet, FleetFinding, FleetGpu, FleetHost, FleetLedger, HostLost, Source, Trace};
pub use refresh::{FleetState, Refresher};

/// What to fetch and how often.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetOptions {
    /// Span of the sparklines, seconds.
    pub window_s: f64,
    /// Points per sparkline range query.
    pub points: usize,
    /// Span of raw utilization samples read for the detector and the scrape interval, seconds.
    pub raw_window_s: f64,
    /// Seconds between refreshes.
    pub refresh_s: f64,
    /// Deadline of each HTTP request.
    pub timeout: Duration,
    pub detector: DetectorConfig,
    /// `--range`: rank by the GPU time lost over this many seconds (the ledger counters).
    pub range_s: Option<f64>,
}

impl Default for FleetOptions {
    fn default() -> Self {
        FleetOptions {
            window_s: 600.0,
            points: 60,
            raw_window_s: 120.0,
            refresh_s: 5.0,
            timeout: Duration::from_secs(5),
            detector: DetectorConfig::default(),
            range_s: None,
        }
    }
}

#[derive(Debug, Error)]
pub enum FleetError {
    #[error(transparent)]
    Url(#[from] http_client::HttpError),
    #[error("Prometheus at {url} did not answer any query: {reason}")]
    Unreachable { url: String, reason: String },
    /// A fault in gpulse itself during a refresh (a bug): shown, and the next refresh runs.
    #[error("internal error while refreshing: {0}")]
    Internal(String),
}

/// One refresh's result: the fleet and the problems met on the way (failed queries, warnings).
#[derive(Debug, Clone)]
pub struct Refresh {
    pub fleet: Fleet,
    pub problems: Vec<String>,
    /// Seconds the slowest query took.
    pub took_s: f64,
}

/// Ask Prometheus once, at `now` (unix seconds).
///
/// `cache` keeps the detectors of dcgm-only GPUs from one refresh to the next.
pub fn refresh_once(
    client: &PromClient,
    opts: &FleetOptions,
    now: f64,
    cache: &mut dcgm::DetectorCache,
) -> Result<Refresh, FleetError> {
    let grid = queries::Grid::ending_at(now, opts.window_s, opts.points);
    let mut results = queries::fetch(client, grid, now, opts.raw_window_s);
    if let Some(e) = results.all_failed() {
        return Err(FleetError::Unreachable {
            url: client.url(),
            reason: e.to_string(),
        });
    }
    let dropped = sanity::clean(&mut results, now);
    let mut fleet = build::build(&results, grid, now, &opts.detector, cache);
    let mut problems = results.problems();
    problems.extend(dropped);
    if let Some(range_s) = opts.range_s {
        let answers = ledger::fetch(client, range_s, now);
        problems.extend(answers.problems());
        ledger::apply(&mut fleet, &answers);
        let job_answers = jobs::fetch(client, range_s, now);
        problems.extend(job_answers.problems());
        jobs::apply(&mut fleet, &job_answers);
    }
    Ok(Refresh {
        fleet,
        problems,
        took_s: results.took_s,
    })
}

/// The text a panic carried (`panic!("…")` gives a `&str` or a `String`).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Now, in unix seconds.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
