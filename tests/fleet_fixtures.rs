//! The fleet's data side on answers recorded from a real Prometheus (2.42) scraping a gpulse-style
//! target (node-a: GPU 0 starving, GPU 1 healthy), a plain dcgm-exporter-style target (node-b:
//! GPU 0 idle, GPU 1 busy) and a target that is down; plus error and partial answers.

mod support;

use support::api::{
    build, dcgm_only_instances, fleet_to_json, parse_answer, rank, raw_util_promql, ApiError,
    DetectorCache, DetectorConfig, FindingKind, Fleet, Grid, Query, QueryResults, ResultType,
    Source,
};

fn fixture(name: &str) -> Vec<u8> {
    let p = support::fixture("prometheus").join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn file_of(q: Query) -> &'static str {
    match q {
        Query::Util => "util_range.json",
        Query::MemoryUsed => "memory_used_range.json",
        Query::Power => "power_range.json",
        Query::LastSample => "last_sample.json",
        Query::RecentRaw => "recent_raw.json",
        Query::SampleCount => "sample_count.json",
        // The second round asks only for the GPUs no gpulse exporter judges.
        Query::RawUtil => "raw_util_dcgm.json",
        Query::MemoryFree => "memory_free.json",
        Query::Verdict => "verdict.json",
        Query::Findings => "findings.json",
        Query::LostFraction => "lost_fraction.json",
        Query::StarvationPeriod => "starvation_period.json",
        Query::Up => "up.json",
        Query::Health => "empty_vector.json",
    }
}

struct Recorded {
    time: f64,
    grid: Grid,
}

fn recorded() -> Recorded {
    let meta: serde_json::Value = serde_json::from_slice(&fixture("recorded.json")).unwrap();
    let time = meta["time"].as_f64().unwrap();
    let grid = Grid::ending_at(
        time,
        meta["window_s"].as_f64().unwrap(),
        meta["points"].as_u64().unwrap() as usize,
    );
    Recorded { time, grid }
}

fn results_with(replace: &[(Query, &str)]) -> QueryResults {
    QueryResults {
        results: Query::FIRST
            .iter()
            .chain([Query::RawUtil].iter())
            .map(|&q| {
                let file = replace
                    .iter()
                    .find(|(r, _)| *r == q)
                    .map(|(_, f)| *f)
                    .unwrap_or(file_of(q));
                let status = if file.starts_with("error") { 400 } else { 200 };
                (q, parse_answer(status, &fixture(file)))
            })
            .collect(),
        took_s: 0.0,
    }
}

fn fleet_from(results: &QueryResults) -> Fleet {
    let r = recorded();
    build(
        results,
        r.grid,
        r.time,
        &DetectorConfig::default(),
        &mut DetectorCache::default(),
    )
}

#[test]
fn a_range_answer_is_a_matrix_on_the_step_grid() {
    let a = parse_answer(200, &fixture("util_range.json")).unwrap();
    assert_eq!(a.result_type, ResultType::Matrix);
    assert_eq!(a.series.len(), 4);
    let r = recorded();
    for s in &a.series {
        assert!(s.points.len() >= 10, "{:?}", s.labels);
        assert!(s
            .points
            .windows(2)
            .all(|w| (w[1].0 - w[0].0 - r.grid.step).abs() < 0.01));
        assert!(s.label("Hostname").is_some() && s.label("UUID").is_some());
    }
    // The starving GPU alternates between 0 and 100 on the 1 s scrapes.
    let raw = parse_answer(200, &fixture("raw_util.json")).unwrap();
    let starving = raw
        .series
        .iter()
        .find(|s| s.label("instance") == Some("127.0.0.1:19401") && s.label("gpu") == Some("0"))
        .unwrap();
    let values: Vec<f64> = starving.points.iter().map(|p| p.1).collect();
    assert!(values.contains(&0.0) && values.contains(&100.0));
}

#[test]
fn an_instant_answer_is_a_vector_with_one_point_per_series() {
    let a = parse_answer(200, &fixture("verdict.json")).unwrap();
    assert_eq!(a.result_type, ResultType::Vector);
    // gpulse exports a state set: one series per verdict kind per GPU, 1 for the current one.
    assert_eq!(a.series.len(), 2 * FindingKind::ALL.len());
    assert!(a.series.iter().all(|s| s.points.len() == 1));
    let set: Vec<(&str, &str)> = a
        .series
        .iter()
        .filter(|s| s.last_value() == Some(1.0))
        .map(|s| (s.label("gpu").unwrap(), s.label("verdict").unwrap()))
        .collect();
    assert!(set.contains(&("0", "input_starvation")) && set.contains(&("1", "healthy")));
    let empty = parse_answer(200, &fixture("empty_vector.json")).unwrap();
    assert!(empty.series.is_empty());
}

