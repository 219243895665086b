//! The dashboard's modes in a real terminal (tmux): the signal dialog's refusals, replaying a
//! recording with its keys, and recording from the dashboard with `r`.

mod support;

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;

use support::api::{Recorder, RecordingReader, SampleSource, Scenario, SimRun, T0};
use support::tmux::Tmux;

/// The recorded time the status line shows, seconds after [`T0`] (12:00:00).
fn replay_position(screen: &str) -> Option<u32> {
    let after = screen.split("REPLAY run.ndjson ").nth(1)?;
    let clock: Vec<u32> = after
        .get(..8)?
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    (clock.len() == 3 && clock[0] == 12).then(|| clock[1] * 60 + clock[2])
}

/// Six minutes of one starving simulated GPU, written with the findings the detector raised;
/// the file ends in a cut-off line. Returns the times findings were first raised (after T0).
fn write_recording(path: &Path) -> Vec<f64> {
    let mut run = SimRun::new(Scenario::Starving, 1);
    let snap = run.snapshot();
    let mut rec = Recorder::create(path, &snap.system, 0.25, false).expect("create");
    let mut seen = BTreeSet::new();
    let mut marks = Vec::new();
    for _ in 0..1440 {
        run.advance(0.25);
        let s = run.snapshot();
        let findings: Vec<_> = s.active_findings().cloned().collect();
        for f in &findings {
            if seen.insert((f.gpu, f.kind, f.start.to_bits())) {
                marks.push(f.detected_at - T0);
            }
        }
        rec.write_with_findings(s.sample.as_deref().expect("sample"), &findings)
            .expect("write");
    }
    rec.finish().expect("finish");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .expect("append");
    f.write_all(b"{\"t\":1767269161.0,\"gpus\":[{\"ind")
        .expect("cut line");
    marks
}

#[test]
fn replay_shows_its_status_seeks_jumps_to_findings_and_quits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("run.ndjson");
    let marks = write_recording(&file);
    assert!(!marks.is_empty(), "the simulated job raises a finding");
    let t = Tmux::start(120, 40, "", &format!("replay {}", file.display()));
    // The status line is drawn from the file's start at once; the header's clock from the
    // first snapshot played, which may come a frame later.
    let s = t.wait_for("the replay status line and the header's clock", |s| {
        s.contains("REPLAY run.ndjson")
            && s.contains("of 6 min) ×1 ▶")
            && s.contains("▶ REPLAY 12:0")
    });
    assert!(!s.contains("● LIVE"), "{s}");
    t.wait_for("the cut-off warning in the event panel", |s| {
        s.contains("is cut off")
    });
    t.keys(&["Space"]);
    let s = t.wait_for("pause", |s| s.contains("×1 ⏸"));
    let paused_at = replay_position(&s).expect("position");
    std::thread::sleep(std::time::Duration::from_millis(600));
    assert_eq!(
        replay_position(&t.capture()),
        Some(paused_at),
        "paused playback stays"
    );

    let mark = *marks
        .iter()
        .find(|&&m| m > f64::from(paused_at) + 1.0)
        .expect("a finding raised after the paused position");
    t.keys(&["n"]);
    let s = t.wait_for("the jump to the next finding", |s| {
        replay_position(s).is_some_and(|p| f64::from(p) >= mark.floor())
    });
    let at_mark = replay_position(&s).expect("position");
    assert!(f64::from(at_mark) <= mark + 1.0, "{mark}: {s}");

    t.keys(&["]"]);
    let s = t.wait_for("a seek forward", |s| {
        replay_position(s).is_some_and(|p| p >= at_mark + 9)
    });
    let after_seek = replay_position(&s).expect("position");
    assert!(after_seek <= at_mark + 11, "{s}");
    t.keys(&["["]);
    t.wait_for("a seek back", |s| {
        replay_position(s).is_some_and(|p| p <= at_mark + 1)
    });

    t.keys(&["0"]);
    t.wait_for("speed ×10", |s| s.contains("×10 ⏸"));
    t.keys(&["K"]);
    let s = t.wait_for("the refusal", |s| s.contains("Cannot signal PID"));
    assert!(s.contains("replay backend"), "{s}");
    t.keys(&["Escape"]);
    t.wait_for("the dialog to close", |s| !s.contains("Cannot signal PID"));
    t.keys(&["q"]);
    assert_eq!(t.wait_exit(), 0);
    assert_eq!(t.format("#{alternate_on}"), "0");
}

