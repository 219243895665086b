//! `gpulse analyze` as a user runs it: the real binary on the labelled H200 jobs' nvidia-smi logs
//! (`tests/data/h200`) and on fixture logs.

mod support;

use std::path::PathBuf;

use predicates::prelude::*;
use support::cli::{analyze_json, gpulse_in};
use support::labels::{job, Folder, Input};

const LOADER_8_WORKERS: &str = "resnet50-batch-128-loader-8-workers-8ms-per-sample-25s";
const LOADER_4_WORKERS: &str = "resnet50-batch-128-loader-4-workers-12ms-per-sample";
const HEALTHY: &str = "resnet50-batch-256-data-on-gpu-25s";
const IDLE: &str = "idle-no-process";
const FP32: &str = "transformer-lm-fp32";

fn fixture(name: &str) -> PathBuf {
    support::fixture("smi").join(name)
}

/// The nvidia-smi log of the labelled job `name`.
fn smi_log(name: &str) -> PathBuf {
    Folder::open(name)
        .input(Input::NvidiaSmi)
        .unwrap_or_else(|| panic!("{name}: no nvidia-smi.csv"))
}

#[test]
fn text_report_names_the_verdict_the_evidence_and_the_fix() {
    gpulse_in("UTC")
        .arg("analyze")
        .arg(smi_log(LOADER_8_WORKERS))
        .assert()
        .success()
        .stdout(predicate::str::contains("GPU 0: input_starvation"))
        .stdout(predicate::str::contains("every 1.2 s"))
        .stdout(predicate::str::contains("faster if fixed"))
        .stdout(predicate::str::contains("fix: more DataLoader workers"))
        .stdout(predicate::str::contains("utilization mean 20%"))
        // Local time of the log, here UTC.
        .stdout(predicate::str::contains("2026-12-02 13:28:3"));
}

/// An nvidia-smi log has no tensor-core activity: the report says the check was not made, and
/// the busy fp32 job reads healthy there, never tensor cores idle; its recording names it.
#[test]
fn an_nvidia_smi_log_says_tensor_cores_were_not_judged() {
    gpulse_in("UTC")
        .arg("analyze")
        .arg(smi_log(FP32))
        .assert()
        .success()
        .stdout(predicate::str::contains("GPU 0: healthy"))
        .stdout(predicate::str::contains(
            "cannot judge: no tensor-core activity in the file",
        ))
        .stdout(predicate::str::contains("tensor cores idle").not());
    let v = analyze_json(&[&Folder::open(FP32).recording()], "UTC");
    let g = &v["gpus"][0];
    assert_eq!(g["verdict"], "tensor_cores_idle", "{g}");
    assert!(g.get("limits").is_none(), "{g}");
    let text = g["findings"][0]["summary"].as_str().expect("summary");
    assert!(
        text.starts_with("SM activity 9") && text.contains("tensor cores 3.0%"),
        "{text}"
    );
}

#[test]
fn json_report_has_gpus_findings_stats_file_and_unix_times() {
    let path = smi_log(LOADER_4_WORKERS);
    let label_start = job(LOADER_4_WORKERS).start;
    let v = analyze_json(&[&path], "UTC");
    assert_eq!(v["file"], path.display().to_string());
    assert!(v["warnings"].as_array().expect("warnings").is_empty());
    let g = &v["gpus"][0];
    assert_eq!(g["index"], 0);
    assert_eq!(g["verdict"], "input_starvation");
    let f = &g["findings"][0];
    assert_eq!(f["kind"], "input_starvation");
    assert_eq!(f["severity"], "high");
    let start = f["start"].as_f64().expect("start");
    let detected = f["detected_at"].as_f64().expect("detected_at");
    // The job's start mark: 2026-12-02 13:28:04.6 UTC.
    assert!((start - label_start).abs() < 5.0, "{start}");
    assert!(detected >= start && detected - label_start <= 15.0);
    assert!((f["period_s"].as_f64().expect("period") - 1.75).abs() < 0.25);
    assert!(f["lost_fraction"].as_f64().expect("lost") > 0.5);
    assert!(f["advice"].as_str().expect("advice").contains("pin_memory"));
    let s = &g["stats"];
    for key in [
        "util_mean",
        "util_p5",
        "util_p95",
        "idle_fraction",
        "time_lost_s",
    ] {
        assert!(s[key].is_number(), "{key}: {s}");
    }
    assert!(s["idle_fraction"].as_f64().expect("idle") > 0.5);
}

