//! The `faulty` scenario through the real engine: each sick GPU's health reaches the snapshot,
//! the detector names it (`gpu_fault`, `throttled`) with the fix, the ledger books what it cost,
//! recordings keep it, and readings stay absent where the hardware has no such counter.

mod support;

use support::api::{
    analyze, snapshot_doc, snapshot_text, Backend, DetectorConfig, DeviceSampler, FindingKind,
    GpuStatus, Recorder, RecordingReader, Sample, SampleSource, Scenario, Severity, SimBackend,
    SimConfig, SimRun, ThrottleReason, T0,
};
use support::schema::validate;

fn run(seconds: f64) -> SimRun {
    let mut run = SimRun::new(Scenario::Faulty, 4);
    run.advance(seconds);
    run
}

#[test]
fn each_sick_gpu_is_named_with_what_to_do() {
    let run = run(90.0);
    let s = run.snapshot();
    for g in &s.gpus {
        eprintln!(
            "GPU {} {:?} {:?}",
            g.info.index,
            g.verdict,
            g.findings
                .iter()
                .map(|f| (
                    f.kind,
                    f.severity,
                    f.summary.clone(),
                    f.evidence.fix.clone(),
                    f.evidence.notes.clone()
                ))
                .collect::<Vec<_>>()
        );
    }
    let gpu = |i: usize| &s.gpus[i];

    // GPU 0 fell off the bus: XID 79, lost, the fault says what to do.
    assert!(matches!(gpu(0).status, GpuStatus::Lost { .. }));
    assert_eq!(gpu(0).verdict, FindingKind::GpuFault);
    let f = &gpu(0).findings[0];
    assert_eq!(
        (f.kind, f.severity),
        (FindingKind::GpuFault, Severity::High)
    );
    assert!(
        f.summary.contains("XID 79") && f.summary.contains("fallen off the bus"),
        "{}",
        f.summary
    );
    assert!(f
        .evidence
        .fix
        .as_deref()
        .is_some_and(|x| x.contains("drain the node")));
    assert_eq!(gpu(0).xids.len(), 1);

    // GPU 1: a row waits for its remap, corrected errors rise: a warning with the fix.
    assert_eq!(gpu(1).verdict, FindingKind::GpuFault);
    let f = &gpu(1).findings[0];
    assert_eq!(f.severity, Severity::Warn);
    assert!(
        f.evidence
            .fix
            .as_deref()
            .is_some_and(|x| x.contains("reset the GPU to apply pending remaps")),
        "{f:?}"
    );
    assert!(
        f.evidence
            .notes
            .iter()
            .any(|n| n.contains("corrected ECC errors rising")),
        "{f:?}"
    );

    // GPU 2: HW slowdown, measured as time.
    assert_eq!(gpu(2).verdict, FindingKind::Throttled);
    let f = &gpu(2).findings[0];
    assert!(
        f.summary.contains("HW slowdown") && f.summary.contains("HW thermal"),
        "{}",
        f.summary
    );

    // GPU 3: clean, with NVLink traffic; GPUs 0-1 have no NVLink (absent, not zero links).
    assert_eq!(gpu(3).verdict, FindingKind::Healthy);
    let h3 = gpu(3).health.as_ref().expect("read");
    assert_eq!(h3.nvlinks.len(), 18);
    assert!(h3.nvlink_bytes_per_s().is_some_and(|b| b > 1e11));
    assert!(gpu(1).health.as_ref().is_some_and(|h| h.nvlinks.is_empty()));
}

#[test]
fn the_ledger_books_the_job_an_xid_ended_and_the_time_throttling_cost() {
    let run = run(90.0);
    let s = run.snapshot();
    let ledger = |i: usize| s.gpus[i].ledger.clone();

    // GPU 0's job ran 45 s until XID 79 ended it: all of it is lost to the fault.
    let l0 = ledger(0);
    assert_eq!(l0.health.faults.len(), 1, "{:?}", l0.health);
    let fault = l0.health.faults[0];
    assert_eq!(fault.xid, 79);
    assert!((fault.t - fault.job_since - 45.0).abs() < 0.5, "{fault:?}");
    let lost = l0.lost_by_kind.get(FindingKind::GpuFault);
    assert!((lost - l0.health.fault_lost_s).abs() < 1e-9);
    assert!(lost > 40.0 && lost <= 45.5, "{lost}");
    assert!((l0.lost_gpu_seconds - l0.span_s).abs() < 1.0, "{l0:?}");

    // GPU 2: HW slowdown held the clocks at half for 50 s of every 60 while busy.
    let l2 = ledger(2);
    let held = l2
        .health
        .throttled(ThrottleReason::HwSlowdown)
        .expect("measured by its bit");
    assert!((70.0..=72.0).contains(&held), "{held}");
    let thermal = l2
        .health
        .throttled(ThrottleReason::HwThermal)
        .expect("counted");
    assert!((held - thermal).abs() < 1.0, "{held} {thermal}");
    let cost = l2.health.throttle_lost(ThrottleReason::HwSlowdown);
    assert!(cost > 0.45 * held && cost <= 0.5 * held, "{cost} of {held}");
    assert_eq!(l2.health.throttle_lost(ThrottleReason::SwPowerCap), 0.0);
    assert!(
        (l2.lost_by_kind.get(FindingKind::Throttled) - cost).abs() < 2.0,
        "{l2:?}"
    );

    // GPU 3 lost nothing to its hardware.
    let l3 = ledger(3);
    assert_eq!(l3.health.fault_lost_s, 0.0);
    assert!(l3.health.throttle_lost_s.iter().all(|s| *s == 0.0));
}

