//! `gpulse analyze` on GPU logs as people write them (`tests/data/logs`, its README names each
//! one's source): every format is read, with the GPU count and the samples of the file, times
//! placed where the file says (or assumed, and said), and the GPUs of a log without `index`
//! never mixed up.

mod support;

use std::path::{Path, PathBuf};

use predicates::prelude::*;
use support::api::{SampleSource, SmiCsvSource};
use support::cli::{analyze_json, gpulse_in};

fn log(name: &str) -> PathBuf {
    support::repo("tests/data/logs").join(name)
}

/// `gpulse analyze --json ARGS FILE` in UTC.
fn analyze_with(args: &[&str], file: &Path) -> serde_json::Value {
    let out = gpulse_in("UTC")
        .arg("analyze")
        .arg("--json")
        .args(args)
        .arg(file)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).expect("one JSON document")
}

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// Each file: its GPUs, its samples, its first time (Unix seconds), and what it assumed.
#[test]
fn every_format_is_read_with_its_gpus_samples_and_times() {
    let cases: [(&str, usize, u64, f64, Option<&str>); 8] = [
        (
            "nanogpt-8-gpus-iso-timestamps.csv.gz",
            8,
            639,
            1_758_685_713.493,
            None,
        ),
        ("unix-seconds-2-gpus.csv", 2, 240, 1_747_046_000.0, None),
        (
            "table-loop-l40s-every-60s.log",
            1,
            40,
            1_730_228_423.0,
            None,
        ),
        (
            "table-loop-2-gpus-old-driver.log",
            2,
            60,
            1_730_228_423.0,
            None,
        ),
        ("dmon-date-time.log", 1, 90, 1_747_045_998.0, None),
        (
            "dmon-2-gpus-no-times.log",
            2,
            90,
            0.0,
            Some("`nvidia-smi dmon` without `-o T` writes no times; its polls are taken 1 s apart"),
        ),
        (
            "dmon-time-of-day-past-midnight.log",
            1,
            120,
            86_340.0,
            Some("`nvidia-smi dmon -o T` writes no date"),
        ),
        (
            "dcgmi-dmon-2-gpus.log",
            2,
            120,
            0.0,
            Some("`dcgmi dmon` writes no times; its polls are taken 1 s apart"),
        ),
    ];
    for (name, gpus, samples, start, assumed) in cases {
        let v = analyze_json(&[&log(name)], "UTC");
        assert_eq!(v["gpus"].as_array().map(Vec::len), Some(gpus), "{name}");
        assert_eq!(v["samples"], samples, "{name}");
        assert!(
            (f(&v["start"]) - start).abs() < 1e-3,
            "{name}: {}",
            v["start"]
        );
        let said = v["assumptions"].to_string();
        match assumed {
            Some(a) => assert!(said.contains(a), "{name}: {said}"),
            None => assert_eq!(v["assumptions"], serde_json::Value::Null, "{name}"),
        }
        assert_eq!(v["warnings"], serde_json::json!([]), "{name}");
    }
}

#[test]
fn a_headerless_log_reads_with_the_fields_given() {
    let fields = "timestamp,utilization.gpu,utilization.memory,memory.used,memory.free,temperature.gpu,power.draw";
    let v = analyze_with(
        &["--fields", fields],
        &log("plato-1-gpu-noheader-5s.csv.gz"),
    );
    assert_eq!(v["gpus"].as_array().map(Vec::len), Some(1));
    assert_eq!(v["samples"], 1923);
    // Without them, the refusal says how to give them.
    gpulse_in("UTC")
        .arg("analyze")
        .arg(log("plato-1-gpu-noheader-5s.csv.gz"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("--fields"));
}

/// Rows without `index`, stamped apart, are grouped by poll: every sample has every GPU once,
/// each with its own readings; the poll with a row as late as a poll is skipped whole, and said.
#[test]
fn rows_without_index_are_grouped_by_poll_and_never_mix_gpus() {
    for (name, gpus, polls) in [
        ("no-index-8-gpus-250ms.csv", 8u32, 240),
        ("no-index-2-gpus-100ms.csv", 2, 600),
    ] {
        let mut src = SmiCsvSource::open(&log(name), None).expect("opens");
        assert_eq!(src.system().devices.len(), gpus as usize, "{name}");
        let mut samples = 0;
        while let Some(s) = src.next_sample() {
            samples += 1;
            let idx: Vec<u32> = s.gpus.iter().map(|g| g.index).collect();
            assert_eq!(idx, (0..gpus).collect::<Vec<u32>>(), "{name}");
            for g in &s.gpus {
                // Each GPU's own memory.used, 74698 + 29 × its place.
                let mib = g.metrics.mem_used_bytes.unwrap_or(0) / 1_048_576;
                assert_eq!(
                    mib,
                    74_698 + 29 * g.index as u64,
                    "{name}: sample {samples}"
                );
            }
        }
        assert_eq!(samples, polls - 1, "{name}");
        let w = src.warnings().join("\n");
        assert!(
            w.contains(&format!("skipped {gpus} row(s) of polls")),
            "{w}"
        );
    }
}

/// An interval given for a log without times places its polls at that interval.
#[test]
fn a_log_without_times_takes_the_interval_given() {
    let v = analyze_with(&["--interval", "5s"], &log("dmon-2-gpus-no-times.log"));
    assert!(
        (f(&v["end"]) - f(&v["start"]) - 89.0 * 5.0).abs() < 1e-9,
        "{v}"
    );
    assert!(v["assumptions"]
        .to_string()
        .contains("5 s apart (as given with --interval)"));
    let text = gpulse_in("UTC")
        .args(["analyze", "--interval", "250ms"])
        .arg(log("dcgmi-dmon-2-gpus.log"))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8_lossy(&text);
    assert!(text.contains("times assumed: `dcgmi dmon`"), "{text}");
    assert!(text.contains("0.25 s apart"), "{text}");
}

/// A log every 10 s is booked by the ledger: its intervals are its polls, not gaps.
#[test]
fn a_coarse_log_is_booked_in_the_ledger() {
    let v = analyze_json(&[&log("one-gpu-every-10s.csv")], "UTC");
    let booked = f(&v["gpus"][0]["ledger"]["span_s"]);
    assert!((booked - 359.0 * 10.002).abs() < 1e-6, "{booked}");
    let v = analyze_json(&[&log("table-loop-l40s-every-60s.log")], "UTC");
    assert!((f(&v["gpus"][0]["ledger"]["span_s"]) - 39.0 * 60.0).abs() < 1e-6);
    assert_eq!(v["gpus"][0]["name"], "NVIDIA L40S");
}

/// DCGM's profiling ratios are read as percent: with tensor-core activity in the file, the
/// report does not say it could not judge the tensor cores.
#[test]
fn dcgmi_profiling_fields_are_read() {
    let v = analyze_json(&[&log("dcgmi-dmon-2-gpus.log")], "UTC");
    let limits = v["gpus"][0]["limits"].to_string();
    assert!(!limits.contains("tensor-core"), "{limits}");
    let v = analyze_json(&[&log("dmon-2-gpus-no-times.log")], "UTC");
    assert!(v["gpus"][0]["limits"].to_string().contains("tensor-core"));
}
