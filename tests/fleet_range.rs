//! `gpulse fleet --range`: the ledger counters' increases joined to the fleet's GPUs, and the
//! fleet ranked by the GPU time lost, on constructed answers.

mod support;

use std::collections::BTreeMap;
use support::api::{
    build, fleet_ledger, fleet_to_json, Answer, ApiError, DetectorCache, DetectorConfig,
    FindingKind, Grid, Query, QueryResults, RangeAnswers, ResultType, Series,
};

const NOW: f64 = 1_800_000_000.0;

fn vector(rows: &[(&[(&str, &str)], f64)]) -> Result<Answer, ApiError> {
    Ok(Answer {
        result_type: ResultType::Vector,
        series: rows
            .iter()
            .map(|(labels, v)| Series {
                labels: labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect::<BTreeMap<_, _>>(),
                points: vec![(NOW, *v)],
            })
            .collect(),
        warnings: Vec::new(),
    })
}

/// Three hosts of two gpulse GPUs each, verdicts as given, and a dcgm-only GPU.
fn fleet() -> gpulse::fleet::Fleet {
    let verdict = |inst: &'static str, host: &'static str, gpu: &'static str, v: &'static str| {
        (
            vec![
                ("instance", inst),
                ("Hostname", host),
                ("gpu", gpu),
                ("verdict", v),
            ],
            1.0,
        )
    };
    let rows = [
        verdict("a:9400", "node-a", "0", "healthy"),
        verdict("a:9400", "node-a", "1", "healthy"),
        verdict("b:9400", "node-b", "0", "input_starvation"),
        verdict("b:9400", "node-b", "1", "healthy"),
        verdict("c:9400", "node-c", "0", "idle"),
        verdict("c:9400", "node-c", "1", "idle"),
    ];
    let refs: Vec<(&[(&str, &str)], f64)> = rows.iter().map(|(l, v)| (l.as_slice(), *v)).collect();
    let util: [(&[(&str, &str)], f64); 1] = [(
        &[("instance", "d:9400"), ("Hostname", "node-d"), ("gpu", "0")],
        50.0,
    )];
    let results = QueryResults {
        results: vec![
            (Query::Verdict, vector(&refs)),
            (Query::LastSample, vector(&util)),
        ],
        took_s: 0.0,
    };
    let grid = Grid::ending_at(NOW, 600.0, 60);
    build(
        &results,
        grid,
        NOW,
        &DetectorConfig::default(),
        &mut DetectorCache::default(),
    )
}

fn answers() -> RangeAnswers {
    let lost = |inst: &'static str, gpu: &'static str, kind: &'static str, v: f64| {
        (vec![("instance", inst), ("gpu", gpu), ("kind", kind)], v)
    };
    let rows = [
        // node-a lost a little on both GPUs: 1.5 h in all.
        lost("a:9400", "0", "erratic_stalls", 1800.0),
        lost("a:9400", "1", "periodic_stall", 3600.0),
        // node-b lost 4 h on GPU 0 to starvation and some to idle.
        lost("b:9400", "0", "input_starvation", 4.0 * 3600.0),
        lost("b:9400", "0", "idle", 600.0),
    ];
    let refs: Vec<(&[(&str, &str)], f64)> = rows.iter().map(|(l, v)| (l.as_slice(), *v)).collect();
    let booked_rows: Vec<Vec<(&str, &str)>> = ["a:9400", "b:9400", "c:9400"]
        .iter()
        .flat_map(|i| {
            ["0", "1"]
                .into_iter()
                .map(move |g| vec![("instance", *i), ("gpu", g), ("verdict", "healthy")])
        })
        .collect();
    let booked: Vec<(&[(&str, &str)], f64)> = booked_rows
        .iter()
        .map(|l| (l.as_slice(), 86_400.0))
        .collect();
    let energy: [(&[(&str, &str)], f64); 1] = [(&[("instance", "b:9400"), ("gpu", "0")], 3.6e7)];
    RangeAnswers {
        range_s: 86_400.0,
        lost: vector(&refs),
        booked: vector(&booked),
        energy: vector(&energy),
    }
}

#[test]
fn hosts_and_gpus_rank_by_gpu_time_lost_over_the_range() {
    let mut f = fleet();
    fleet_ledger::apply(&mut f, &answers());
    let hosts: Vec<&str> = f.hosts.iter().map(|h| h.name.as_str()).collect();
    // node-b lost most, then node-a; node-c lost nothing; node-d has no ledger.
    assert_eq!(hosts, ["node-b", "node-a", "node-c", "node-d"]);
    let a: Vec<&str> = f.hosts[1].gpus.iter().map(|g| g.gpu.as_str()).collect();
    assert_eq!(a, ["1", "0"], "the GPU that lost more first");
    let b0 = f.hosts[0].gpus[0].ledger.as_ref().expect("a ledger");
    assert_eq!(b0.lost_gpu_seconds, 4.0 * 3600.0 + 600.0);
    assert_eq!(b0.top_lost_kind, Some(FindingKind::InputStarvation));
    assert_eq!(b0.energy_joules, Some(3.6e7));
    assert_eq!(b0.gpu_seconds, Some(86_400.0));
    let c0 = f.hosts[2].gpus[0]
        .ledger
        .as_ref()
        .expect("booked, nothing lost");
    assert_eq!((c0.lost_gpu_seconds, c0.top_lost_kind), (0.0, None));
    assert!(f.hosts[3].gpus[0].ledger.is_none());
    assert_eq!(f.hosts_by_lost[1].lost_gpu_seconds, 5400.0);
    assert_eq!(
        f.hosts_by_lost[1].top_lost_kind,
        Some(FindingKind::PeriodicStall)
    );

    let doc: serde_json::Value =
        serde_json::from_str(&fleet_to_json(&f, "http://p:9090", &[]).expect("JSON"))
            .expect("JSON");
    assert_eq!(doc["range_s"], 86_400.0);
    assert_eq!(doc["hosts"][0]["name"], "node-b");
    assert_eq!(doc["hosts"][0]["top_lost_kind"], "input_starvation");
    assert_eq!(doc["gpus"][0]["ledger"]["lost_by_kind"]["idle"], 600.0);
    assert!(doc["gpus"].as_array().expect("gpus").last().expect("a GPU")["ledger"].is_null());
}

#[test]
fn without_a_range_the_document_keeps_its_shape() {
    let f = fleet();
    let doc: serde_json::Value =
        serde_json::from_str(&fleet_to_json(&f, "http://p:9090", &[]).expect("JSON"))
            .expect("JSON");
    assert!(doc.get("range_s").is_none() && doc.get("hosts").is_none());
    assert!(doc["gpus"][0].get("ledger").is_none());
}

#[test]
fn the_range_queries_ask_for_the_counters_increase() {
    assert_eq!(
        fleet_ledger::increase_promql("gpulse_lost_gpu_seconds_total", 86_400.0),
        "increase(gpulse_lost_gpu_seconds_total[86400s])"
    );
}
