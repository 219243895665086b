//! `gpulse analyze` on gpulse's own recordings (`gpulse record`, NDJSON, plain or zstd): the real
//! binary, recordings written by the recorder from the simulator on a virtual clock and by
//! `gpulse record` itself, damaged recordings, and the real H200 recording slices.

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};

use predicates::prelude::*;
use support::api::{Backend, DeviceSampler, Recorder, Sample, Scenario, SimBackend, SimConfig};
use support::cli::{analyze_json, gpulse_in};
use support::labels::{job, Folder};

fn gpulse() -> assert_cmd::Command {
    gpulse_in("UTC")
}

fn json(path: &Path) -> serde_json::Value {
    analyze_json(&[path], "UTC")
}

/// `seconds` of the simulator's `scenario` on 3 GPUs, written by the recorder on a virtual clock.
fn sim_recording(path: &Path, scenario: Scenario, seconds: f64) {
    let start = 1_790_000_000.0;
    let cfg = SimConfig {
        scenario,
        gpus: 3,
        start: Some(start),
        hostname: Some("rec".into()),
        ..Default::default()
    };
    let system = SimBackend::new(cfg.clone()).system().clone();
    let mut devs = SimBackend::devices_for(&cfg);
    let mut rec = Recorder::create(path, &system, 0.25, false).expect("create");
    let ticks = (seconds / 0.25) as usize;
    for i in 1..=ticks {
        let t = start + i as f64 * 0.25;
        let sample = Sample {
            t,
            gpus: devs
                .iter_mut()
                .map(|d| d.sample(t).expect("the simulator answers"))
                .collect(),
            ..Default::default()
        };
        rec.write(&sample).expect("write");
    }
    rec.finish().expect("finish");
}

fn verdicts(v: &serde_json::Value) -> Vec<String> {
    v["gpus"]
        .as_array()
        .expect("gpus")
        .iter()
        .map(|g| g["verdict"].as_str().expect("verdict").to_string())
        .collect()
}

#[test]
fn a_simulated_starving_recording_is_named_input_starvation_plain_and_zstd() {
    let dir = tempfile::tempdir().expect("tempdir");
    for name in ["starving.ndjson", "starving.ndjson.zst"] {
        let path = dir.path().join(name);
        sim_recording(&path, Scenario::Starving, 45.0);
        let v = json(&path);
        assert_eq!(v["samples"], 180, "{name}");
        assert!(
            v["source"]
                .as_str()
                .expect("source")
                .starts_with("gpulse recording"),
            "{}",
            v["source"]
        );
        assert_eq!(verdicts(&v), ["input_starvation"; 3], "{name}");
        let f = &v["gpus"][0]["findings"][0];
        assert_eq!(f["kind"], "input_starvation");
        assert!(f["period_s"].as_f64().is_some(), "{f}");
        // Statistics come from the driver windows: 5 per second, more than the 4 ticks.
        let windows = v["gpus"][0]["stats"]["samples"].as_u64().expect("samples");
        assert!(windows > 200, "{windows} windows in 45 s");
    }
}

#[test]
fn a_mixed_recording_names_each_gpu_by_its_job() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mixed.ndjson");
    sim_recording(&path, Scenario::Mixed, 40.0);
    let v = json(&path);
    // Mixed: GPU 0 starving, GPU 1 healthy, GPU 2 checkpoint (too few pauses in 40 s).
    let got = verdicts(&v);
    assert_eq!(got[0], "input_starvation", "{got:?}");
    assert_eq!(got[1], "healthy", "{got:?}");
    assert_ne!(got[2], "input_starvation", "{got:?}");
}

