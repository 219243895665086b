//! The detector through its evaluation cadence, on constructed utilization.

use super::*;
use crate::model::UtilWindow;

/// Add the 200 ms windows from `*next_w` up to tick time `t`, valued `util(window end)`.
fn push_windows(h: &mut GpuHistory, next_w: &mut f64, t: f64, util: impl Fn(f64) -> f64) {
    while *next_w <= t {
        h.util.push(UtilWindow {
            t: *next_w,
            util: util(*next_w),
        });
        *next_w += 0.2;
    }
}

/// Feed `seconds` of 200 ms windows from `util(t)` at 250 ms ticks; count full analyses.
fn run(seconds: f64, util: impl Fn(f64) -> f64) -> (Detector, u32) {
    let system = SystemInfo {
        devices: vec![DeviceInfo::default()],
        ..Default::default()
    };
    let mut d = Detector::new(DetectorConfig::default(), &system);
    let mut h = GpuHistory::new(120.0, 0.25);
    let (mut t, mut next_w, mut analyses, mut last) = (0.0, 0.2, 0, f64::NAN);
    while t < seconds {
        t += 0.25;
        push_windows(&mut h, &mut next_w, t, &util);
        d.update(t, &[&h]);
        if d.gpus[0].analysed_at.to_bits() != last.to_bits() {
            analyses += 1;
            last = d.gpus[0].analysed_at;
        }
    }
    (d, analyses)
}

#[test]
fn a_steady_busy_gpu_reuses_its_analysis_and_a_starving_one_does_not() {
    let (_, steady) = run(120.0, |t| 98.0 + (t * 7.0).sin().abs() * 2.0);
    // Evaluated every second; analysed every second until the window spans the rules
    // window, then every REUSE_S.
    assert!((25..=45).contains(&steady), "{steady} analyses in 120 s");
    let (d, starving) = run(120.0, |t| if t % 1.7 < 0.7 { 90.0 } else { 0.0 });
    // Every second until raised, then while the pattern goes on about every other second
    // (less than one 1.7 s period between analyses).
    assert!(
        (55..=100).contains(&starving),
        "{starving} analyses in 120 s"
    );
    assert_eq!(d.verdict(0), FindingKind::InputStarvation);
}

#[test]
fn deferred_summary_texts_read_the_same() {
    let system = SystemInfo {
        devices: vec![DeviceInfo::default()],
        ..Default::default()
    };
    let mut eager = Detector::new(DetectorConfig::default(), &system);
    let mut deferred = Detector::new(DetectorConfig::default(), &system);
    deferred.defer_summaries();
    let mut h = GpuHistory::new(120.0, 0.25);
    let (mut t, mut next_w) = (0.0, 0.2);
    let (mut raised, mut cleared, mut refreshed) = (0, 0, 0);
    let mut last_text = String::new();
    // Starving with a stall share that drifts (the summary's numbers change while raised),
    // then steady work until the finding clears, then starving again.
    let util = |t: f64| {
        let busy = 0.6 + 0.3 * (t / 40.0).sin().abs();
        if (60.0..150.0).contains(&t) || t % 2.0 < 2.0 * busy {
            99.0
        } else {
            0.0
        }
    };
    while t < 240.0 {
        t += 0.25;
        push_windows(&mut h, &mut next_w, t, util);
        let a = eager.update(t, &[&h]);
        let b = deferred.update(t, &[&h]);
        assert_eq!(a, b, "events at {t}");
        raised += a
            .iter()
            .filter(|e| matches!(e, FindingEvent::Raised(_)))
            .count();
        cleared += a
            .iter()
            .filter(|e| matches!(e, FindingEvent::Cleared(_)))
            .count();
        if let Some(f) = eager.active().first() {
            if f.summary != last_text {
                refreshed += 1;
                last_text = f.summary.clone();
            }
        }
    }
    assert!(
        raised >= 2 && cleared >= 1,
        "{raised} raised, {cleared} cleared"
    );
    assert!(refreshed > raised, "texts changed {refreshed} times");
    deferred.refresh_summaries();
    assert_eq!(eager.active(), deferred.active());
    assert_eq!(eager.ended(), deferred.ended());
}

