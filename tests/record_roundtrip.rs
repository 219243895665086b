//! Recordings: written by the recorder (in process and by `gpulse record`), read back by the
//! replay reader, including damaged files.

mod support;

use std::io::BufRead;
use std::path::Path;
use std::time::Duration;

use support::api::{
    Backend, DeviceSampler, Recorder, RecordingReader, Sample, SampleSource, SimBackend, SimConfig,
    SystemInfo,
};
use support::cli::gpulse;
use support::net::{spawn, wait_until};
use support::schema::validate;

fn sim_samples(n: usize) -> (SystemInfo, Vec<Sample>) {
    let cfg = SimConfig {
        gpus: 3,
        start: Some(1_700_000_000.0),
        hostname: Some("rec-host".into()),
        ..Default::default()
    };
    let system = SimBackend::new(cfg.clone()).system().clone();
    let mut devs = SimBackend::devices_for(&cfg);
    let samples = (1..=n)
        .map(|i| {
            let t = 1_700_000_000.0 + i as f64 * 0.25;
            Sample {
                t,
                gpus: devs
                    .iter_mut()
                    .map(|d| d.sample(t).expect("the simulator answers"))
                    .collect(),
                sample_duration_s: Some(0.002),
                ..Default::default()
            }
        })
        .collect();
    (system, samples)
}

/// Write `samples`, flushing after each one (as the one-second flush does in a live recording).
fn write_recording(path: &Path, system: &SystemInfo, samples: &[Sample], compress: bool) {
    let mut rec = Recorder::create(path, system, 0.25, compress).expect("create");
    for s in samples {
        rec.write(s).expect("write");
        rec.flush().expect("flush");
    }
    rec.finish().expect("finish");
}

fn read(path: &Path) -> (RecordingReader, Vec<Sample>) {
    let mut r = RecordingReader::open(path).expect("open the recording");
    let samples = std::iter::from_fn(|| r.next_sample()).collect();
    (r, samples)
}

#[test]
fn plain_round_trip_gives_back_the_same_readings() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("run.ndjson");
    let (system, samples) = sim_samples(40);
    write_recording(&path, &system, &samples, false);
    let (r, back) = read(&path);
    assert_eq!(r.system(), &system);
    assert_eq!(r.header().interval_s, 0.25);
    assert_eq!(back, samples);
    assert!(r.warnings().is_empty(), "{:?}", r.warnings());
}

#[test]
fn zstd_round_trip_by_flag_and_by_extension() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (system, samples) = sim_samples(40);
    for (name, flag) in [("a.ndjson", true), ("b.ndjson.zst", false)] {
        let path = dir.path().join(name);
        write_recording(&path, &system, &samples, flag);
        let magic = std::fs::read(&path).expect("read")[..4].to_vec();
        assert_eq!(magic, [0x28, 0xB5, 0x2F, 0xFD], "{name} is zstd");
        let (r, back) = read(&path);
        assert_eq!(back, samples, "{name}");
        assert!(r.warnings().is_empty(), "{:?}", r.warnings());
    }
}

#[test]
fn a_file_cut_mid_line_is_read_up_to_the_cut_and_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cut.ndjson");
    let (system, samples) = sim_samples(10);
    write_recording(&path, &system, &samples, false);
    let bytes = std::fs::read(&path).expect("read");
    // Lines: header, then samples. Cut in the middle of line 6 (the 5th sample).
    let starts: Vec<usize> = std::iter::once(0)
        .chain(
            bytes
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .map(|(i, _)| i + 1),
        )
        .collect();
    let cut = starts[5] + (starts[6] - starts[5]) / 2;
    std::fs::write(&path, &bytes[..cut]).expect("truncate");
    let (r, back) = read(&path);
    assert_eq!(back, samples[..4].to_vec());
    let w = r.warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].contains("line 6") && w[0].contains("cut off") && w[0].contains("up to line 5"),
        "{w:?}"
    );
}

#[test]
fn a_corrupt_middle_line_is_skipped_and_reported_by_number() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("corrupt.ndjson");
    let (system, samples) = sim_samples(8);
    write_recording(&path, &system, &samples, false);
    let text = std::fs::read_to_string(&path).expect("read");
    let mut lines: Vec<&str> = text.lines().collect();
    lines[3] = "{\"t\": 17000, \"gpus\": [oops"; // the third sample
    std::fs::write(&path, lines.join("\n") + "\n").expect("write");
    let (r, back) = read(&path);
    let mut expected = samples.clone();
    expected.remove(2);
    assert_eq!(back, expected);
    let w = r.warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("line 4:") && w[0].contains("skipped"),
        "{w:?}"
    );
}