/// A process that aborts (a failed allocation, a panic while panicking, `kill -ABRT`) or crashes
/// runs no panic hook and no event loop: the signal handler gives the terminal back, and the
/// process still dies of the signal.
#[test]
fn an_abort_or_a_crash_under_replay_still_restores_the_terminal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("run.ndjson");
    write_recording(&file);
    for (signal, number) in [("ABRT", 6), ("SEGV", 11), ("QUIT", 3)] {
        let t = Tmux::start(120, 40, "", &format!("replay {}", file.display()));
        t.wait_for("the replay", |s| s.contains("REPLAY run.ndjson"));
        assert_eq!(t.format("#{alternate_on}"), "1");
        assert_eq!(t.format("#{mouse_sgr_flag}"), "1", "clicks reported");
        let pid = t.gpulse_pid();
        assert!(!pid.is_empty(), "gpulse is running");
        let killed = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .expect("kill");
        assert!(killed.success());
        assert_eq!(t.wait_exit(), 128 + number, "died of SIG{signal}");
        assert_eq!(
            t.format("#{alternate_on}"),
            "0",
            "SIG{signal}: alternate screen left"
        );
        assert_eq!(t.format("#{cursor_flag}"), "1", "SIG{signal}: cursor shown");
        assert_eq!(
            t.format("#{mouse_sgr_flag}"),
            "0",
            "SIG{signal}: mouse given back"
        );
        assert_eq!(
            t.format("#{mouse_standard_flag}"),
            "0",
            "SIG{signal}: mouse given back"
        );
    }
}

#[test]
fn signal_dialog_in_demo_and_under_readonly_refuses_with_the_reason() {
    let t = Tmux::start(100, 30, "", "demo --seed 1");
    t.wait_for("processes", |s| s.contains("python train.py"));
    t.keys(&["P"]);
    t.wait_for("table focus", |s| s.contains("Esc GPUs"));
    t.keys(&["Down", "K"]);
    let s = t.wait_for("the dialog", |s| s.contains("Signal a process"));
    assert!(s.contains("Cannot signal PID"), "{s}");
    assert!(s.contains("sim backend"), "{s}");
    // y does not send anything from a refusal: it closes the dialog.
    t.keys(&["y"]);
    t.wait_for("the dialog to close", |s| !s.contains("Signal a process"));
    t.keys(&["q"]);
    assert_eq!(t.wait_exit(), 0);

    let t = Tmux::start(100, 30, "", "--readonly demo --seed 1");
    t.wait_for("processes", |s| s.contains("python train.py"));
    t.keys(&["F9"]);
    let s = t.wait_for("the dialog", |s| s.contains("Signal a process"));
    assert!(s.contains("--readonly"), "{s}");
    // Esc and q apart: together they read as Alt-q.
    t.keys(&["Escape"]);
    t.wait_for("the dialog to close", |s| !s.contains("Signal a process"));
    t.keys(&["q"]);
    assert_eq!(t.wait_exit(), 0);
}

#[test]
fn r_in_demo_records_a_file_the_reader_reads_back() {
    let t = Tmux::start(120, 40, "", "demo --seed 1 --gpus 2");
    t.wait_for("live data", |s| s.contains("● LIVE"));
    t.keys(&["r"]);
    let s = t.wait_for("a few recorded ticks", |s| {
        s.split("(")
            .filter_map(|p| {
                p.strip_suffix(" ticks)")
                    .or_else(|| p.split(" ticks)").next())
            })
            .filter_map(|n| n.trim().parse::<u32>().ok())
            .any(|n| n >= 8)
            && s.contains("● REC gpulse-")
    });
    assert!(s.contains(".ndjson.zst"), "{s}");
    t.keys(&["r"]);
    let s = t.wait_for("the recording to stop", |s| {
        !s.contains("● REC") && s.contains("recorded ")
    });
    assert!(s.contains("ticks to ./gpulse-"), "{s}");
    t.keys(&["q"]);
    assert_eq!(t.wait_exit(), 0);

    let files: Vec<_> = std::fs::read_dir(t._home.path())
        .expect("read dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("gpulse-") && n.ends_with(".ndjson.zst"))
        })
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let mut reader = RecordingReader::open(&files[0]).expect("a recording");
    assert_eq!(reader.header().system.devices.len(), 2);
    let records = reader.read_all();
    assert!(records.len() >= 8, "{} records", records.len());
    assert!(reader.warnings().is_empty(), "{:?}", reader.warnings());
    assert!(records.windows(2).all(|w| w[1].sample.t > w[0].sample.t));
    assert!(records.iter().all(|r| r.sample.gpus.len() == 2));
}

#[test]
fn serve_beside_the_dashboard_shows_the_address_it_answers_on() {
    use std::io::{Read, Write};
    let t = Tmux::start(120, 40, "", "--serve 127.0.0.1:0 demo --seed 1");
    let s = t.wait_for("the serving status", |s| {
        s.contains("serving http://127.0.0.1:") && s.contains("● LIVE")
    });
    let addr: String = s
        .split("serving http://")
        .nth(1)
        .and_then(|r| r.split("/metrics").next())
        .expect("address")
        .to_string();
    assert!(!addr.ends_with(":0"), "the bound port, not 0: {addr}");
    let mut conn = std::net::TcpStream::connect(&addr).expect("connect");
    conn.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .expect("request");
    let mut body = String::new();
    conn.read_to_string(&mut body).expect("response");
    assert!(body.starts_with("HTTP/1.1 200"), "{body}");
    assert!(body.contains("DCGM_FI_DEV_GPU_UTIL"), "{body}");
    t.keys(&["q"]);
    assert_eq!(t.wait_exit(), 0);
}
