//! A recording played back through the engine gives the recorded readings to every front end.

mod support;

use std::time::{Duration, Instant};
use support::api::{
    start_replay, Backend, DeviceSampler, EngineConfig, Live, Recorder, RecordingReader,
    ReplayCommand, Sample, SimBackend, SimConfig,
};

fn wait_for_seq(live: &Live, pred: impl Fn(u64) -> bool) -> u64 {
    let start = Instant::now();
    loop {
        let seq = live.snapshots.borrow().seq;
        if pred(seq) {
            return seq;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "stuck at seq {seq}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn replay_feeds_the_engine_the_recorded_readings_with_speed_and_seek() {
    let cfg = SimConfig {
        gpus: 2,
        start: Some(1_700_000_000.0),
        ..Default::default()
    };
    let system = SimBackend::new(cfg.clone()).system().clone();
    let mut devs = SimBackend::devices_for(&cfg);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("run.ndjson.zst");
    let mut rec = Recorder::create(&path, &system, 0.25, false).expect("create");
    let mut written: Vec<Sample> = Vec::new();
    for i in 1..=80 {
        let t = 1_700_000_000.0 + f64::from(i) * 0.25;
        let s = Sample {
            t,
            gpus: devs.iter_mut().map(|d| d.sample(t).expect("sim")).collect(),
            ..Default::default()
        };
        rec.write(&s).expect("write");
        written.push(s);
    }
    rec.finish().expect("finish");

    let mut reader = RecordingReader::open(&path).expect("open");
    let records = reader.read_all();
    assert_eq!(records.len(), 80);
    let samples: Vec<Sample> = records.into_iter().map(|r| r.sample).collect();
    let (live, control) = start_replay(
        reader.header().system.clone(),
        EngineConfig::default(),
        samples,
        Vec::new(),
    );
    assert_eq!(live.system.backend, "replay");
    // 20 s of recording at ×100 plays in a fraction of a second.
    assert!(control.send(ReplayCommand::SetSpeed(100.0)));
    wait_for_seq(&live, |s| s == 80);
    let snap = live.snapshots.borrow().clone();
    let last = written.last().expect("samples");
    assert_eq!(snap.t, last.t);
    for (g, r) in snap.gpus.iter().zip(&last.gpus) {
        assert_eq!(g.current, r.metrics, "GPU {}", g.info.index);
        assert_eq!(g.processes, r.processes);
        assert_eq!(g.history.ticks.len(), 80);
    }
    // Seeking back rebuilds history from the start up to the new position.
    assert!(control.send(ReplayCommand::TogglePause));
    assert!(control.send(ReplayCommand::Seek(-10.0)));
    let seq = wait_for_seq(&live, |s| s < 80);
    assert_eq!(seq, 40, "10 s back of 20 s at 4 ticks a second");
    let snap = live.snapshots.borrow().clone();
    assert_eq!(snap.t, written[39].t);
    assert_eq!(snap.gpus[0].current, written[39].gpus[0].metrics);
}
