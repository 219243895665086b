//! `gpulse analyze` as a user runs it: the real binary on the shared traces and on fixture logs.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/smi")
        .join(name)
}

fn trace(name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    ["../shared", "../../shared"]
        .iter()
        .map(|s| root.join(s).join("traces/h200-2026-12-02").join(name))
        .find(|p| p.exists())
        .expect("the shared traces at ../shared/traces/h200-2026-12-02")
}

fn gpulse(tz: &str) -> Command {
    let mut c = Command::cargo_bin("gpulse").expect("binary");
    // No user config file: the config directory is one without a gpulse/ folder.
    c.env("TZ", tz).env("XDG_CONFIG_HOME", fixture(""));
    c.env_remove("GPULSE_BACKEND").env_remove("GPULSE_CONFIG");
    c
}

fn json(args: &[&Path], tz: &str) -> serde_json::Value {
    let mut c = gpulse(tz);
    c.arg("analyze").arg("--json").args(args);
    let out = c.assert().success().get_output().stdout.clone();
    serde_json::from_slice(&out).expect("one JSON document")
}

#[test]
fn text_report_names_the_verdict_the_evidence_and_the_fix() {
    gpulse("UTC")
        .arg("analyze")
        .arg(trace("starved_dips.smi.csv"))
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

#[test]
fn json_report_has_gpus_findings_stats_file_and_unix_times() {
    let path = trace("starved_spiky.smi.csv");
    let v = json(&[&path], "UTC");
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
    // 2026-12-02 13:28:04.6 UTC.
    assert!((start - 1_796_218_084.6).abs() < 5.0, "{start}");
    assert!(detected >= start && detected - 1_796_218_084.576 <= 15.0);
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
    let path = trace("healthy.smi.csv");
    let utc = json(&[&path], "UTC")["start"].as_f64().expect("start");
    let ny = json(&[&path], "America/New_York")["start"]
        .as_f64()
        .expect("start");
    let tokyo = json(&[&path], "Asia/Tokyo")["start"]
        .as_f64()
        .expect("start");
    assert!((utc - 1_796_218_050.5).abs() < 1.0, "{utc}");
    // 13:27 in New York (EST, UTC-5) is five hours later than 13:27 UTC; Tokyo nine earlier.
    assert!((ny - utc - 5.0 * 3600.0).abs() < 1e-3, "{}", ny - utc);
    assert!((utc - tokyo - 9.0 * 3600.0).abs() < 1e-3, "{}", utc - tokyo);
}

#[test]
fn interleaved_gpus_with_units_na_and_a_garbled_line() {
    let v = json(&[&fixture("two_gpus_units.csv")], "UTC");
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
    gpulse("UTC")
        .arg("analyze")
        .arg(fixture("two_gpus_units.csv"))
        .assert()
        .success()
        .stderr(predicate::str::contains("line 104"));
}

#[test]
fn no_units_and_uuid_instead_of_index() {
    let v = json(&[&fixture("nounits_uuid_memory_idle.csv")], "UTC");
    let g = &v["gpus"][0];
    assert_eq!(g["verdict"], "memory_idle", "{v}");
    assert_eq!(g["index"], 0);
}

#[test]
fn headerless_logs_need_fields() {
    gpulse("UTC")
        .arg("analyze")
        .arg(fixture("noheader.csv"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("noheader.csv"))
        .stderr(predicate::str::contains("--fields"));
    let out = gpulse("UTC")
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
    gpulse("UTC")
        .arg("analyze")
        .arg(fixture("empty.csv"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("empty.csv").and(predicate::str::contains("expected")));
    gpulse("UTC")
        .arg("analyze")
        .arg(fixture("not_a_log.csv"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("not_a_log.csv"))
        .stderr(predicate::str::contains("timestamp"));
    gpulse("UTC")
        .arg("analyze")
        .arg(fixture("recording.jsonl"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("not a gpulse recording"));
    // A bad file does not stop the others.
    gpulse("UTC")
        .arg("analyze")
        .arg(fixture("empty.csv"))
        .arg(trace("idle.smi.csv"))
        .assert()
        .code(1)
        .stdout(predicate::str::contains("GPU 0: idle"));
    gpulse("UTC")
        .arg("analyze")
        .arg(fixture("does-not-exist.csv"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("does-not-exist.csv"));
}
