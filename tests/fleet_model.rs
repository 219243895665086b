//! Joining, de-duplicating, ranking and the dcgm-only detector path on constructed answers.

mod support;

use std::collections::BTreeMap;
use support::api::{
    build, dcgm, rank, Answer, ApiError, DetectorCache, DetectorConfig, FindingKind, Fleet, Grid,
    Query, QueryResults, ResultType, Series, Source,
};

const NOW: f64 = 1_800_000_000.0;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn series(pairs: &[(&str, &str)], points: Vec<(f64, f64)>) -> Series {
    Series {
        labels: labels(pairs),
        points,
    }
}

fn answer(kind: ResultType, series: Vec<Series>) -> Result<Answer, ApiError> {
    Ok(Answer {
        result_type: kind,
        series,
        warnings: Vec::new(),
    })
}

/// A device's labels on `instance`.
fn dev<'a>(
    instance: &'a str,
    host: &'a str,
    gpu: &'a str,
    uuid: &'a str,
) -> Vec<(&'a str, &'a str)> {
    vec![
        ("instance", instance),
        ("Hostname", host),
        ("gpu", gpu),
        ("UUID", uuid),
        ("modelName", "NVIDIA H200"),
    ]
}

/// Raw scrapes every `interval` seconds over the last `span` seconds, of `f(t)`.
fn scrapes(interval: f64, span: f64, f: impl Fn(f64) -> f64) -> Vec<(f64, f64)> {
    let n = (span / interval) as usize;
    (0..=n)
        .map(|i| {
            let t = NOW - span + i as f64 * interval;
            (t, f(t))
        })
        .collect()
}

struct World {
    raw: Vec<Series>,
    verdicts: Vec<Series>,
    findings: Vec<Series>,
}

impl World {
    fn new() -> World {
        World {
            raw: Vec::new(),
            verdicts: Vec::new(),
            findings: Vec::new(),
        }
    }

    fn gpulse(
        &mut self,
        instance: &str,
        host: &str,
        gpu: &str,
        verdict: FindingKind,
        severity: &str,
    ) {
        let uuid = format!("GPU-{instance}-{gpu}");
        self.raw.push(series(
            &dev(instance, host, gpu, &uuid),
            scrapes(1.0, 60.0, |_| 50.0),
        ));
        self.verdicts.push(series(
            &[
                ("instance", instance),
                ("gpu", gpu),
                ("verdict", verdict.as_str()),
            ],
            vec![(NOW, 1.0)],
        ));
        if verdict != FindingKind::Healthy && verdict != FindingKind::Idle {
            self.findings.push(series(
                &[
                    ("instance", instance),
                    ("gpu", gpu),
                    ("kind", verdict.as_str()),
                    ("severity", severity),
                ],
                vec![(NOW, 1.0)],
            ));
        }
    }

    fn fleet(self) -> Fleet {
        let results = QueryResults {
            results: vec![
                (Query::RawUtil, answer(ResultType::Matrix, self.raw)),
                (Query::Verdict, answer(ResultType::Vector, self.verdicts)),
                (Query::Findings, answer(ResultType::Vector, self.findings)),
            ],
            took_s: 0.0,
        };
        build(
            &results,
            Grid::ending_at(NOW, 600.0, 120),
            NOW,
            &DetectorConfig::default(),
            &mut DetectorCache::default(),
        )
    }
}

#[test]
fn worst_first_within_and_across_hosts() {
    let mut w = World::new();
    w.gpulse("a:9400", "alpha", "0", FindingKind::Healthy, "");
    w.gpulse("a:9400", "alpha", "1", FindingKind::Idle, "");
    w.gpulse("b:9400", "bravo", "0", FindingKind::HostBound, "warn");
    w.gpulse("b:9400", "bravo", "1", FindingKind::Healthy, "");
    w.gpulse("c:9400", "charlie", "0", FindingKind::Healthy, "");
    w.gpulse("c:9400", "charlie", "1", FindingKind::MemoryIdle, "warn");
    w.gpulse("c:9400", "charlie", "2", FindingKind::Throttled, "high");
    w.gpulse("d:9400", "delta", "10", FindingKind::Idle, "");
    w.gpulse("d:9400", "delta", "9", FindingKind::Idle, "");
    let fleet = w.fleet();
    let hosts: Vec<&str> = fleet.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(hosts, ["charlie", "bravo", "alpha", "delta"]);
    let charlie: Vec<(&str, Option<FindingKind>)> = fleet.hosts[0]
        .gpus
        .iter()
        .map(|g| (g.gpu.as_str(), g.verdict))
        .collect();
    // High severity before warn in the top class; healthy last.
    assert_eq!(
        charlie,
        [
            ("2", Some(FindingKind::Throttled)),
            ("1", Some(FindingKind::MemoryIdle)),
            ("0", Some(FindingKind::Healthy)),
        ]
    );
    // Numeric GPU order: 9 before 10.
    let delta: Vec<&str> = fleet.hosts[3].gpus.iter().map(|g| g.gpu.as_str()).collect();
    assert_eq!(delta, ["9", "10"]);
    for h in &fleet.hosts {
        let classes: Vec<u8> = h.gpus.iter().map(rank::class).collect();
        assert!(
            classes.windows(2).all(|w| w[0] <= w[1]),
            "{}: {classes:?}",
            h.name
        );
    }
    assert_eq!(rank::class(&fleet.hosts[1].gpus[0]), 1);
}

