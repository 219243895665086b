//! From Prometheus answers to the fleet model: join the series of one GPU, run the detector where
//! the exporter has none, and order the result worst first.
//!
//! A GPU is identified by its `instance` and `gpu` labels; the same UUID exported by both a gpulse
//! exporter and a dcgm-exporter is shown once, from gpulse.

use crate::detector::DetectorConfig;
use crate::model::FindingKind;

use super::model::Fleet;
use super::queries::{Grid, Query, QueryResults};
use super::rank;

mod evidence;
mod finish;
mod gather;

use gather::Gathered;

const MIB: f64 = 1024.0 * 1024.0;

/// Build the fleet from one round of answers evaluated at `now`.
///
/// `cache` keeps the detectors of dcgm-only GPUs between refreshes (pass a fresh one for a
/// one-off answer).
pub fn build(
    results: &QueryResults,
    grid: Grid,
    now: f64,
    detector: &DetectorConfig,
    cache: &mut super::dcgm::DetectorCache,
) -> Fleet {
    let mut gathered = Gathered::new(results, grid);
    gathered.fill_traces(results);
    gathered.read_timing(results);
    gathered.read_memory_free(results);
    gathered.read_health(results);
    gathered.read_verdicts(results);
    gathered.read_findings(results);
    gathered.read_evidence(results);
    let out = finish::dedupe_by_uuid(gathered.finish(now, detector, cache));
    Fleet {
        time: now,
        hosts: rank::group(out),
        down_targets: down_targets(results),
        ..Fleet::default()
    }
}

/// The scrape targets Prometheus reports down, as `instance (job)`, sorted.
fn down_targets(results: &QueryResults) -> Vec<String> {
    let mut down: Vec<String> = results
        .series(Query::Up)
        .filter(|s| s.last_value() == Some(0.0))
        .map(|s| {
            format!(
                "{} ({})",
                s.label("instance").unwrap_or("?"),
                s.label("job").unwrap_or("?")
            )
        })
        .collect();
    down.sort();
    down
}

/// How bad a finding kind is for ordering, lower first: the top causes, other causes, the
/// healthy-like kinds, idle.
fn rank_of(k: FindingKind) -> u8 {
    if rank::TOP.contains(&k) {
        0
    } else if matches!(
        k,
        FindingKind::Healthy | FindingKind::Pending | FindingKind::TensorCoresIdle
    ) {
        2
    } else if k == FindingKind::Idle {
        3
    } else {
        1
    }
}
