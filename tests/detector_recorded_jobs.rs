//! What the detector draws from the readings only some inputs carry, on single labelled H200
//! jobs (`tests/data/h200`): GPM SM activity and PCIe from a recording or a poller's trace
//! against an nvidia-smi log, the evidence of a provisional finding, and the report's verdict.

mod support;

use support::api::{analyze, analyze_path, verdict_over, DetectorConfig, FindingKind, Severity};
use support::labels::{job, Folder, Input};
use support::traces::PollerSource;

const SYNC_BOUND_RECORDED: &str = "mlp-batch-32-loss-item-every-step-22s";
const SYNC_BOUND_POLLED: &str = "mlp-batch-32-loss-item-every-step-25s";
const LOADER_8_WORKERS_RECORDED: &str = "resnet50-batch-128-loader-8-workers-8ms-per-sample-22s";
const LOADER_8_WORKERS_POLLED: &str = "resnet50-batch-128-loader-8-workers-8ms-per-sample-25s";
const THREE_SLOW_CYCLES: &str = "resnet50-healthy-then-loader-2-workers-30ms-per-sample-for-12s";
const HOST_TO_DEVICE: &str = "pageable-512mib-host-to-device-copy-every-step";
const HEALTHY_POLLED: &str = "resnet50-batch-256-data-on-gpu-25s";

fn file(folder: &str, input: Input) -> std::path::PathBuf {
    Folder::open(folder)
        .input(input)
        .unwrap_or_else(|| panic!("{folder}: no {}", input.file()))
}

fn poller(folder: &str) -> PollerSource {
    PollerSource::open(&file(folder, Input::Poller))
}

#[test]
fn recordings_carry_what_the_csv_logs_lack_and_the_detector_uses_it() {
    let cfg = DetectorConfig::default();
    let rec =
        analyze_path(&file(SYNC_BOUND_RECORDED, Input::Recording), None, &cfg).expect("analyze");
    assert!(rec.source.starts_with("gpulse recording"), "{}", rec.source);
    let f = rec.gpus[0]
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::HostBound)
        .expect("host_bound");
    // GPM SM activity is only in the recording: the evidence names it.
    assert!(f.summary.contains("SM activity"), "{}", f.summary);
    let csv =
        analyze_path(&file(SYNC_BOUND_RECORDED, Input::NvidiaSmi), None, &cfg).expect("analyze");
    let f = csv.gpus[0]
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::HostBound)
        .expect("host_bound");
    assert!(!f.summary.contains("SM activity"), "{}", f.summary);
    // Statistics over driver windows (200 ms) rather than polled rows (250 ms): more readings
    // than ticks.
    let path = file(LOADER_8_WORKERS_RECORDED, Input::Recording);
    let r = analyze_path(&path, None, &cfg).expect("analyze");
    assert!(
        r.gpus[0].stats.samples > r.samples,
        "{} windows, {} ticks",
        r.gpus[0].stats.samples,
        r.samples
    );
}

/// A job that starves for only three slow cycles (~4 s apart) in 12 s: the recording names it
/// from those three deep, evenly spaced dips, within its bound of onset, as a provisional period
/// (warn, low confidence, 3 cycles, the period itself not reported: three cycles do not confirm
/// one). Its nvidia-smi log, which keeps one window in each poll, still misses it (the label
/// accepts `healthy`).
#[test]
fn three_slow_starving_cycles_are_named_from_the_recording() {
    let label = job(THREE_SLOW_CYCLES);
    let onset = label.onset.expect("onset");
    let cfg = DetectorConfig::default();
    let path = file(THREE_SLOW_CYCLES, Input::Recording);
    let r = analyze_path(&path, None, &cfg).expect("analyze");
    let g = &r.gpus[0];
    assert_eq!(g.verdict, FindingKind::InputStarvation, "{:?}", g.findings);
    let f = g
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::InputStarvation)
        .expect("starvation finding");
    let after = f.detected_at - onset;
    let limit = label.named_within_s_from(Input::Recording);
    assert!(
        (0.0..=limit).contains(&after),
        "detected {after:.1} s after onset"
    );
    assert_eq!(f.severity, Severity::Warn);
    assert!(
        f.evidence.confidence.is_some_and(|c| c < 0.4),
        "{:?}",
        f.evidence
    );
    assert_eq!(f.evidence.cycles, Some(3));
    // Three cycles are what random stalls give by chance: starvation is named, its period is not
    // reported until confirmed (the job recovers first).
    assert_eq!(f.evidence.period_s, None);
    assert!(
        f.summary.contains("3 cycles so far") && f.summary.contains("period not yet confirmed"),
        "{}",
        f.summary
    );
}

#[test]
fn pcie_and_sm_activity_name_the_cause_on_real_traces() {
    let cfg = DetectorConfig::default();
    let r = analyze(HOST_TO_DEVICE, &mut poller(HOST_TO_DEVICE), &cfg);
    let g = &r.gpus[0];
    assert_eq!(g.verdict, FindingKind::TransferBound, "{:?}", g.findings);
    let f = g
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::TransferBound)
        .expect("transfer_bound");
    let rx = f.evidence.signals["pcie_rx_bytes_per_s"];
    assert!((5e9..9e9).contains(&rx), "rx {rx}");
    assert!(f.summary.contains("GB/s"), "{}", f.summary);

    let r = analyze(SYNC_BOUND_POLLED, &mut poller(SYNC_BOUND_POLLED), &cfg);
    let f = r.gpus[0]
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::HostBound)
        .expect("host_bound");
    assert!(f.evidence.signals["sm_active"] < 1.0, "{:?}", f.evidence);
    assert!(f.summary.contains("SM activity"), "{}", f.summary);

    // The healthy job's SM activity (~91%) is real work: not busy_but_idle.
    let r = analyze(HEALTHY_POLLED, &mut poller(HEALTHY_POLLED), &cfg);
    assert_eq!(
        r.gpus[0].verdict,
        FindingKind::Healthy,
        "{:?}",
        r.gpus[0].findings
    );
    // The same utilization with SM activity cut to 10% of itself is the util-lies case.
    let mut faked = poller(HEALTHY_POLLED).map_sm(|x| x / 10.0);
    let r = analyze("healthy-sm/10", &mut faked, &cfg);
    assert_eq!(
        r.gpus[0].verdict,
        FindingKind::BusyButIdle,
        "{:?}",
        r.gpus[0].findings
    );
}

#[test]
fn verdict_is_the_finding_covering_most_of_the_span() {
    let cfg = DetectorConfig::default();
    let path = file(LOADER_8_WORKERS_POLLED, Input::NvidiaSmi);
    let r = analyze_path(&path, None, &cfg).expect("analyze");
    let g = &r.gpus[0];
    let span = (r.start.expect("start"), r.end.expect("end"));
    assert_eq!(verdict_over(&g.findings, span, true), g.verdict);
    assert_eq!(verdict_over(&[], span, true), FindingKind::Healthy);
    assert_eq!(verdict_over(&[], span, false), FindingKind::Idle);
    let f = &g.findings[0];
    assert!(f.start <= f.detected_at);
    assert!(
        f.summary.contains("every 1.") && f.summary.contains("faster if fixed"),
        "{}",
        f.summary
    );
    assert!(f.advice.contains("DataLoader workers"), "{}", f.advice);
    let l = f.evidence.lost_fraction.expect("lost");
    let s = f.evidence.speedup_bound.expect("speedup");
    assert!((s - 1.0 / (1.0 - l)).abs() < 1e-9);
}