#[test]
fn timestamps_are_local_time_under_tz() {
    let path = smi_log(HEALTHY);
    let utc = analyze_json(&[&path], "UTC")["start"]
        .as_f64()
        .expect("start");
    let ny = analyze_json(&[&path], "America/New_York")["start"]
        .as_f64()
        .expect("start");
    let tokyo = analyze_json(&[&path], "Asia/Tokyo")["start"]
        .as_f64()
        .expect("start");
    assert!((utc - job(HEALTHY).start).abs() < 1.0, "{utc}");
    // 13:27 in New York (EST, UTC-5) is five hours later than 13:27 UTC; Tokyo nine earlier.
    assert!((ny - utc - 5.0 * 3600.0).abs() < 1e-3, "{}", ny - utc);
    assert!((utc - tokyo - 9.0 * 3600.0).abs() < 1e-3, "{}", utc - tokyo);
}

#[test]
fn interleaved_gpus_with_units_na_and_a_garbled_line() {
    let v = analyze_json(&[&fixture("two_gpus_units.csv")], "UTC");
    let gpus = v["gpus"].as_array().expect("gpus");
    assert_eq!(gpus.len(), 2);
    assert_eq!(gpus[0]["name"], "NVIDIA H200");
    assert_eq!(gpus[0]["verdict"], "input_starvation", "{v}");
    assert_eq!(gpus[1]["verdict"], "healthy", "{v}");
    assert!((gpus[0]["findings"][0]["period_s"].as_f64().expect("p") - 1.5).abs() < 0.2);
    assert_eq!(v["samples"], 160);
    let w = v["warnings"][0].as_str().expect("a warning");
    assert!(
        w.contains("skipped 1 unreadable line") && w.contains("line 104"),
        "{w}"
    );
    // The same warning goes to stderr in text mode.
    gpulse_in("UTC")
        .arg("analyze")
        .arg(fixture("two_gpus_units.csv"))
        .assert()
        .success()
        .stderr(predicate::str::contains("line 104"));
}

#[test]
fn no_units_and_uuid_instead_of_index() {
    let v = analyze_json(&[&fixture("nounits_uuid_memory_idle.csv")], "UTC");
    let g = &v["gpus"][0];
    assert_eq!(g["verdict"], "memory_idle", "{v}");
    assert_eq!(g["index"], 0);
}

#[test]
fn headerless_logs_need_fields() {
    gpulse_in("UTC")
        .arg("analyze")
        .arg(fixture("noheader.csv"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("noheader.csv"))
        .stderr(predicate::str::contains("--fields"));
    let out = gpulse_in("UTC")
        .args([
            "analyze",
            "--json",
            "--fields",
            "timestamp,index,utilization.gpu,memory.used",
        ])
        .arg(fixture("noheader.csv"))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).expect("json");
    assert_eq!(v["gpus"][0]["verdict"], "host_bound", "{v}");
    assert_eq!(v["samples"], 80);
}

#[test]
fn empty_unrecognised_and_recording_files_are_errors_that_say_what_was_expected() {
    gpulse_in("UTC")
        .arg("analyze")
        .arg(fixture("empty.csv"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("empty.csv").and(predicate::str::contains("expected")));
    gpulse_in("UTC")
        .arg("analyze")
        .arg(fixture("not_a_log.csv"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("not_a_log.csv"))
        .stderr(predicate::str::contains("timestamp"));
    gpulse_in("UTC")
        .arg("analyze")
        .arg(fixture("recording.jsonl"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("not a gpulse recording"));
    // A bad file does not stop the others.
    gpulse_in("UTC")
        .arg("analyze")
        .arg(fixture("empty.csv"))
        .arg(smi_log(IDLE))
        .assert()
        .code(1)
        .stdout(predicate::str::contains("GPU 0: idle"));
    gpulse_in("UTC")
        .arg("analyze")
        .arg(fixture("does-not-exist.csv"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("does-not-exist.csv"));
}