#[test]
fn a_simulated_fp32_job_reads_tensor_cores_idle_as_information_without_time_lost() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("fp32.ndjson");
    sim_recording(&path, Scenario::Fp32, 30.0);
    let v = json(&path);
    assert_eq!(verdicts(&v), ["tensor_cores_idle"; 3], "{v}");
    let g = &v["gpus"][0];
    let f = &g["findings"][0];
    assert_eq!(f["kind"], "tensor_cores_idle", "{f}");
    assert_eq!(f["severity"], "info", "{f}");
    assert!(f.get("lost_fraction").is_none(), "{f}");
    assert_eq!(g["stats"]["time_lost_s"], 0.0, "{g}");
    let advice = f["advice"].as_str().expect("advice");
    for switch in [
        "torch.autocast(device_type=\"cuda\", dtype=torch.bfloat16)",
        "torch.set_float32_matmul_precision(\"high\")",
        "jax.default_matmul_precision",
        "tf.keras.mixed_precision.set_global_policy(\"mixed_bfloat16\")",
        "3.0× faster with TF32",
    ] {
        assert!(advice.contains(switch), "{switch}: {advice}");
    }
    // Healthy GPUs, whose tensor cores work, read healthy.
    let healthy = dir.path().join("healthy.ndjson");
    sim_recording(&healthy, Scenario::Healthy, 30.0);
    assert_eq!(verdicts(&json(&healthy)), ["healthy"; 3]);
}

#[test]
fn gpulse_record_output_is_read_back_by_analyze() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("rec.ndjson.zst");
    gpulse()
        .args([
            "--backend",
            "sim",
            "--scenario",
            "starving",
            "--interval",
            "100ms",
        ])
        .arg("record")
        .arg(&path)
        .args(["--count", "12"])
        .timeout(std::time::Duration::from_secs(30))
        .assert()
        .success();
    let v = json(&path);
    assert_eq!(v["samples"], 12);
    assert_eq!(v["gpus"].as_array().expect("gpus").len(), 4);
    // 1.2 s of data is too little for any finding: busy GPUs, no pattern yet.
    assert!(
        verdicts(&v).iter().all(|k| k == "healthy" || k == "idle"),
        "{v}"
    );
}

/// A recording compressed with gzip reads as the zstd one it was made from.
#[test]
fn a_gzip_recording_reads_as_its_zstd_original() {
    let original = recording(BUFFER_READ_EVERY_2S);
    let plain = zstd::decode_all(std::fs::File::open(&original).expect("opens")).expect("zstd");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("recording.ndjson.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(&plain).expect("gzip");
    std::fs::write(&path, enc.finish().expect("gzip")).expect("write");
    let (a, b) = (json(&original), json(&path));
    assert_eq!(a["samples"], b["samples"]);
    assert_eq!(verdicts(&a), verdicts(&b));
    assert!(b["source"]
        .as_str()
        .is_some_and(|s| s.starts_with("gpulse recording")));
}

#[test]
fn a_damaged_recording_is_analysed_up_to_the_damage_with_warnings_naming_the_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = dir.path().join("good.ndjson");
    sim_recording(&good, Scenario::Starving, 30.0);
    let text = std::fs::read_to_string(&good).expect("read");
    let mut lines: Vec<&str> = text.lines().collect();
    lines[10] = "{\"t\": garbage";
    let last = lines.pop().expect("a last line");
    let bad = dir.path().join("bad.ndjson");
    let mut f = std::fs::File::create(&bad).expect("create");
    for l in &lines {
        writeln!(f, "{l}").expect("write");
    }
    // Cut the last line in the middle, as a crash would.
    write!(f, "{}", &last[..last.len() / 2]).expect("write");
    drop(f);
    gpulse()
        .arg("analyze")
        .arg(&bad)
        .assert()
        .success()
        .stdout(predicate::str::contains("GPU 0 ("))
        .stderr(predicate::str::contains("line 11: not a valid sample"))
        .stderr(predicate::str::contains("line 121 is cut off"));
    let v = json(&bad);
    assert_eq!(v["samples"], 118);
    assert_eq!(v["warnings"].as_array().expect("warnings").len(), 2);
}

/// The recording of the labelled job `name` (`tests/data/h200/NAME/recording.ndjson.zst`).
fn recording(name: &str) -> PathBuf {
    Folder::open(name).recording()
}

