//! The dashboard's recorder and replay controls against the real pieces: a recording written on
//! its own thread from a snapshot channel and read back by `RecordingReader`; replay keys driving
//! the real player thread.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use support::api::{
    map_key, start_replay, Action, App, EngineConfig, Recording, RecordingReader, ReplaySession,
    ReplayState, Sample, SampleSource, Scenario, SimRun, Snapshot, T0,
};
use tokio::sync::watch;

fn ch(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
}

/// Snapshots of `ticks` ticks of simulated GPUs, one per tick.
fn snapshots(ticks: usize) -> Vec<Arc<Snapshot>> {
    let mut run = SimRun::new(Scenario::Starving, 2);
    (0..ticks)
        .map(|_| {
            run.advance(0.25);
            run.snapshot()
        })
        .collect()
}

#[test]
fn recording_writes_every_new_sample_and_reads_back() {
    let snaps = snapshots(40);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("dash.ndjson.zst");
    let (tx, rx) = watch::channel(snaps[0].clone());
    let rec = Recording::start_at(&path, rx).expect("start");
    for s in &snaps[1..] {
        tx.send(s.clone()).expect("send");
        // The recorder reads the channel on its own thread; give it each snapshot.
        let deadline = Instant::now() + Duration::from_secs(5);
        while rec.status().ticks() < s.seq - snaps[0].seq && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    // The same snapshot again is not a new tick.
    tx.send(snaps[39].clone()).expect("send");
    let status = rec.stop();
    assert_eq!(status.ticks(), 39);
    assert!(!status.failed());
    let mut reader = RecordingReader::open(&path).expect("open");
    assert_eq!(reader.header().system.hostname, "testhost");
    let records = reader.read_all();
    assert!(reader.warnings().is_empty(), "{:?}", reader.warnings());
    let want: Vec<Sample> = snaps[1..]
        .iter()
        .map(|s| (*s.sample.clone().expect("sample")).clone())
        .collect();
    let got: Vec<Sample> = records.iter().map(|r| r.sample.clone()).collect();
    assert_eq!(got, want);
    // The detector's findings travel with their ticks.
    assert!(records.last().is_some_and(|r| !r.findings.is_empty()));
}

#[test]
fn a_recording_that_cannot_be_created_says_why() {
    let snaps = snapshots(1);
    let (_tx, rx) = watch::channel(snaps[0].clone());
    let err = Recording::start(std::path::Path::new("/nonexistent/dir"), rx)
        .err()
        .expect("no such directory");
    let msg = err.to_string();
    assert!(msg.contains("/nonexistent/dir/gpulse-"), "{msg}");
    assert!(msg.contains("writable"), "{msg}");
}

fn press(app: &mut App, c: char) -> Action {
    let a = map_key(ch(c), app).unwrap_or_else(|| panic!("{c} does nothing"));
    app.apply(a);
    a
}

fn wait_for(rx: &watch::Receiver<Arc<Snapshot>>, what: &str, pred: impl Fn(&Snapshot) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if pred(&rx.borrow()) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("timed out waiting for {what}; at t={}", rx.borrow().t - T0);
}

#[test]
fn replay_keys_drive_the_player() {
    let samples: Vec<Sample> = snapshots(240) // 60 s
        .iter()
        .map(|s| (*s.sample.clone().expect("sample")).clone())
        .collect();
    let (start, end) = (samples[0].t, samples[samples.len() - 1].t);
    let system = (*snapshots(1)[0].system).clone();
    let (live, control) =
        start_replay(system, EngineConfig::default(), samples, vec![start + 45.0]);
    let session = ReplaySession {
        control,
        file: "run.ndjson".into(),
        start,
        end,
        warnings: vec![],
    };
    let rx = live.snapshots.clone();
    let mut app = App::new(rx.borrow().clone(), 60.0, 600.0, true);
    app.replay = Some(ReplayState::new(&session));
    assert_eq!(press(&mut app, ' '), Action::TogglePause);
    assert_eq!(press(&mut app, ']'), Action::SeekForward);
    wait_for(&rx, "a seek 10 s forward", |s| s.t >= start + 10.0);
    assert!(
        rx.borrow().t < start + 12.0,
        "paused: no further than the seek"
    );
    assert_eq!(press(&mut app, 'n'), Action::NextFinding);
    wait_for(&rx, "the next finding at +45 s", |s| s.t >= start + 45.0);
    assert_eq!(press(&mut app, '['), Action::SeekBack);
    wait_for(&rx, "a seek back", |s| s.t <= start + 36.0);
    let seq = rx.borrow().seq;
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(rx.borrow().seq, seq, "paused");
    assert_eq!(press(&mut app, '0'), Action::ReplaySpeed(10));
    assert_eq!(press(&mut app, ' '), Action::TogglePause);
    wait_for(&rx, "playing at ×10", |s| s.t >= start + 40.0);
    assert_eq!(app.replay.as_ref().map(|r| r.speed), Some(10.0));
    assert_eq!(press(&mut app, '>'), Action::ReplayFaster);
    assert_eq!(app.replay.as_ref().map(|r| r.speed), Some(100.0));
    assert_eq!(press(&mut app, '>'), Action::ReplayFaster);
    assert_eq!(
        app.replay.as_ref().map(|r| r.speed),
        Some(100.0),
        "the fastest"
    );
    assert_eq!(press(&mut app, '<'), Action::ReplaySlower);
    assert_eq!(press(&mut app, '<'), Action::ReplaySlower);
    assert_eq!(press(&mut app, '1'), Action::ReplaySpeed(1));
    assert_eq!(press(&mut app, '<'), Action::ReplaySlower);
    assert_eq!(app.replay.as_ref().map(|r| r.speed), Some(0.5));
    assert_eq!(press(&mut app, '2'), Action::ReplaySpeed(2));
    let st = app.replay.as_ref().expect("replay");
    assert_eq!(st.speed, 2.0);
    assert!(!st.paused);
    assert!(
        !app.paused(),
        "the display itself is never frozen in replay"
    );
    // The app measures ages at the recorded time, so replayed GPUs are not stale.
    app.on_snapshot(rx.borrow().clone());
    assert_eq!(app.display_now(), app.displayed().t);
    drop(live);
}

#[test]
fn the_ledger_opens_in_a_replay_and_the_replay_keys_still_work() {
    let samples: Vec<Sample> = snapshots(240)
        .iter()
        .map(|s| (*s.sample.clone().expect("sample")).clone())
        .collect();
    let (start, end) = (samples[0].t, samples[samples.len() - 1].t);
    let system = (*snapshots(1)[0].system).clone();
    let (live, control) = start_replay(system, EngineConfig::default(), samples, vec![]);
    let session = ReplaySession {
        control,
        file: "run.ndjson".into(),
        start,
        end,
        warnings: vec![],
    };
    let rx = live.snapshots.clone();
    let mut app = App::new(rx.borrow().clone(), 60.0, 600.0, true);
    app.live_log = false;
    app.replay = Some(ReplayState::new(&session));
    assert_eq!(press(&mut app, 'L'), Action::ToggleLedger);
    assert_eq!(press(&mut app, ' '), Action::TogglePause);
    assert!(app.replay.as_ref().is_some_and(|r| r.paused));
    assert_eq!(press(&mut app, ']'), Action::SeekForward);
    wait_for(&rx, "a seek 10 s forward", |s| s.t >= start + 10.0);
    app.on_snapshot(rx.borrow().clone());
    // The replayed engine books its ledger as the live one does.
    let booked: f64 = app.displayed().gpus.iter().map(|g| g.ledger.span_s).sum();
    assert!(booked > 5.0, "{booked}");
    let s = support::screen::screen(&app, 80, 24);
    assert!(s.contains("Ledger since"), "{s}");
    let wide = support::screen::screen(&app, 120, 40);
    assert!(
        wide.contains("Space play") && wide.contains("[ ] seek"),
        "{wide}"
    );
    assert_eq!(press(&mut app, 'L'), Action::ToggleLedger);
    assert!(!support::screen::screen(&app, 80, 24).contains("Ledger since"));
    drop(live);
}