#[test]
fn an_error_answer_names_the_type_and_the_reason() {
    let e = parse_answer(400, &fixture("error_bad_data.json")).unwrap_err();
    match &e {
        ApiError::Query {
            status,
            error_type,
            error,
        } => {
            assert_eq!(*status, 400);
            assert_eq!(error_type, "bad_data");
            assert!(error.contains("unclosed left parenthesis"));
        }
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("bad_data"));
    let e = parse_answer(503, &fixture("error_unavailable.json")).unwrap_err();
    assert!(e.to_string().contains("too many samples"), "{e}");
}

#[test]
fn warnings_are_kept_and_reported_as_partial_data() {
    let a = parse_answer(200, &fixture("util_range_with_warnings.json")).unwrap();
    assert_eq!(a.warnings.len(), 1);
    assert_eq!(a.series.len(), 4);
    let results = results_with(&[(Query::Util, "util_range_with_warnings.json")]);
    let problems = results.problems();
    assert_eq!(problems.len(), 1);
    assert!(problems[0].contains("10.0.0.9:9201"), "{problems:?}");
    assert_eq!(fleet_from(&results).gpu_count(), 4);
}

#[test]
fn every_gpu_is_joined_grouped_by_host_and_sorted_worst_first() {
    let fleet = fleet_from(&results_with(&[]));
    assert_eq!(fleet.gpu_count(), 4);
    let hosts: Vec<&str> = fleet.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(hosts, ["node-a", "node-b"]);
    let order: Vec<(&str, &str, Option<FindingKind>, Source)> = fleet
        .gpus()
        .map(|g| (g.hostname.as_str(), g.gpu.as_str(), g.verdict, g.source))
        .collect();
    assert_eq!(
        order,
        [
            (
                "node-a",
                "0",
                Some(FindingKind::InputStarvation),
                Source::Gpulse
            ),
            ("node-a", "1", Some(FindingKind::Healthy), Source::Gpulse),
            ("node-b", "1", Some(FindingKind::Healthy), Source::Dcgm),
            ("node-b", "0", Some(FindingKind::Idle), Source::Dcgm),
        ]
    );
    let starving = fleet.gpus().next().unwrap();
    assert_eq!(starving.model.as_deref(), Some("NVIDIA H200"));
    assert_eq!(starving.uuid.as_deref(), Some("GPU-aaaa0000"));
    assert_eq!(starving.lost_fraction, Some(0.5));
    assert_eq!(starving.starvation_period_seconds, Some(4.0));
    assert_eq!(starving.findings.len(), 1);
    assert!(starving.findings[0].summary.contains("every 4.0 s"));
    // Memory: FB_USED/FB_FREE are MiB.
    assert_eq!(starving.memory_used_bytes, Some(70_000 * 1024 * 1024));
    assert_eq!(starving.memory_total_bytes, Some(143_000 * 1024 * 1024));
    // gpulse GPUs: the interval from the last 30 s of raw samples.
    assert_eq!(starving.scrape_interval_seconds, Some(1.0));
    assert!(
        (25..=31).contains(&starving.raw_util.len()),
        "{}",
        starving.raw_util.len()
    );
    assert!(starving
        .power_watts
        .is_some_and(|p| (300.0..=600.0).contains(&p)));
    assert!(!starving.is_stale());
    // The sparkline grid holds the points of the range query (the targets were scraped for the
    // last ~3 of the 10 minutes: the slots before are gaps, not zeros).
    assert_eq!(starving.util.values.len(), 120);
    let filled = starving.util.values.iter().filter(|v| v.is_some()).count();
    assert!((20..=60).contains(&filled), "{filled}");
    assert!(starving.util.values[0].is_none());
    assert_eq!(fleet.down_targets, ["127.0.0.1:19403 (dead)"]);
}

#[test]
fn a_plain_dcgm_target_gets_its_verdict_from_the_detector() {
    let fleet = fleet_from(&results_with(&[]));
    let node_b: Vec<_> = fleet.gpus().filter(|g| g.hostname == "node-b").collect();
    assert_eq!(node_b.len(), 2);
    for g in &node_b {
        assert_eq!(g.source, Source::Dcgm);
        assert!(g.raw_util.len() >= 100);
        assert_eq!(g.scrape_interval_seconds, Some(1.0));
        // 1 s scrapes: fine enough that no caveat is needed.
        assert!(g.notes.is_empty(), "{:?}", g.notes);
    }
    let idle = node_b.iter().find(|g| g.gpu == "0").unwrap();
    assert_eq!(idle.verdict, Some(FindingKind::Idle));
    let busy = node_b.iter().find(|g| g.gpu == "1").unwrap();
    assert_eq!(busy.verdict, Some(FindingKind::Healthy));
    assert_eq!(busy.utilization_gpu, Some(88.0));
}

