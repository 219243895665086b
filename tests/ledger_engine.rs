//! The waste ledger inside the engine, on simulated GPUs with an energy counter: the seconds it
//! books under each verdict are the verdicts the snapshots showed, its energy is the counter's,
//! and the engine books the same ledger whether or not it publishes snapshots. On a real
//! recording of several jobs, `analyze` reports the same seconds per verdict in its ledger as in
//! its verdict timeline.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use support::api::{
    analyze_path, Backend, DetectorConfig, DeviceSampler, Engine, EngineConfig, FindingKind,
    GpuReading, Sample, Scenario, SimBackend, SimConfig,
};
use support::labels::Folder;

const T0: f64 = 1000.0;
const TICK: f64 = 0.25;

/// `seconds` of the starving scenario (3 GPUs) through an engine, ticking every 250 ms.
/// `each` sees the engine after every tick.
fn run(seconds: f64, snapshots: bool, mut each: impl FnMut(&Engine)) -> Engine {
    let cfg = SimConfig {
        scenario: Scenario::Starving,
        gpus: 3,
        start: Some(T0),
        hostname: Some("h".into()),
        ..Default::default()
    };
    let system = SimBackend::new(cfg.clone()).system().clone();
    let mut devices = SimBackend::devices_for(&cfg);
    let mut engine = Engine::new(system, EngineConfig::default());
    if !snapshots {
        engine.without_snapshots();
    }
    let ticks = (seconds / TICK) as usize;
    for k in 1..=ticks {
        let t = T0 + k as f64 * TICK;
        let gpus: Vec<GpuReading> = devices
            .iter_mut()
            .map(|d| d.sample(t).expect("sim never fails"))
            .collect();
        engine.ingest(Sample {
            t,
            gpus,
            ..Default::default()
        });
        each(&engine);
    }
    engine
}

#[test]
fn verdict_seconds_are_the_verdicts_the_snapshots_showed() {
    // What the snapshots showed, interval by interval: the verdict of the tick that began it.
    let mut shown: Vec<Vec<(FindingKind, f64)>> = vec![Vec::new(); 3];
    let mut previous: Option<(f64, Vec<FindingKind>)> = None;
    let engine = run(90.0, true, |e| {
        let s = e.snapshot();
        if let Some((t, verdicts)) = &previous {
            for (gpu, v) in verdicts.iter().enumerate() {
                shown[gpu].push((*v, s.t - t));
            }
        }
        previous = Some((s.t, s.gpus.iter().map(|g| g.verdict).collect()));
    });
    let s = engine.snapshot();
    for (gpu, g) in s.gpus.iter().enumerate() {
        for kind in FindingKind::ALL {
            let want: f64 = shown[gpu].iter().filter(|x| x.0 == kind).map(|x| x.1).sum();
            let booked = g.ledger.seconds_by_verdict.get(kind);
            assert!(
                (booked - want).abs() < 1e-6,
                "GPU {gpu} {kind}: {booked} vs {want}"
            );
        }
        assert!((g.ledger.span_s - 90.0 + TICK).abs() < 1e-6);
    }
    // The starving GPUs lose most of their time to starvation, and it is named by the ledger.
    let starving = &s.gpus[0].ledger;
    assert_eq!(
        starving.lost_by_kind.largest().map(|(k, _)| k),
        Some(FindingKind::InputStarvation)
    );
    let share = starving.lost_share().expect("time booked");
    assert!((0.3..0.95).contains(&share), "{share}");
}

#[test]
fn energy_follows_the_counter_and_both_modes_book_the_same_ledger() {
    let mut first: Vec<Option<f64>> = vec![None; 3];
    let mut last: Vec<Option<f64>> = vec![None; 3];
    let live = run(60.0, true, |e| {
        let s = e.snapshot();
        for (gpu, g) in s.gpus.iter().enumerate() {
            first[gpu] = first[gpu].or(g.current.energy_j);
            last[gpu] = g.current.energy_j;
        }
    });
    let offline = run(60.0, false, |_| {});
    let s = live.snapshot();
    for (pos, g) in s.gpus.iter().enumerate() {
        let counter = last[pos].expect("a counter") - first[pos].expect("a counter");
        let energy = g.ledger.energy.expect("energy");
        // The simulated counter changes every tick: every interval is settled to it.
        assert!(
            (energy.settled() - counter).abs() < 1e-6 * counter,
            "GPU {pos}: {energy:?} vs {counter}"
        );
        let same = offline.ledger(pos).expect("a ledger");
        assert_eq!(Arc::new(same.clone()), g.ledger, "GPU {pos}");
    }
}

#[test]
fn analyze_books_the_seconds_its_timeline_shows_per_verdict() {
    // Jobs one after another, the idle time between them, and a gap-free recording: every
    // interval is booked, so the two agree within a tick (the ledger stops at the last tick,
    // as the timeline's last segment does).
    let folder =
        Folder::open("jobs-healthy-then-loader-bound-spin-kernel-checkpoint-no-workers-4-workers");
    let report =
        analyze_path(&folder.recording(), None, &DetectorConfig::default()).expect("analyze");
    for g in &report.gpus {
        let mut timeline: BTreeMap<&str, f64> = BTreeMap::new();
        for s in &g.timeline {
            *timeline.entry(s.verdict.as_str()).or_default() += s.duration_s();
        }
        let ledger = &g.ledger.seconds_by_verdict;
        assert!(ledger.len() >= 4, "{ledger:?}");
        for kind in FindingKind::ALL {
            let (a, b) = (
                timeline.get(kind.as_str()).copied().unwrap_or(0.0),
                ledger.get(kind.as_str()).copied().unwrap_or(0.0),
            );
            assert!(
                (a - b).abs() <= TICK,
                "{kind}: timeline {a:.2} s, ledger {b:.2} s"
            );
        }
        let span: f64 = g.timeline.iter().map(|s| s.duration_s()).sum();
        assert!(
            (span - g.ledger.span_s).abs() <= TICK,
            "{span} vs {}",
            g.ledger.span_s
        );
    }
}