#[test]
fn a_coarse_scrape_interval_is_stated() {
    let mut w = World::new();
    w.raw.push(series(
        &dev("dcgm:9400", "echo", "0", "GPU-e0"),
        scrapes(15.0, 600.0, |_| 95.0),
    ));
    let fleet = w.fleet();
    let g = fleet.gpus().next().unwrap();
    assert_eq!(g.source, Source::Dcgm);
    assert_eq!(g.scrape_interval_seconds, Some(15.0));
    assert_eq!(g.verdict, Some(FindingKind::Healthy));
    assert_eq!(g.notes.len(), 1, "{:?}", g.notes);
    assert!(
        g.notes[0].contains("15 s") && g.notes[0].contains("~60 s"),
        "{}",
        g.notes[0]
    );
}

#[test]
fn the_detector_runs_on_dcgm_utilization_through_the_engine() {
    // Idle for the last minute.
    let idle = scrapes(1.0, 120.0, |_| 0.0);
    let v = dcgm::detect(
        &idle,
        3,
        "NVIDIA H200",
        "h",
        None,
        &DetectorConfig::default(),
    );
    assert_eq!(v.verdict, Some(FindingKind::Idle));
    assert_eq!(v.note, None);
    // Busy.
    let busy = scrapes(1.0, 120.0, |_| 90.0);
    let v = dcgm::detect(
        &busy,
        3,
        "NVIDIA H200",
        "h",
        None,
        &DetectorConfig::default(),
    );
    assert_eq!(v.verdict, Some(FindingKind::Healthy));
    // One scrape is not enough to say anything.
    let v = dcgm::detect(
        &busy[..1],
        3,
        "NVIDIA H200",
        "h",
        None,
        &DetectorConfig::default(),
    );
    assert_eq!(v.verdict, None);
    assert!(v.note.unwrap().contains("fewer than two scrapes"));
}

#[test]
fn a_gpu_exported_by_gpulse_and_dcgm_is_listed_once() {
    let mut w = World::new();
    w.gpulse(
        "node:9400",
        "node",
        "0",
        FindingKind::InputStarvation,
        "warn",
    );
    // dcgm-exporter on the same host sees the same UUID.
    w.raw.push(series(
        &dev("node:9401", "node", "0", "GPU-node:9400-0"),
        scrapes(1.0, 60.0, |_| 40.0),
    ));
    let fleet = w.fleet();
    assert_eq!(fleet.gpu_count(), 1);
    let g = fleet.gpus().next().unwrap();
    assert_eq!(g.source, Source::Gpulse);
    assert_eq!(g.verdict, Some(FindingKind::InputStarvation));
    assert!(
        g.notes.iter().any(|n| n.contains("node:9401")),
        "{:?}",
        g.notes
    );
}

#[test]
fn a_target_that_stopped_answering_shows_as_no_recent_data() {
    let mut w = World::new();
    w.gpulse("a:9400", "alpha", "0", FindingKind::Healthy, "");
    let old: Vec<(f64, f64)> = scrapes(1.0, 60.0, |_| 80.0)
        .into_iter()
        .map(|(t, v)| (t - 400.0, v))
        .collect();
    w.raw
        .push(series(&dev("gone:9400", "gone", "0", "GPU-g"), old));
    let fleet = w.fleet();
    let gone = fleet.gpus().find(|g| g.hostname == "gone").unwrap();
    assert!(gone.is_stale());
    assert_eq!(rank::class(gone), 2);
    assert!(
        gone.notes.iter().any(|n| n.contains("no sample for 400 s")),
        "{:?}",
        gone.notes
    );
    // Ahead of the healthy host.
    assert_eq!(fleet.hosts[0].name, "gone");
}

#[test]
fn series_without_a_gpu_label_are_ignored() {
    let mut w = World::new();
    w.raw
        .push(series(&[("instance", "x:1")], scrapes(1.0, 10.0, |_| 1.0)));
    assert_eq!(w.fleet().gpu_count(), 0);
}

#[test]
fn the_detector_cache_feeds_only_new_scrapes_and_agrees_with_a_replay() {
    // 4 s of work, 4 s of waiting, scraped every second.
    let pattern = |t: f64| {
        if (t - NOW).rem_euclid(8.0) < 4.0 {
            100.0
        } else {
            0.0
        }
    };
    let all = scrapes(1.0, 130.0, pattern);
    let first = &all[..=120];
    let second = &all[10..];
    let key = ("dcgm:9400".to_string(), "0".to_string());
    let cfg = DetectorConfig::default();
    let mut cache = DetectorCache::default();
    let a = cache.judge(&key, first, 0, "NVIDIA H200", "h", None, &cfg);
    assert!(a.verdict.is_some());
    let b = cache.judge(&key, second, 0, "NVIDIA H200", "h", None, &cfg);
    assert_eq!(cache.len(), 1);
    let replay = dcgm::detect(&all, 0, "NVIDIA H200", "h", None, &cfg);
    assert_eq!(b, replay);
    // A series that does not continue (the target was away longer than the window) starts afresh.
    let later: Vec<(f64, f64)> = all.iter().map(|&(t, v)| (t + 1000.0, v)).collect();
    let c = cache.judge(&key, &later, 0, "NVIDIA H200", "h", None, &cfg);
    assert_eq!(c, dcgm::detect(&later, 0, "NVIDIA H200", "h", None, &cfg));
}