#[test]
fn the_real_h200_recordings_give_their_verdicts_with_gpm_evidence() {
    let v = json(&recording(
        "resnet50-batch-128-loader-2-workers-30ms-per-sample-32s",
    ));
    assert_eq!(v["source"], "gpulse recording, nvml");
    let g = &v["gpus"][0];
    assert_eq!(g["name"], "NVIDIA H200");
    assert_eq!(g["verdict"], "input_starvation");
    let p = g["findings"][0]["period_s"].as_f64().expect("period");
    assert!((p - 4.0).abs() < 0.6, "period {p}");
    // The recorded processes give the host evidence: the job's 2 DataLoader workers.
    let notes = g["findings"][0]["notes"].as_array().expect("host notes");
    assert!(
        notes.iter().any(|n| n
            .as_str()
            .is_some_and(|n| n.contains("2 DataLoader workers"))),
        "{notes:?}"
    );
    gpulse()
        .arg("analyze")
        .arg(recording(
            "resnet50-batch-256-loader-1-worker-20ms-per-sample-31s",
        ))
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "host: pid 866: only 1 DataLoader workers",
        ));
    gpulse()
        .arg("analyze")
        .arg(recording("mlp-batch-32-loss-item-every-step-22s"))
        .assert()
        .success()
        .stdout(predicate::str::contains("GPU 0 (NVIDIA H200): host_bound"))
        .stdout(predicate::str::contains("SM activity only 0.3%"));
}

#[test]
fn a_compressed_log_is_read_and_a_compressed_file_of_neither_kind_is_an_error_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("log.csv.zst");
    let csv = b"timestamp, utilization.gpu [%]\n2026/12/02 10:00:00.000, 5 %\n";
    std::fs::write(&path, zstd::encode_all(&csv[..], 3).expect("zstd")).expect("write");
    gpulse()
        .args(["analyze", "--json"])
        .arg(&path)
        .assert()
        .success()
        .stdout(predicate::str::contains("\"samples\":1"));
    let junk = dir.path().join("junk.zst");
    std::fs::write(
        &junk,
        zstd::encode_all(&b"\x01\x02 not a log\n"[..], 3).expect("zstd"),
    )
    .expect("write");
    gpulse()
        .arg("analyze")
        .arg(&junk)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("junk.zst"))
        .stderr(predicate::str::contains("not a header"));
}

/// A job whose workers sleep 8 ms per sample, recorded with the driver's sample buffer read every
/// 2 s, the processes every second and their utilization every 5 s.
const BUFFER_READ_EVERY_2S: &str =
    "resnet50-batch-128-loader-8-workers-8ms-per-sample-buffer-read-every-2s";

#[test]
fn a_recording_with_windows_read_every_two_seconds_keeps_every_window_and_names_the_starvation() {
    let path = recording(BUFFER_READ_EVERY_2S);
    let file = std::fs::File::open(&path).expect("recording");
    let text = std::io::read_to_string(zstd::Decoder::new(file).expect("zstd")).expect("text");
    let mut windows: Vec<f64> = Vec::new();
    for line in text.lines().skip(1) {
        let tick: serde_json::Value = serde_json::from_str(line).expect("tick");
        // Ticks between buffer reads carry no windows.
        for w in tick["gpus"][0]["util_windows"]
            .as_array()
            .into_iter()
            .flatten()
        {
            windows.push(w["t"].as_f64().expect("t"));
        }
    }
    // Batches of ~10 windows every 2 s, yet every 200 ms window once, in order.
    let span = windows[windows.len() - 1] - windows[0];
    assert_eq!(windows.len(), (span / 0.2).round() as usize + 1, "{span} s");
    assert!(windows
        .windows(2)
        .all(|p| (0.15..0.25).contains(&(p[1] - p[0]))));

    let v = json(&path);
    let g = &v["gpus"][0];
    assert_eq!(g["verdict"], "input_starvation");
    let findings = g["findings"].as_array().expect("findings");
    let starving = findings
        .iter()
        .find(|f| f["kind"] == "input_starvation")
        .expect("an input_starvation finding");
    // The job's start mark: named within 15 s of it.
    let start = job(BUFFER_READ_EVERY_2S).start;
    let detected = starving["detected_at"].as_f64().expect("detected_at");
    assert!(
        detected - start < 15.0,
        "detected {} s after the start",
        detected - start
    );
    let period = starving["period_s"].as_f64().expect("period");
    assert!((1.0..1.5).contains(&period), "period {period}");
    // The workers sleep (the data set sleeps 8 ms per sample): waiting on a source, not CPU.
    let notes = starving["notes"].as_array().expect("host notes");
    assert!(
        notes.iter().any(|n| n
            .as_str()
            .is_some_and(|n| n.contains("8 DataLoader workers")
                && n.contains("asleep")
                && n.contains("other than the CPU or local disk"))),
        "{notes:?}"
    );
}

