//! The simulated shared node (`--scenario shared`) through every output: the stream's JSON (jobs
//! on processes, MIG instances with their verdicts, valid against the schema), the exporter (job
//! and MIG labels as dcgm-exporter writes them, per-job ledger counters), and `analyze --json` of
//! a recording (the ledger's rows per job).

mod support;

use std::path::Path;

use serde_json::Value;
use support::api::{
    Backend, DeviceSampler, Recorder, Sample, Scenario, SimBackend, SimConfig, SimRun,
};
use support::cli::{analyze_json, gpulse};
use support::schema::validate;

#[test]
fn the_stream_gives_jobs_and_mig_instances_and_validates() {
    let out = gpulse()
        .args([
            "--backend",
            "sim",
            "--scenario",
            "shared",
            "--gpus",
            "4",
            "--interval",
            "250ms",
            "stream",
            "--count",
            "8",
        ])
        .output()
        .expect("run gpulse");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 8);
    let last: Value = serde_json::from_str(&lines[7]).expect("JSON");
    let job = |gpu: usize, k: usize| last["gpus"][gpu]["processes"][k]["job"].clone();
    assert_eq!(job(0, 0)["label"], "pod train-7f9c/ml-team");
    assert_eq!(job(0, 0)["namespace"], "ml-team");
    assert_eq!(job(0, 0)["container"], "trainer");
    assert_eq!(job(0, 0)["runtime"], "containerd");
    assert_eq!(job(1, 1)["kind"], "container");
    assert_eq!(job(2, 0)["step"], "0");
    let mig = last["gpus"][3]["mig"]
        .as_array()
        .expect("GPU 3 in MIG mode");
    assert_eq!(mig.len(), 3);
    assert_eq!(mig[0]["profile"], "3g.71gb");
    assert!(
        mig[0]["sm_active"].is_number(),
        "GPM after a second: {}",
        mig[0]
    );
    assert!(
        last["gpus"][3]["utilization_gpu"].is_null(),
        "no utilization in MIG mode"
    );
    assert_eq!(last["gpus"][3]["processes"][0]["gpu_instance_id"], 1);
    assert!(
        last["gpus"][0].get("mig").is_none(),
        "absent outside MIG mode"
    );
    validate("snapshot.schema.json", &lines);
}

#[test]
fn the_exporter_labels_jobs_and_instances_as_dcgm_exporter_does() {
    let mut run = SimRun::new(Scenario::Shared, 4);
    run.advance(60.0);
    let text = gpulse::output::prometheus::render(&run.snapshot(), &|_| true);
    let lines = |name: &str| -> Vec<&str> {
        text.lines()
            .filter(|l| l.starts_with(&format!("{name}{{")))
            .collect()
    };
    let util = lines("DCGM_FI_DEV_GPU_UTIL");
    assert!(
        util[0].contains("gpu=\"0\"")
            && util[0].contains(",pod=\"train-7f9c\",namespace=\"ml-team\",container=\"trainer\"}"),
        "{text}"
    );
    // GPU 1 is shared by a pod and a Docker container: one series each.
    let gpu1: Vec<&&str> = util.iter().filter(|l| l.contains("gpu=\"1\"")).collect();
    assert_eq!(gpu1.len(), 2, "{util:?}");
    assert!(gpu1[1].contains(",container=\"web-3\"}"), "{util:?}");
    assert!(
        util.iter().any(|l| l.contains(",slurm_job=\"4242\"}")),
        "{util:?}"
    );
    assert!(
        !util.iter().any(|l| l.contains("gpu=\"3\"")),
        "MIG mode reports no utilization"
    );
    let sm = lines("DCGM_FI_PROF_SM_ACTIVE");
    assert!(
        sm.iter().any(|l| l.contains(",GPU_I_PROFILE=\"3g.71gb\",GPU_I_ID=\"1\",pod=\"eval-5\",namespace=\"ml-team\",container=\"eval\"}")),
        "{sm:?}"
    );
    assert!(text.contains(
        "gpulse_mig_verdict{gpu=\"3\",GPU_I_ID=\"3\",GPU_I_PROFILE=\"1g.18gb\",verdict=\"memory_idle\"} 1\n"
    ), "{text}");
    let lost = lines("gpulse_job_lost_gpu_seconds_total");
    assert!(lost.iter().any(|l| l.starts_with("gpulse_job_lost_gpu_seconds_total{gpu=\"0\",pod=\"train-7f9c\",namespace=\"ml-team\"} ")), "{lost:?}");
    assert!(
        lost.iter()
            .any(|l| l.contains("{gpu=\"3\",slurm_job=\"4243\"}")),
        "{lost:?}"
    );
    let names = support::api::metric_names();
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let name = l.split('{').next().unwrap_or("");
        assert!(names.contains(&name), "{name} is not in metric_names()");
    }
}

