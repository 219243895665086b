//! The waste ledger against what the jobs measured themselves: real H200 jobs whose trainer
//! timed every step (`tests/data/h200-step-timings/JOB/steps.csv`: the seconds each step waited
//! for its batch, or a checkpoint's host-only pause) and the labelled recordings whose
//! `wait_share` states the share of the job spent waiting. Each recording goes through the engine over the
//! job's own window, as the live dashboard books it; its lost GPU-seconds must match the jobs'
//! waits within the tolerances below, and its energy the power of the nvidia-smi log taken beside
//! it. `cargo test --test ledger_ground_truth -- --nocapture` prints the table.

mod support;

use std::path::{Path, PathBuf};

use support::api::{
    DetectorConfig, Engine, EngineConfig, RecordingReader, SampleSource, SmiCsvSource,
};
use support::labels::{folders, Input};
use support::repo;

/// What the ledger booked over one window.
struct Booked {
    span_s: f64,
    lost_s: f64,
    energy_j: Option<f64>,
}

/// Run `source` through an engine, keeping only the samples from `start` to `end`.
fn book(source: &mut dyn SampleSource, start: f64, end: f64) -> Booked {
    let detector = DetectorConfig::default();
    let config = EngineConfig {
        interval_s: 0.25,
        retention_s: detector.window_s + 30.0,
        detector,
    };
    let mut engine = Engine::new(source.system().clone(), config);
    engine.without_snapshots();
    while let Some(s) = source.next_sample() {
        if (start..=end).contains(&s.t) {
            engine.ingest(s);
        }
    }
    let l = engine.ledger(0).expect("one GPU");
    Booked {
        span_s: l.span_s,
        lost_s: l.lost_gpu_seconds,
        energy_j: l.energy_joules(),
    }
}

/// A job's window (its first step's start to its last step's end) and the seconds it waited.
fn steps(path: &Path) -> (f64, f64, f64) {
    let text = std::fs::read_to_string(path).expect("steps.csv");
    let (mut start, mut end, mut wait) = (f64::MAX, f64::MIN, 0.0);
    for line in text.lines().skip(1) {
        let cols: Vec<f64> = line
            .split(',')
            .take(3)
            .map(|c| c.parse().expect("a number"))
            .collect();
        start = start.min(cols[0]);
        end = end.max(cols[1]);
        wait += cols[2];
    }
    (start, end, wait)
}

/// Power integrated from an nvidia-smi log over `start..end`: each row's power held until the
/// next row (the log's own clock, UTC timestamps).
fn smi_energy(path: &Path, start: f64, end: f64) -> f64 {
    let mut source = SmiCsvSource::open(path, None).expect("nvidia-smi log");
    let mut rows = Vec::new();
    while let Some(s) = source.next_sample() {
        if let Some(w) = s.gpus[0].metrics.power_w {
            rows.push((s.t, w));
        }
    }
    rows.windows(2)
        .map(|r| {
            let (a, b) = (r[0].0.max(start), r[1].0.min(end));
            r[0].1 * (b - a).max(0.0)
        })
        .sum()
}

fn recording(dir: &Path) -> RecordingReader {
    RecordingReader::open(&dir.join("recording.ndjson.zst")).expect("recording")
}

/// How far the lost time may fall below the steps' waits, and above them, as shares of the
/// job's window: each tick books the share of its reading's window without a kernel, so the
/// error is the sampling of those windows (and, above, each step's own host part).
struct Tolerance {
    below: f64,
    above: f64,
}

const STEP_TIMED: [(&str, Tolerance); 5] = [
    ("resnet50-healthy-then-loader-bound", tolerance(0.02, 0.02)),
    ("resnet50-loader-4-workers-starving", tolerance(0.02, 0.02)),
    // 36 ms of work every 0.62 s: each tick's reading is the share of its window with a kernel.
    ("resnet50-num-workers-0", tolerance(0.02, 0.02)),
    ("resnet50-checkpoint-every-16s", tolerance(0.02, 0.02)),
    ("spin-kernel", tolerance(0.01, 0.01)),
];