#[test]
fn failed_queries_leave_the_rest_of_the_fleet() {
    // Verdicts and power fail: GPUs are still listed; gpulse GPUs fall back to the detector.
    let results = results_with(&[
        (Query::Verdict, "error_unavailable.json"),
        (Query::Findings, "error_unavailable.json"),
        (Query::Power, "error_bad_data.json"),
        // Without verdicts every instance's raw samples are asked for.
        (Query::RawUtil, "raw_util.json"),
    ]);
    let problems = results.problems();
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(problems
        .iter()
        .any(|p| p.starts_with("verdicts query failed")));
    assert!(results.all_failed().is_none());
    let fleet = fleet_from(&results);
    assert_eq!(fleet.gpu_count(), 4);
    assert!(fleet.gpus().all(|g| g.power_watts.is_none()));
    assert!(fleet.gpus().all(|g| g.verdict.is_some()));
}

#[test]
fn everything_failing_is_an_error_not_an_empty_fleet() {
    let all: Vec<(Query, &str)> = Query::FIRST
        .iter()
        .chain([Query::RawUtil].iter())
        .map(|&q| (q, "error_unavailable.json"))
        .collect();
    let results = results_with(&all);
    assert!(results.all_failed().is_some());
}

#[test]
fn ranking_classes_put_starvation_first_and_idle_last() {
    let fleet = fleet_from(&results_with(&[]));
    let classes: Vec<u8> = fleet.gpus().map(rank::class).collect();
    assert_eq!(classes, [0, 3, 3, 4]);
}

#[test]
fn json_lists_every_gpu_with_the_documented_fields() {
    let fleet = fleet_from(&results_with(&[]));
    let text = fleet_to_json(&fleet, "http://127.0.0.1:9090", &[]).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["schema_version"], 1);
    let gpus = v["gpus"].as_array().unwrap();
    assert_eq!(gpus.len(), 4);
    for key in [
        "instance",
        "hostname",
        "gpu",
        "uuid",
        "model",
        "verdict",
        "findings",
        "utilization_gpu",
        "memory_used_bytes",
        "memory_total_bytes",
        "power_watts",
        "source",
        "scrape_interval_seconds",
        "notes",
    ] {
        assert!(gpus[0].get(key).is_some(), "missing {key}");
    }
    assert_eq!(gpus[0]["verdict"], "input_starvation");
    assert_eq!(gpus[0]["source"], "gpulse");
    assert_eq!(gpus[3]["source"], "dcgm");
    assert_eq!(gpus[3]["verdict"], "idle");
    // An absent reading is null, never 0.
    assert!(gpus[1]["lost_fraction"].is_null());
}

#[test]
fn raw_samples_are_asked_only_for_gpus_without_an_exporter_verdict() {
    let results = results_with(&[]);
    let first = QueryResults {
        results: results
            .results
            .into_iter()
            .filter(|(q, _)| *q != Query::RawUtil)
            .collect(),
        took_s: 0.0,
    };
    assert_eq!(
        dcgm_only_instances(&first),
        Some(vec!["127.0.0.1:19402".to_string()])
    );
    let refs = ["127.0.0.1:19402"];
    assert_eq!(
        raw_util_promql(Some(&refs), 120.0),
        "{__name__=~`DCGM_FI_DEV_GPU_UTIL|DCGM_FI_DEV_GPU_UTIL_RATIO`,instance=~`127\\.0\\.0\\.1:19402`}[120s]"
    );
    // Verdicts failed: every instance is judged by the detector.
    let failed = results_with(&[(Query::Verdict, "error_unavailable.json")]);
    assert_eq!(
        dcgm_only_instances(&failed),
        Some(vec![
            "127.0.0.1:19401".to_string(),
            "127.0.0.1:19402".to_string()
        ])
    );
}

#[test]
fn sick_gpus_rank_first_whichever_names_their_exporter_writes() {
    let fleet = fleet_from(&results_with(&[(Query::Health, "health.json")]));
    let order: Vec<(&str, &str, u8)> = fleet
        .gpus()
        .map(|g| (g.hostname.as_str(), g.gpu.as_str(), g.sickness()))
        .collect();
    assert_eq!(
        order,
        [
            ("node-b", "1", 2),
            ("node-b", "0", 0),
            ("node-a", "1", 1),
            ("node-a", "0", 0),
        ]
    );
    let off_bus = fleet.gpus().next().unwrap();
    assert_eq!(rank::class(off_bus), 0);
    let h = off_bus.health.expect("health read");
    assert_eq!((h.last_xid, h.remap_failed), (Some(79), Some(false)));
    assert!(
        off_bus
            .notes
            .iter()
            .any(|n| n.contains("last XID 79: GPU has fallen off the bus")),
        "{:?}",
        off_bus.notes
    );
    // XID 0 (none since the watch began) is healthy, not sick.
    let idle = fleet.gpus().nth(1).unwrap();
    assert_eq!(idle.health.and_then(|h| h.last_xid), Some(0));
    assert_eq!(idle.verdict, Some(FindingKind::Idle));
    let json = fleet_to_json(&fleet, "http://127.0.0.1:9090", &[]).unwrap();
    assert!(json.contains("\"last_xid\": 79"), "{json}");
}