#[test]
fn snapshot_json_carries_health_and_validates() {
    let run = run(60.0);
    let s = run.snapshot();
    let doc = serde_json::to_value(snapshot_doc(&s, &|_| true)).expect("JSON");
    let gpus = doc["gpus"].as_array().expect("gpus");
    // GPU 0: lost, its XID with meaning and fix.
    let h0 = &gpus[0]["health"];
    assert_eq!(h0["state"], "fault");
    assert_eq!(h0["xids"][0]["xid"], 79);
    assert!(h0["xids"][0]["fix"]
        .as_str()
        .unwrap()
        .contains("drain the node"));
    // GPU 1: a pending remap, corrected errors counted; no NVLink is an empty list.
    let h1 = &gpus[1]["health"];
    assert_eq!(h1["state"], "warn");
    assert_eq!(h1["remapped_rows"]["pending"], true);
    assert!(h1["ecc"]["volatile_corrected"].as_u64().unwrap() > 12);
    assert_eq!(h1["nvlinks"].as_array().map(Vec::len), Some(0));
    assert!(
        h1["retired_pages"].is_null(),
        "Hopper retires no pages: absent, not 0"
    );
    assert_eq!(h1["xid_watch"]["state"], "watching");
    // GPU 2: the counters of the reasons the driver counts; HW slowdown has none.
    let h2 = &gpus[2]["health"];
    assert!(h2["throttle_ns"]["hw_thermal"].as_u64().unwrap() > 30_000_000_000);
    assert!(h2["throttle_ns"].get("hw_slowdown").is_none());
    assert_eq!(gpus[3]["health"]["nvlinks"][17]["version"], 4);
    validate("snapshot.schema.json", &[doc.to_string()]);

    let text = snapshot_text(&s, &|_| true);
    assert!(
        text.contains("  health    fault · XID 79 at 12:00:45"),
        "{text}"
    );
    assert!(
        text.contains("  health    warn · XID 63 at 12:00:12 · ECC 0 uncorr/"),
        "{text}"
    );
    assert!(text.contains("remap pending: reset"), "{text}");
    assert!(
        text.contains("  health    ok · no XID since 12:00:00 (earlier unknown)"),
        "{text}"
    );
    assert!(text.contains("NVLink 18/18 up"), "{text}");
}

/// A recording of the faulty scenario keeps the health and the XIDs; `analyze` names the
/// faults on its timeline and books the job the XID ended.
#[test]
fn a_recording_keeps_health_and_analyze_books_the_fault() {
    let cfg = SimConfig {
        scenario: Scenario::Faulty,
        gpus: 4,
        start: Some(T0),
        hostname: Some("rec-host".into()),
        ..Default::default()
    };
    let system = SimBackend::new(cfg.clone()).system().clone();
    let mut devs = SimBackend::devices_for(&cfg);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("faulty.ndjson.zst");
    let mut rec = Recorder::create(&path, &system, 0.25, true).expect("create");
    for i in 1..=320 {
        let t = T0 + f64::from(i) * 0.25;
        let gpus = devs.iter_mut().map(|d| d.sample(t).unwrap()).collect();
        rec.write(&Sample {
            t,
            gpus,
            ..Default::default()
        })
        .expect("write");
    }
    rec.finish().expect("finish");

    let mut reader = RecordingReader::open(&path).expect("open");
    let mut xids = Vec::new();
    let mut reads = 0;
    let mut samples = Vec::new();
    while let Some(s) = reader.next_sample() {
        xids.extend(
            s.gpus
                .iter()
                .flat_map(|g| g.xids.iter().map(|x| (g.index, x.xid))),
        );
        reads += s.gpus.iter().filter(|g| g.health.is_some()).count();
        samples.push(s);
    }
    assert_eq!(xids, [(1, 63), (0, 79)]);
    assert!(
        reads >= 3 * 16,
        "a read every 5 s on each answering GPU: {reads}"
    );

    let mut source = RecordingReader::open(&path).expect("open");
    let report = analyze("faulty", &mut source, &DetectorConfig::default());
    let g0 = &report.gpus[0];
    assert!(
        g0.timeline
            .iter()
            .any(|s| s.verdict == FindingKind::GpuFault),
        "{:?}",
        g0.timeline
    );
    let fault = g0
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::GpuFault)
        .unwrap();
    assert!(fault.summary.contains("XID 79"), "{}", fault.summary);
    assert_eq!(g0.ledger.faults.len(), 1);
    assert!(
        g0.ledger.faults[0].lost_gpu_seconds > 40.0,
        "{:?}",
        g0.ledger.faults
    );
    let g2 = &report.gpus[2];
    assert!(g2
        .timeline
        .iter()
        .any(|s| s.verdict == FindingKind::Throttled));
    assert!(
        g2.ledger.throttle_lost_gpu_seconds["hw_slowdown"] > 20.0,
        "{:?}",
        g2.ledger
    );
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["gpus"][0]["ledger"]["faults"][0]["xid"], 79);
}
