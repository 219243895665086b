//! `gpulse fleet --range`: pods, containers and Slurm jobs ranked across hosts by the GPU time
//! they lost, from the exporters' per-job counters, on constructed answers.

mod support;

use std::collections::BTreeMap;
use support::api::{
    build, fleet_jobs, fleet_to_json, Answer, ApiError, DetectorCache, DetectorConfig, Grid,
    JobAnswers, Query, QueryResults, ResultType, Series,
};

const NOW: f64 = 1_800_000_000.0;

fn vector(rows: &[(Vec<(&str, &str)>, f64)]) -> Result<Answer, ApiError> {
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

/// Two hosts of two gpulse GPUs each.
fn fleet() -> gpulse::fleet::Fleet {
    let rows: Vec<(Vec<(&str, &str)>, f64)> = [("a:9400", "node-a"), ("b:9400", "node-b")]
        .iter()
        .flat_map(|(inst, host)| {
            ["0", "1"].into_iter().map(move |g| {
                (
                    vec![
                        ("instance", *inst),
                        ("Hostname", *host),
                        ("gpu", g),
                        ("verdict", "healthy"),
                    ],
                    1.0,
                )
            })
        })
        .collect();
    let results = QueryResults {
        results: vec![(Query::Verdict, vector(&rows))],
        took_s: 0.0,
    };
    build(
        &results,
        Grid::ending_at(NOW, 600.0, 60),
        NOW,
        &DetectorConfig::default(),
        &mut DetectorCache::default(),
    )
}

#[test]
fn jobs_rank_across_hosts_by_time_lost() {
    let job = |inst: &'static str, gpu: &'static str, labels: &[(&'static str, &'static str)]| {
        let mut l = vec![("instance", inst), ("gpu", gpu)];
        l.extend_from_slice(labels);
        l
    };
    let train = [("pod", "train-7f9c"), ("namespace", "ml-team")];
    let lost = vec![
        // One pod on two hosts, two of its containers on one GPU: one row.
        (
            job(
                "a:9400",
                "0",
                &[train[0], train[1], ("container", "trainer")],
            ),
            3600.0,
        ),
        (
            job(
                "a:9400",
                "0",
                &[train[0], train[1], ("container", "sidecar")],
            ),
            600.0,
        ),
        (
            job(
                "b:9400",
                "1",
                &[train[0], train[1], ("container", "trainer")],
            ),
            1800.0,
        ),
        (job("b:9400", "0", &[("slurm_job", "4242")]), 7200.0),
        (job("a:9400", "1", &[("container", "web-3")]), 60.0),
    ];
    let booked = vec![(job("b:9400", "0", &[("slurm_job", "4242")]), 86_400.0)];
    let mut f = fleet();
    f.range_s = Some(86_400.0);
    fleet_jobs::apply(
        &mut f,
        &JobAnswers {
            lost: vector(&lost),
            booked: vector(&booked),
        },
    );
    let labels: Vec<&str> = f.jobs_by_lost.iter().map(|j| j.label.as_str()).collect();
    assert_eq!(
        labels,
        ["slurm 4242", "pod train-7f9c/ml-team", "container web-3"]
    );
    let pod = &f.jobs_by_lost[1];
    assert_eq!(pod.lost_gpu_seconds, 6000.0);
    assert_eq!(pod.hosts, ["node-a", "node-b"]);
    assert_eq!(pod.gpus, 2);
    assert_eq!(pod.gpu_seconds, None, "no booked series for it");
    assert_eq!(f.jobs_by_lost[0].gpu_seconds, Some(86_400.0));
    // Each GPU knows the jobs that lost time on it, for the detail view.
    let a0 = f
        .gpus()
        .find(|g| g.instance == "a:9400" && g.gpu == "0")
        .expect("GPU a/0");
    assert_eq!(
        a0.jobs_lost,
        [("pod train-7f9c/ml-team".to_string(), 4200.0)]
    );
    let doc: serde_json::Value =
        serde_json::from_str(&fleet_to_json(&f, "http://p:9090", &[]).expect("JSON"))
            .expect("JSON");
    assert_eq!(doc["jobs"][0]["slurm_job"], "4242");
    assert_eq!(doc["jobs"][1]["namespace"], "ml-team");
    assert_eq!(doc["jobs"][1]["kind"], "pod");
}