/// A recorded starving job's findings through `analyze --json`, and its `input_starvation`
/// finding; the verdict must be `input_starvation`.
fn starving_job(name: &str) -> (Vec<serde_json::Value>, serde_json::Value) {
    let v = json(&recording(name));
    let g = &v["gpus"][0];
    assert_eq!(g["verdict"], "input_starvation", "{name}");
    let findings = g["findings"].as_array().expect("findings").clone();
    let starving = findings
        .iter()
        .find(|f| f["kind"] == "input_starvation")
        .expect("an input_starvation finding")
        .clone();
    (findings, starving)
}

/// Seconds from `start` to when `finding` was raised; its period must be within 15% of `truth`.
fn period_named(finding: &serde_json::Value, start: f64, truth: f64) -> f64 {
    let period = finding["period_s"].as_f64().expect("period");
    assert!((period - truth).abs() <= 0.15 * truth, "period {period}");
    finding["detected_at"].as_f64().expect("detected_at") - start
}

const ONE_WORKER_4S: &str = "resnet50-batch-192-loader-1-worker-20ms-per-sample";

/// One DataLoader worker, a batch every ~4.2 s.
#[test]
fn a_one_worker_job_with_a_four_second_period_is_flagged_at_once_and_its_period_named() {
    let (findings, starving) = starving_job(ONE_WORKER_4S);
    // The start mark: a starving kind within 15 s of it.
    let start = job(ONE_WORKER_4S).start;
    let first = findings
        .iter()
        .filter(|f| f["kind"] == "input_starvation" || f["kind"] == "erratic_stalls")
        .filter_map(|f| f["detected_at"].as_f64())
        .fold(f64::INFINITY, f64::min);
    assert!(
        first - start < 15.0,
        "flagged {} s after the start",
        first - start
    );
    // The period itself within 15 s as well (three dips: a provisional period); the burst
    // spacing in the driver windows is 4.2 s.
    let named = period_named(&starving, start, 4.2);
    assert!(named < 15.0, "period named {named} s after the start");
    assert!(starving["lost_fraction"].as_f64().is_some_and(|l| l > 0.8));
    let notes = starving["notes"].to_string();
    assert!(notes.contains("only 1 DataLoader workers"), "{notes}");
}

const ONE_WORKER_AFTER_WARM_UP: &str =
    "resnet50-batch-256-loader-1-worker-20ms-per-sample-after-warm-up";

/// One DataLoader worker, a batch every ~5.5 s after a warm-up that flickers.
#[test]
fn a_warm_up_before_a_slow_loader_does_not_hide_its_period() {
    let (_, starving) = starving_job(ONE_WORKER_AFTER_WARM_UP);
    // The start mark. The third burst, which ends the second long dip, is in the
    // window 13.3 s after it, which arrived with the read of the driver's buffer (every 2 s
    // here) at 13.7 s: named from three cycles then, not when the third long dip's first window
    // arrives with the next read (15.6 s before), nor after the warm-up's dips have left the
    // median (20.6 s before that). The burst spacing in the driver windows is 5.5 s.
    let named = period_named(&starving, job(ONE_WORKER_AFTER_WARM_UP).start, 5.5);
    assert!(
        (13.3..14.0).contains(&named),
        "named {named} s after the start"
    );
    let dip = starving["dip_s"].as_f64().expect("dip");
    assert!(dip > 4.5, "dip {dip}");
}