#[test]
fn a_truncated_zstd_stream_gives_the_complete_blocks_and_a_warning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cut.ndjson.zst");
    let (system, samples) = sim_samples(30);
    write_recording(&path, &system, &samples, true);
    let bytes = std::fs::read(&path).expect("read");
    std::fs::write(&path, &bytes[..bytes.len() * 2 / 3]).expect("truncate");
    let (r, back) = read(&path);
    assert!(
        (10..30).contains(&back.len()),
        "read {} samples of 30",
        back.len()
    );
    assert_eq!(back, samples[..back.len()].to_vec());
    assert!(!r.warnings().is_empty(), "the cut is reported");
}

#[test]
fn not_a_recording_is_an_error_that_says_what_to_do() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "hello\n").expect("write");
    let e = RecordingReader::open(&path)
        .expect_err("not a recording")
        .to_string();
    assert!(
        e.contains("not a gpulse recording") && e.contains("gpulse record"),
        "{e}"
    );
}

fn lines_of(path: &Path) -> Vec<String> {
    let mut r = RecordingReader::open(path).expect("open");
    let _ = std::iter::from_fn(|| r.next_sample()).count();
    let file = std::fs::File::open(path).expect("open");
    std::io::BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .collect()
}

#[test]
fn gpulse_record_count_writes_a_header_and_that_many_ticks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("sim.ndjson");
    let out = gpulse()
        .args([
            "--backend",
            "sim",
            "--gpus",
            "2",
            "--interval",
            "100ms",
            "record",
        ])
        .arg(&path)
        .args(["--count", "6"])
        .output()
        .expect("run gpulse record");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (r, back) = read(&path);
    assert_eq!(back.len(), 6);
    assert!(r.warnings().is_empty());
    assert_eq!(r.system().devices.len(), 2);
    assert_eq!(r.header().interval_s, 0.1);
    assert!(back.iter().all(|s| s.gpus.len() == 2));
    assert!(back.windows(2).all(|w| w[1].t > w[0].t));
    let lines = lines_of(&path);
    validate("recording-header.schema.json", &lines[..1]);
}

#[cfg(unix)]
#[test]
fn kill_9_loses_at_most_the_last_second() {
    let dir = tempfile::tempdir().expect("tempdir");
    for name in ["killed.ndjson", "killed.ndjson.zst"] {
        let path = dir.path().join(name);
        let mut cmd = gpulse();
        cmd.args([
            "--backend",
            "sim",
            "--gpus",
            "2",
            "--interval",
            "100ms",
            "record",
        ])
        .arg(&path);
        let mut child = spawn(cmd);
        // Wait for the header, then record for 3 s.
        wait_until(Duration::from_secs(20), "the header", || {
            std::fs::metadata(&path).ok().filter(|m| m.len() > 0)
        });
        std::thread::sleep(Duration::from_secs(3));
        child.0.kill().expect("SIGKILL");
        let _ = child.0.wait();
        let (_r, back) = read(&path);
        // 3 s at 100 ms is ~30 ticks; at most the last second (10 ticks) may be lost, and the
        // first tick comes one interval after the header.
        assert!(
            back.len() >= 15,
            "{name}: only {} ticks survived",
            back.len()
        );
    }
}

#[cfg(unix)]
#[test]
fn sigterm_ends_a_recording_cleanly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("term.ndjson.zst");
    let mut cmd = gpulse();
    cmd.args(["--backend", "sim", "--interval", "100ms", "record"])
        .arg(&path);
    let mut child = spawn(cmd);
    std::thread::sleep(Duration::from_millis(1500));
    let pid = child.0.id().to_string();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill -TERM");
    assert!(status.success());
    let exit = child.0.wait().expect("wait");
    assert!(exit.success(), "{exit:?}");
    let (r, back) = read(&path);
    assert!(back.len() >= 5, "{}", back.len());
    assert!(
        r.warnings().is_empty(),
        "a finished zstd frame: {:?}",
        r.warnings()
    );
}

#[test]
fn gpulse_replay_refuses_what_it_cannot_play_before_opening_a_screen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "hello\n").expect("write");
    let empty = dir.path().join("empty.ndjson");
    let (system, _) = sim_samples(1);
    Recorder::create(&empty, &system, 0.25, false)
        .expect("create")
        .finish()
        .expect("finish");
    for (path, says) in [
        (&notes, "not a gpulse recording"),
        (&empty, "holds no samples"),
        (&dir.path().join("missing.ndjson"), "cannot open recording"),
    ] {
        let out = gpulse().arg("replay").arg(path).output().expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert!(out.stdout.is_empty());
    }
}