const fn tolerance(below: f64, above: f64) -> Tolerance {
    Tolerance { below, above }
}

fn step_timed_dir(job: &str) -> PathBuf {
    repo("tests/data/h200-step-timings").join(job)
}

#[test]
fn lost_gpu_seconds_match_the_steps_waits_within_the_stated_tolerance() {
    println!(
        "{:<36} {:>7} {:>8} {:>9} {:>8} {:>9}",
        "job", "window", "waited", "recording", "smi log", "error"
    );
    let mut failures = Vec::new();
    for (job, tol) in &STEP_TIMED {
        let dir = step_timed_dir(job);
        let (start, end, waited) = steps(&dir.join("steps.csv"));
        let window = end - start;
        let rec = book(&mut recording(&dir), start, end);
        let mut smi = SmiCsvSource::open(&dir.join("nvidia-smi.csv"), None).expect("log");
        let log = book(&mut smi, start, end);
        println!(
            "{job:<36} {window:>6.1}s {waited:>7.1}s {:>8.1}s {:>7.1}s {:>+8.1}%",
            rec.lost_s,
            log.lost_s,
            100.0 * (rec.lost_s - waited) / window
        );
        for (input, b) in [("recording", &rec), ("nvidia-smi log", &log)] {
            let error = (b.lost_s - waited) / window;
            if error < -tol.below || error > tol.above {
                failures.push(format!(
                    "{job} ({input}): lost {:.1} s against {waited:.1} s waited in {window:.1} s",
                    b.lost_s
                ));
            }
            assert!(
                (b.span_s - window).abs() < 0.5,
                "{job}: booked {:.1} s of a {window:.1} s window",
                b.span_s
            );
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn energy_matches_the_power_of_the_log_taken_beside_the_recording() {
    for (job, _) in &STEP_TIMED {
        let dir = step_timed_dir(job);
        let (start, end, _) = steps(&dir.join("steps.csv"));
        let booked = book(&mut recording(&dir), start, end);
        let energy = booked.energy_j.expect("the recording has power readings");
        let logged = smi_energy(&dir.join("nvidia-smi.csv"), start, end);
        let error = (energy - logged) / logged;
        println!(
            "{job:<36} ledger {energy:>8.0} J, nvidia-smi log {logged:>8.0} J, {:+.2}%",
            100.0 * error
        );
        assert!(
            error.abs() < 0.02,
            "{job}: {energy:.0} J against {logged:.0} J"
        );
    }
}

/// How far a lost share may fall below a label's `wait_share`, and rise above it. Below: bursts
/// shorter than their 200 ms driver window read as busy for all of it, and a loader only
/// slightly too slow dips below its busy level without reaching zero. Above: the ledger counts
/// the time without a kernel, and each step's own host part (the batch's copy to the GPU,
/// launches between kernels) leaves the GPU without one while the trainer counts it as
/// computing.
const WAIT_SHARE_BELOW: f64 = 0.11;
const WAIT_SHARE_ABOVE: f64 = 0.05;

#[test]
fn lost_share_matches_the_wait_share_labelled_recordings_state() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for folder in folders() {
        let Some(path) = folder.input(Input::Recording) else {
            continue;
        };
        if !folder.is_job() {
            continue;
        }
        for label in &folder.labels {
            let job = &label.job;
            let Some(stated) = label.wait_share else {
                continue;
            };
            // A job that starts healthy states the share of its starving part only.
            let from = label.onset.unwrap_or(label.start);
            let to = label.recovered.unwrap_or(label.end());
            let mut reader = RecordingReader::open(&path).expect("recording");
            let booked = book(&mut reader, from, to);
            let share = booked.lost_s / (to - from);
            println!("{job:<60} stated {stated:.2} ledger {share:.3}");
            checked += 1;
            if !(stated - WAIT_SHARE_BELOW..=stated + WAIT_SHARE_ABOVE).contains(&share) {
                failures.push(format!("{job}: ledger {share:.2}, stated {stated:.2}"));
            }
        }
    }
    assert!(
        checked >= 20,
        "only {checked} labelled jobs state a wait share"
    );
    assert!(failures.is_empty(), "{failures:#?}");
}
