//! Tests of the engine: history, stale ticks, findings' host evidence.
use super::*;
use crate::backend::sim::{SimBackend, SimConfig};
use crate::backend::DeviceSampler;
use crate::model::GpuReading;

fn sim_run(seconds: f64) -> Engine {
    let cfg = SimConfig {
        gpus: 2,
        start: Some(1000.0),
        hostname: Some("h".into()),
        ..Default::default()
    };
    let system = SimBackend::new(cfg.clone()).system().clone();
    let mut devs = SimBackend::devices_for(&cfg);
    let mut engine = Engine::new(system, EngineConfig::default());
    let mut t = 1000.0;
    while t < 1000.0 + seconds {
        t += 0.25;
        let gpus: Vec<GpuReading> = devs
            .iter_mut()
            .map(|d| d.sample(t).expect("sim never fails"))
            .collect();
        engine.ingest(Sample {
            t,
            gpus,
            ..Default::default()
        });
    }
    engine
}

use crate::backend::Backend;

#[test]
fn history_holds_every_tick_and_every_driver_window() {
    let e = sim_run(30.0);
    let s = e.snapshot();
    assert_eq!(s.seq, 120);
    let g = &s.gpus[0];
    assert_eq!(g.history.ticks.len(), 120);
    // 30 s of 200 ms windows.
    assert!(
        (148..=151).contains(&g.history.util.len()),
        "{}",
        g.history.util.len()
    );
    assert_eq!(g.status, GpuStatus::Ok);
    assert_eq!(g.last_ok, Some(s.t));
}

#[test]
fn a_stale_tick_keeps_the_last_readings_and_records_a_gap() {
    let mut e = sim_run(2.0);
    let before = e.snapshot().gpus[1].current;
    let t = e.snapshot().t + 0.25;
    e.ingest(Sample {
        t,
        gpus: vec![
            GpuReading {
                index: 0,
                ..Default::default()
            },
            GpuReading::empty(1, GpuStatus::Stale { since: t - 0.25 }),
        ],
        ..Default::default()
    });
    let s = e.snapshot();
    assert_eq!(s.gpus[1].current, before);
    assert!(matches!(s.gpus[1].status, GpuStatus::Stale { .. }));
    let last = s.gpus[1].history.ticks.last().expect("a tick");
    assert!(!last.ok);
    assert_eq!(last.metrics.util_gpu, None);
    assert_eq!(s.stats.errors_total, 1);
    assert!((s.gpus[1].age(t).expect("answered once") - 0.25).abs() < 1e-9);
}

/// The starving scenario's GPU 0 (CPU-saturated workers) and GPU 2 (workers in D state)
/// through the engine on a virtual clock; `calm_after` replaces every worker by an idle one
/// from that time on.
fn starving_run(seconds: f64, calm_after: f64) -> (Engine, Vec<FindingEvent>) {
    let cfg = SimConfig {
        scenario: crate::backend::sim::Scenario::Starving,
        gpus: 3,
        start: Some(1000.0),
        hostname: Some("h".into()),
        ..Default::default()
    };
    let system = SimBackend::new(cfg.clone()).system().clone();
    let mut devs = SimBackend::devices_for(&cfg);
    let mut engine = Engine::new(system, EngineConfig::default());
    let host = HostReading {
        cpu_count: Some(32),
        cpu_percent: Some(20.0),
        iowait_percent: Some(1.0),
        ..Default::default()
    };
    let mut events = Vec::new();
    let mut t = 1000.0;
    while t < 1000.0 + seconds {
        t += 0.25;
        let mut gpus: Vec<GpuReading> = devs
            .iter_mut()
            .map(|d| d.sample(t).expect("sim never fails"))
            .collect();
        if t >= 1000.0 + calm_after {
            for c in gpus
                .iter_mut()
                .flat_map(|g| g.processes.iter_mut())
                .flat_map(|p| p.children.iter_mut())
            {
                c.cpu_percent = Some(1.0);
                c.state = Some('S');
            }
        }
        events.extend(engine.ingest(Sample {
            t,
            gpus,
            host,
            ..Default::default()
        }));
    }
    (engine, events)
}

fn starvation_notes(s: &Snapshot, gpu: usize) -> Vec<String> {
    s.gpus[gpu]
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::InputStarvation)
        .map(|f| f.evidence.notes.clone())
        .unwrap_or_default()
}

#[test]
fn a_raised_starvation_event_carries_the_host_evidence() {
    let (engine, events) = starving_run(25.0, f64::MAX);
    let raised: Vec<&Finding> = events
        .iter()
        .filter_map(|e| match e {
            FindingEvent::Raised(f) if f.kind == FindingKind::InputStarvation => Some(f),
            _ => None,
        })
        .collect();
    let gpu0 = raised.iter().find(|f| f.gpu == 0).expect("GPU 0 raised");
    assert!(
        gpu0.evidence
            .notes
            .iter()
            .any(|n| n.contains("CPU-saturated")),
        "{:?}",
        gpu0.evidence.notes
    );
    assert!(gpu0.advice.contains("host: "), "{}", gpu0.advice);
    let gpu2 = raised.iter().find(|f| f.gpu == 2).expect("GPU 2 raised");
    assert!(
        gpu2.evidence.notes.iter().any(|n| n.contains("pid")),
        "{:?}",
        gpu2.evidence.notes
    );
    assert_ne!(gpu0.evidence.notes, gpu2.evidence.notes);
    // The snapshot shows the same evidence.
    assert!(!starvation_notes(&engine.snapshot(), 0).is_empty());
}

#[test]
fn host_evidence_follows_the_workers_while_a_finding_is_active() {
    let (calm, _) = starving_run(25.0, 20.0);
    let s = calm.snapshot();
    assert!(
        s.gpus[0]
            .findings
            .iter()
            .any(|f| f.kind == FindingKind::InputStarvation),
        "still starving by the GPU's own signal"
    );
    // 5 s after the workers went idle the note says so, not "CPU-saturated".
    let notes = starvation_notes(&s, 0);
    assert!(
        notes.iter().all(|n| !n.contains("CPU-saturated")),
        "{notes:?}"
    );
    assert!(notes.iter().any(|n| n.contains("mean 1% CPU")), "{notes:?}");
    let (busy, _) = starving_run(25.0, f64::MAX);
    let notes = starvation_notes(&busy.snapshot(), 0);
    assert!(
        notes.iter().any(|n| n.contains("CPU-saturated")),
        "{notes:?}"
    );
}