#[test]
fn too_little_data_is_pending_a_lone_blip_is_idle_and_seconds_of_work_are_healthy() {
    // Less than min_span_s of readings: pending, whatever they read.
    let (d, _) = run(3.5, |_| 60.0);
    assert_eq!(d.verdict(0), FindingKind::Pending);
    // Idle with one 0.6 s blip at the start (the driver's buffer at start-up): idle.
    let (d, _) = run(6.0, |t| if t < 0.8 { 60.0 } else { 0.0 });
    assert_eq!(d.verdict(0), FindingKind::Idle);
    // Six seconds of steady work: busy, no finding.
    let (d, _) = run(6.0, |_| 60.0);
    assert_eq!(d.verdict(0), FindingKind::Healthy);
    // Bursts every 4 s on a GPU holding no memory (no context in the history): idle.
    let (d, _) = run(12.0, |t| if t % 4.0 < 0.2 { 30.0 } else { 0.0 });
    assert_eq!(d.verdict(0), FindingKind::Idle);
}

#[test]
fn a_dip_after_a_quiet_stretch_is_analysed_at_the_next_evaluation() {
    // Steady for 60 s, then starving: the first new dip ends the reuse.
    let (d, _) = run(80.0, |t| if t < 60.0 || t % 1.5 < 0.8 { 99.0 } else { 0.0 });
    let f = d
        .active()
        .iter()
        .find(|f| f.kind == FindingKind::InputStarvation)
        .expect("starvation raised");
    assert!(
        f.detected_at - 60.0 <= 15.0,
        "detected at {}",
        f.detected_at
    );
}

/// Feed 200 ms windows of `util` at ticks `step` apart (each `jitter` s early) for
/// `seconds`; the times of the evaluations (revisions) and of the first starvation raised.
fn evaluations(
    seconds: f64,
    step: f64,
    jitter: f64,
    util: impl Fn(f64) -> f64,
) -> (Vec<f64>, Option<f64>) {
    let system = SystemInfo {
        devices: vec![DeviceInfo::default()],
        ..Default::default()
    };
    let mut d = Detector::new(DetectorConfig::default(), &system);
    let mut h = GpuHistory::new(120.0, 0.25);
    let (mut k, mut next_w, mut evals, mut raised) = (0u32, 0.2, Vec::new(), None);
    loop {
        k += 1;
        let t = k as f64 * step - jitter;
        if t > seconds {
            break (evals, raised);
        }
        push_windows(&mut h, &mut next_w, t, &util);
        let before = d.revision;
        for e in d.update(t, &[&h]) {
            if let FindingEvent::Raised(f) = e {
                if f.kind == FindingKind::InputStarvation {
                    raised = raised.or(Some(t));
                }
            }
        }
        if d.revision != before {
            evals.push(t);
        }
    }
}

#[test]
fn evaluations_keep_their_cadence_when_ticks_come_a_little_early() {
    // Ticks 3 ms early: evaluating from each tick would wait five ticks (1.25 s) each time.
    let (evals, _) = evaluations(60.0, 0.25, 0.003, |_| 90.0);
    let spacing = (evals[evals.len() - 1] - evals[0]) / (evals.len() - 1) as f64;
    assert!((spacing - 1.0).abs() < 0.01, "mean spacing {spacing} s");
}

#[test]
fn the_edge_that_completes_a_provisional_period_is_named_when_it_arrives() {
    // A steady GPU is evaluated on the cadence only (every second from the first tick).
    let (regular, _) = evaluations(30.0, 0.25, 0.0, |_| 90.0);
    assert!(regular.iter().all(|t| t.fract() == 0.25), "{regular:?}");
    // A job that computes for 0.3 s every 5.6 s from t = 3: the third burst (the end of the
    // second long dip) begins at 14.2 s; its first window ends at 14.4 s and arrives with the
    // tick at 14.5 s, between two evaluations.
    let bursts = |t: f64| {
        if t >= 3.0 && (t - 3.0) % 5.6 < 0.3 {
            90.0
        } else {
            0.0
        }
    };
    let (evals, raised) = evaluations(30.0, 0.25, 0.0, bursts);
    assert_eq!(raised, Some(14.5), "{evals:?}");
    assert!(evals.contains(&14.5) && !regular.contains(&14.5));
    // The same job busy until t = 3.3: its first dip has no burst before it, so only the
    // third dip's start can complete three cycles; its first window ends at 14.6 s and is
    // evaluated when it arrives with the tick at 14.75 s.
    let busy_first = |t: f64| if t < 3.3 { 90.0 } else { bursts(t) };
    let (evals, _) = evaluations(30.0, 0.25, 0.0, busy_first);
    assert!(
        evals.contains(&14.75) && !regular.contains(&14.75),
        "{evals:?}"
    );
}