/// `seconds` of the shared node, written by the recorder on a virtual clock.
fn recording(path: &Path, seconds: f64) {
    let start = 1_790_000_000.0;
    let cfg = SimConfig {
        scenario: Scenario::Shared,
        gpus: 4,
        start: Some(start),
        hostname: Some("shared".into()),
        ..Default::default()
    };
    let system = SimBackend::new(cfg.clone()).system().clone();
    let mut devs = SimBackend::devices_for(&cfg);
    let mut rec = Recorder::create(path, &system, 0.25, false).expect("create");
    for i in 1..=(seconds / 0.25) as usize {
        let t = start + i as f64 * 0.25;
        let gpus = devs.iter_mut().map(|d| d.sample(t).expect("sim")).collect();
        rec.write(&Sample {
            t,
            gpus,
            ..Default::default()
        })
        .expect("write");
    }
    rec.finish().expect("finish");
}

#[test]
fn analyze_books_each_job_s_lost_time_in_the_ledger() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("shared.ndjson");
    recording(&path, 90.0);
    let v = analyze_json(&[&path], "UTC");
    let jobs = |gpu: usize| {
        v["gpus"][gpu]["ledger"]["jobs"]
            .as_array()
            .expect("jobs")
            .clone()
    };
    let starving = &jobs(0)[0];
    assert_eq!(starving["label"], "pod train-7f9c/ml-team");
    assert_eq!(starving["kind"], "pod");
    assert_eq!(starving["namespace"], "ml-team");
    let lost = starving["lost_gpu_seconds"].as_f64().expect("lost");
    let held = starving["gpu_seconds"].as_f64().expect("held");
    assert!(lost > 0.4 * held && held > 80.0, "{starving}");
    assert!(starving["energy_joules"].as_f64().is_some_and(|e| e > 0.0));
    // GPU 1: the pod and the Docker container, each with its share.
    let gpu1 = jobs(1);
    let shared: Vec<&str> = gpu1
        .iter()
        .map(|j| j["label"].as_str().expect("label"))
        .collect();
    assert_eq!(shared.len(), 2, "{shared:?}");
    assert!(shared.contains(&"docker web-3") && shared.contains(&"pod infer-2/serving"));
    // GPU 3's instances at their share of the GPU: 3, 2 and 1 of 7 slices.
    let mig = jobs(3);
    let held = |label: &str| {
        mig.iter()
            .find(|j| j["label"] == label)
            .and_then(|j| j["gpu_seconds"].as_f64())
            .expect(label)
    };
    let ratio = held("pod eval-5/ml-team") / held("docker notebook");
    assert!((ratio - 3.0).abs() < 0.05, "{ratio}");
    // The memory held idle in the 1g instance is all lost.
    let nb = mig
        .iter()
        .find(|j| j["label"] == "docker notebook")
        .expect("notebook");
    let (l, h) = (
        nb["lost_gpu_seconds"].as_f64().unwrap_or(0.0),
        nb["gpu_seconds"].as_f64().unwrap_or(1.0),
    );
    assert!(l > 0.8 * h, "{nb}");
}
