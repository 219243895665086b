//! Recordings of several H200 jobs one after another (the `jobs-*` folders under
//! `tests/data/h200`), as the dashboard saw them: replayed tick by tick through the engine, read
//! through `analyze`, or the findings the live detector raised into the file. Each job's window
//! and bounds are its entry in the folder's `labels.json`.

mod support;

use support::api::{analyze_path, DetectorConfig, Finding, FindingKind, Severity};
use support::detector::{live_findings, replay, stalls_named_during, stalls_overlapping};
use support::labels::{folders, job, Folder, Input, Label};
use support::traces::true_period;

const TRANSITION: &str = "resnet50-healthy-then-loader-2-workers-30ms-per-sample-for-29s";
const TRANSITION_AND_OTHERS: &str = "jobs-healthy-8-workers-transition-eval-pass";
const LOADER_13S_CYCLE: &str = "resnet50-batch-256-loader-2-workers-50ms-per-sample";
const LOADER_13S_AND_OTHERS: &str = "jobs-1-worker-24ms-2-workers-50ms-transition";
const CHECKPOINT: &str = "resnet50-checkpoint-every-8s-of-training-60s";
const LOADER_10S: &str = "resnet50-batch-256-loader-1-worker-38ms-per-sample";
const CHECKPOINT_THEN_LOADER_10S: &str = "jobs-checkpoint-then-1-worker-38ms";
const TRANSFORMER: &str = "transformer-batch-32-loader-4-workers-80ms-per-sample";
const REVERSE: &str = "resnet50-loader-3-workers-20ms-per-sample-then-healthy";
const TRANSFORMER_THEN_REVERSE: &str = "jobs-transformer-loader-reverse-transition-mlp-sync";
const EACH_IN_A_NEW_PROCESS: &str = "jobs-each-in-a-new-process-vit-eval-restarts-healthy";
const RANDOM_STALLS_AND_OTHERS: &str = "jobs-random-stalls-jittery-loader-vit-checkpoint";
const SPIN_KERNEL: &str = "spin-kernel";
const SPIN_KERNEL_AND_OTHERS: &str =
    "jobs-healthy-then-loader-bound-spin-kernel-checkpoint-no-workers-4-workers";
const LIVE_FINDINGS: [&str; 2] = [
    "jobs-random-stalls-transition-6-workers",
    "jobs-random-stalls-1-worker-55ms-1-worker-12ms",
];

/// A job that starves after a healthy stretch in the same process: in its own recording and in
/// the whole recording (whose 90 s window then also holds the previous job's 1.35 s dips and the
/// idle stretch after it), the live verdict is never `idle` while the process holds its memory
/// and batches keep coming; the starvation is named within its bound in true periods of onset
/// and cleared within its bound after recovery (the job's `replayed`, the whole recording's
/// entry).
#[test]
fn a_job_that_starts_starving_after_a_healthy_stretch_is_named_and_never_called_idle() {
    let own = Folder::open(TRANSITION);
    let label = own.label();
    let (onset, recovered) = (label.begin(), label.recovered.expect("recovered"));
    let period = true_period(&own, label).expect("burst spacing");
    let replayed = label.replayed.as_ref().expect("replayed");
    let whole = Folder::open(TRANSITION_AND_OTHERS);
    let entry = whole.entry(TRANSITION);
    let named_within = entry
        .named_within_periods
        .as_ref()
        .and_then(|p| p.of(Input::Recording));
    let cases = [
        (
            own.recording(),
            replayed.named_within_periods,
            replayed.cleared_within_periods,
        ),
        (
            whole.recording(),
            named_within.expect("named_within_periods"),
            entry
                .cleared_within_periods
                .expect("cleared_within_periods"),
        ),
    ];
    let cfg = DetectorConfig::default();
    for (path, named_periods, cleared_periods) in cases {
        let (verdicts, found) = replay(&cfg, std::slice::from_ref(&path));
        let file = path.display();
        assert!(verdicts.len() > 100, "{file}: {} ticks", verdicts.len());
        let in_phase: Vec<FindingKind> = verdicts
            .iter()
            .filter(|(t, _)| (onset..recovered).contains(t))
            .map(|v| v.1)
            .collect();
        assert!(
            !in_phase.contains(&FindingKind::Idle),
            "{file}: idle while starving: {in_phase:?}"
        );
        assert_eq!(in_phase.last(), Some(&FindingKind::InputStarvation));
        let f = found
            .iter()
            .find(|f| f.kind == FindingKind::InputStarvation && f.start >= onset - 1.0)
            .unwrap_or_else(|| panic!("{file}: {found:?}"));
        assert!(
            f.detected_at - onset <= named_periods * period,
            "{file}: {f:?}"
        );
        let end = f.end.expect("cleared");
        assert!(end <= recovered + cleared_periods * period, "{file}: {f:?}");
    }
}

/// A recording whose first reading carries a short blip from the driver's buffer (windows of
/// 35-99% from before the recording began) on an idle GPU reads `idle`, not `healthy`, until the
/// first job loads (the first job's `idle_from_recording_start_s`).
#[test]
fn a_recording_that_starts_with_a_blip_on_an_idle_gpu_reads_idle() {
    let whole = Folder::open(TRANSITION_AND_OTHERS);
    let idle_s = whole
        .labels
        .iter()
        .find_map(|l| l.idle_from_recording_start_s)
        .expect("idle_from_recording_start_s");
    let (verdicts, _) = replay(&DetectorConfig::default(), &[whole.recording()]);
    let t0 = verdicts[0].0;
    let first: Vec<FindingKind> = verdicts
        .iter()
        .take_while(|(t, _)| *t < t0 + idle_s)
        .map(|v| v.1)
        .collect();
    assert!(first.len() > 100, "{} ticks", first.len());
    assert!(first.iter().all(|v| *v == FindingKind::Idle), "{first:?}");
}

/// The findings of `found` that started from 10 s before the job's start to its end.
fn started_during<'a>(found: &'a [Finding], l: &Label) -> Vec<&'a Finding> {
    let end = l.end();
    found
        .iter()
        .filter(|f| f.start >= l.start - 10.0 && f.start <= end)
        .collect()
}

/// A loader whose two workers deliver a pair of batches every ~13 s, too few cycles in its own
/// recording for a period: the whole recording names it input starvation with its period once
/// four cycles are seen (after the job ended), never a cadence (`not`), and the finding ends
/// with the job (`ends_within_s`): the process freed its memory 11.6 s after the job's end mark,
/// and two blips of the next job's start-up 13 s apart must not keep it going.
#[test]
fn a_loader_with_a_13_s_cycle_is_named_in_the_whole_recording_and_ends_with_its_job() {
    let whole = Folder::open(LOADER_13S_AND_OTHERS);
    let l = whole.entry(LOADER_13S_CYCLE);
    let cfg = DetectorConfig::default();
    let r = analyze_path(&whole.recording(), None, &cfg).expect("analyze");
    let named = started_during(&r.gpus[0].findings, l);
    let period = l.period_s.expect("period_s");
    let f = named
        .iter()
        .find(|f| {
            f.kind == FindingKind::InputStarvation
                && f.evidence
                    .period_s
                    .is_some_and(|p| (p - period).abs() < l.period_tolerance() * period)
        })
        .unwrap_or_else(|| panic!("{named:?}"));
    assert!(named.iter().all(|f| !l.not.contains(&f.kind)), "{named:?}");
    let ended = f.end.expect("ended before the next job");
    println!(
        "13 s loader: finding ended {:.1} s after the job's end mark",
        ended - l.end()
    );
    assert!(
        ended <= l.end() + l.ends_within_s.expect("ends_within_s"),
        "{f:?}"
    );
}

/// In the whole recording a checkpoint cadence is never input starvation (its period was once
/// halved into it), and a loader that delivers a batch every 10 s, its start-up in the window (a
/// new process: memory moving by GiBs, blips as high as its bursts), is named with its period
/// before the job ends.
#[test]
fn a_checkpoint_cadence_is_told_from_a_10_s_loader_in_the_whole_recording() {
    let whole = Folder::open(CHECKPOINT_THEN_LOADER_10S);
    let cfg = DetectorConfig::default();
    let r = analyze_path(&whole.recording(), None, &cfg).expect("analyze");
    let found = &r.gpus[0].findings;
    let loader = whole.entry(LOADER_10S);
    let period = loader.named_period.expect("named_period");
    let named = found
        .iter()
        .find(|f| {
            f.kind == FindingKind::InputStarvation
                && f.start >= loader.start - 10.0
                && period.holds(f.evidence.period_s)
        })
        .unwrap_or_else(|| panic!("not named: {found:?}"));
    println!(
        "10 s loader in the whole recording: named {:.1} s after its start",
        named.detected_at - loader.start
    );
    assert!(loader.named_before_end, "{}: named_before_end", loader.job);
    assert!(named.detected_at <= loader.end(), "{named:?}");
    let checkpoint = whole.entry(CHECKPOINT);
    let wrong: Vec<&Finding> = started_during(found, checkpoint)
        .into_iter()
        .filter(|f| checkpoint.not.contains(&f.kind))
        .collect();
    assert!(wrong.is_empty(), "{wrong:?}");
}

/// A job that starts starving 22 s after a transformer's starvation (a burst every 2.6 s) ended,
/// with a burst every 2.8 s for 34 s. The transformer's cycles still fill the 90 s window and no
/// longer go on; the samples after them hold the new period, named within the bound as in the
/// job's own recording, and the transformer's finding ends before it. Tick by tick, the job reads
/// as starving from when it is named until it recovers.
#[test]
fn a_starving_job_right_after_another_is_named_in_the_whole_recording() {
    let whole = Folder::open(TRANSFORMER_THEN_REVERSE);
    let label = whole.entry(REVERSE);
    let first = whole.entry(TRANSFORMER);
    let (verdicts, found) = replay(&DetectorConfig::default(), &[whole.recording()]);
    let f = found
        .iter()
        .find(|f| f.kind == FindingKind::InputStarvation && f.start >= label.start - 1.0)
        .unwrap_or_else(|| panic!("not named: {found:?}"));
    println!(
        "{REVERSE}: named {:.1} s after start: {}",
        f.detected_at - label.start,
        f.summary
    );
    let within = label.named_within_s_from(Input::Recording);
    assert!(f.detected_at - label.start <= within, "{f:?}");
    let period = label.named_period.expect("named_period");
    assert!(
        period.holds(f.evidence.period_s),
        "{:?}",
        f.evidence.period_s
    );
    let before = found
        .iter()
        .find(|f| f.kind == FindingKind::InputStarvation && f.start < first.end())
        .expect("the transformer's finding");
    assert!(
        before.end.is_some_and(|e| e <= f.start),
        "{before:?} then {f:?}"
    );
    let recovered = label.recovered.expect("recovered");
    assert!(verdicts
        .iter()
        .filter(|(t, _)| (f.detected_at..recovered).contains(t))
        .all(|(_, v)| *v == FindingKind::InputStarvation));
}

/// Each job in its own process, so the GPU holds no context between them: in the whole
/// recording every starving job is named within its bound of its start (once the samples of
/// earlier jobs leave the window at a new context), each of its findings ends within its bound
/// after the job, and the healthy job after a starving one never carries a finding above its
/// `severity_at_most`.
#[test]
fn jobs_one_after_another_are_each_named_and_ended_in_the_whole_recording() {
    let whole = Folder::open(EACH_IN_A_NEW_PROCESS);
    let (_, found) = replay(&DetectorConfig::default(), &[whole.recording()]);
    for l in whole.labels.iter().filter(|l| l.named_within_s.is_some()) {
        let of_job = stalls_named_during(&found, l);
        let first = of_job
            .first()
            .unwrap_or_else(|| panic!("{} not named: {found:?}", l.job));
        let last_end = of_job.iter().filter_map(|f| f.end).fold(f64::MIN, f64::max);
        println!(
            "{}: {} named {:.1} s after start, the last ended {:.1} s after the job",
            l.job,
            first.kind,
            first.detected_at - l.start,
            last_end - l.end()
        );
        let within = l.named_within_s_from(Input::Recording);
        assert!(
            first.detected_at - l.start <= within,
            "{}: {first:?}",
            l.job
        );
        let ends = l.end() + l.ends_within_s.expect("ends_within_s");
        assert!(
            of_job.iter().all(|f| f.end.is_some_and(|e| e <= ends)),
            "{}: {of_job:?}",
            l.job
        );
    }
    for l in whole.labels.iter().filter(|l| l.severity_at_most.is_some()) {
        let most = l.severity_at_most.unwrap_or(Severity::High);
        let carried: Vec<&Finding> = found
            .iter()
            .filter(|f| f.severity > most && f.end.is_none_or(|e| e > l.start) && f.start < l.end())
            .collect();
        assert!(carried.is_empty(), "{}: {carried:?}", l.job);
    }
}

/// Random host stalls, a jittery loader and a checkpoint cadence as the dashboard saw them: the
/// random stalls one finding without a period, named within its bound and ending with the job;
/// the jittery loader named within its bound; no stall finding during the checkpoints.
#[test]
fn random_host_stalls_are_one_finding_without_a_period_in_the_whole_recording() {
    let whole = Folder::open(RANDOM_STALLS_AND_OTHERS);
    let (_, found) = replay(&DetectorConfig::default(), &[whole.recording()]);
    for l in &whole.labels {
        let stalls = stalls_overlapping(&found, l);
        if let Some(n) = l.stall_findings {
            assert_eq!(stalls.len(), n, "{}: {stalls:?}", l.job);
        }
        if l.aperiodic {
            assert!(
                stalls.iter().all(|f| f.evidence.period_s.is_none()),
                "{}: {stalls:?}",
                l.job
            );
        }
        if l.named_within_s.is_some() {
            let within = l.named_within_s_from(Input::Recording);
            assert!(
                stalls
                    .first()
                    .is_some_and(|f| f.detected_at - l.start <= within),
                "{}: {stalls:?}",
                l.job
            );
        }
        if let (Some(before), Some(after)) = (l.lasts_to_end_within_s, l.ends_within_s) {
            let (lo, hi) = (l.end() - before, l.end() + after);
            assert!(
                stalls
                    .iter()
                    .all(|f| f.end.is_some_and(|e| (lo..=hi).contains(&e))),
                "{}: {stalls:?}",
                l.job
            );
        }
    }
}

/// What the live detector raised on the H200 (the findings in each whole recording): one stall
/// finding a job, within its bound of its onset; none with a period on random stalls; a starving
/// job's period within 15% of the job's; and where the label says so, raised first without its
/// period ("period not yet confirmed") and reported with it once confirmed.
#[test]
fn live_findings_name_each_job_once_with_its_period_or_none() {
    for name in LIVE_FINDINGS {
        let whole = Folder::open(name);
        let live = live_findings(&whole.recording());
        let last: Vec<Finding> = live.iter().map(|l| l.1.clone()).collect();
        for l in &whole.labels {
            let of_job = stalls_named_during(&last, l);
            println!("{}: live {}", l.job, describe(&of_job, l.begin()));
            assert_eq!(
                Some(of_job.len()),
                l.stall_findings,
                "{}: {of_job:?}",
                l.job
            );
            let f = of_job[0];
            let within = l.named_within_s_from(Input::Recording);
            assert!(f.detected_at - l.begin() <= within, "{}: {f:?}", l.job);
            let first = &live
                .iter()
                .find(|x| x.1.start.to_bits() == f.start.to_bits() && x.1.kind == f.kind)
                .expect("first seen")
                .0;
            if l.aperiodic {
                assert!(
                    live.iter().all(|x| x.1.evidence.period_s.is_none()
                        || x.1.start > l.end()
                        || x.1.end.is_some_and(|e| e < l.start)),
                    "{}: a period",
                    l.job
                );
            }
            if let Some(p) = l.period_s {
                let tol = l.period_tolerance() * p;
                let q = f.evidence.period_s;
                assert!(q.is_some_and(|q| (q - p).abs() < tol), "{}: {f:?}", l.job);
            }
            if l.period_confirmed_later {
                assert_eq!(first.evidence.period_s, None, "{}: {first:?}", l.job);
                assert!(
                    first.summary.contains("period not yet confirmed"),
                    "{first:?}"
                );
            }
        }
    }
}

fn describe(found: &[&Finding], begin: f64) -> String {
    found
        .iter()
        .map(|f| {
            format!(
                "{} {:.1} s after start, period {:?}: {}",
                f.kind,
                f.detected_at - begin,
                f.evidence.period_s,
                f.summary
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// A finding belongs to the job it was seen in. Every recording of several jobs replayed tick by
/// tick as the dashboard runs it, for each job whose entry bounds it (`findings_end_within_s`):
/// every finding raised while the job ran (from its `process_start` where its start-up ran long
/// before its start mark) ends within that many seconds after the job's end; from that many
/// seconds after its start the GPU carries no finding raised before it and its
/// verdict is never the kind of one; no finding of a kind its entry's `not` lists is raised
/// while it runs; and where the entry says so, the job's own verdict (its folder's label) is
/// raised within `verdict_within_s` of its onset (else start).
#[test]
fn each_finding_ends_with_its_job_and_the_next_job_starts_clean() {
    let cfg = DetectorConfig::default();
    let mut checked = 0;
    for whole in folders().into_iter().filter(|f| !f.is_job()) {
        let bounded: Vec<&Label> = whole
            .labels
            .iter()
            .filter(|l| l.findings_end_within_s.is_some())
            .collect();
        if bounded.is_empty() {
            continue;
        }
        let (verdicts, found) = replay(&cfg, &[whole.recording()]);
        for l in bounded {
            check_own_findings(&whole, l, &verdicts, &found);
            checked += 1;
        }
    }
    assert!(checked > 0, "no job bounds its findings");
}

/// The checks of [`each_finding_ends_with_its_job_and_the_next_job_starts_clean`] for job `l`.
fn check_own_findings(
    whole: &Folder,
    l: &Label,
    verdicts: &[(f64, FindingKind)],
    found: &[Finding],
) {
    let within = l.findings_end_within_s.unwrap_or(0.0);
    let name = format!("{}: {}", whole.name, l.job);
    // The job's start-up before its start mark is the job's own (`process_start`).
    let from = l.own_from();
    let raised_during = |f: &&Finding| (from..=l.end()).contains(&f.detected_at);
    let own: Vec<&Finding> = found.iter().filter(raised_during).collect();
    let late: Vec<&&Finding> = own
        .iter()
        .filter(|f| f.end.is_none_or(|e| e > l.end() + within))
        .collect();
    assert!(late.is_empty(), "{name}: outlived the job: {late:?}");
    let clean_from = l.start + within;
    let carried: Vec<&Finding> = found
        .iter()
        .filter(|f| f.detected_at < from && f.end.is_none_or(|e| e > clean_from))
        .collect();
    assert!(carried.is_empty(), "{name}: carried in: {carried:?}");
    let wrong: Vec<&&Finding> = own.iter().filter(|f| l.not.contains(&f.kind)).collect();
    assert!(wrong.is_empty(), "{name}: {wrong:?}");
    let before: Vec<FindingKind> = found
        .iter()
        .filter(|f| f.detected_at < from)
        .map(|f| f.kind)
        .collect();
    let shown = verdicts
        .iter()
        .filter(|(t, v)| (clean_from..=l.end()).contains(t) && before.contains(v))
        .filter(|(_, v)| !own.iter().any(|f| f.kind == *v));
    assert_eq!(shown.count(), 0, "{name}: an earlier job's verdict shown");
    if let Some(limit) = l
        .verdict_within_s
        .as_ref()
        .and_then(|v| v.of(Input::Recording))
    {
        let verdict = job(&l.job).verdict.expect("the job's verdict");
        let first = own.iter().find(|f| f.kind == verdict);
        let after = first.map(|f| f.detected_at - l.begin());
        println!("{name}: {verdict} raised {after:?} s after its start");
        assert!(after.is_some_and(|a| a <= limit), "{name}: {own:?}");
    }
}

/// A spin kernel in an nvidia-smi log without SM activity or power limit: in the log of the
/// whole recording, where this GPU drew five times the power at full utilization in the job
/// before, it is busy but idle within its bound; in its own log, with nothing busier to compare,
/// the report says it cannot judge (the label accepts healthy there).
#[test]
fn a_spin_kernel_is_named_from_a_log_once_the_gpu_was_seen_working() {
    let cfg = DetectorConfig::default();
    let whole = Folder::open(SPIN_KERNEL_AND_OTHERS);
    let l = whole.entry(SPIN_KERNEL);
    let log = whole.input(Input::NvidiaSmi).expect("the whole log");
    let r = analyze_path(&log, None, &cfg).expect("analyze");
    let f = r.gpus[0]
        .findings
        .iter()
        .find(|f| {
            f.kind == FindingKind::BusyButIdle && (l.start..=l.end()).contains(&f.detected_at)
        })
        .unwrap_or_else(|| panic!("not named: {:?}", r.gpus[0].findings));
    let limit = l
        .verdict_within_s
        .as_ref()
        .and_then(|v| v.of(Input::Recording));
    assert!(limit.is_some_and(|s| f.detected_at - l.start <= s), "{f:?}");
    assert!(
        f.summary.contains("when this GPU was busy before"),
        "{}",
        f.summary
    );
    let own = Folder::open(SPIN_KERNEL);
    let r = analyze_path(&own.input(Input::NvidiaSmi).expect("log"), None, &cfg).expect("analyze");
    let g = &r.gpus[0];
    assert!(g.findings.is_empty(), "{:?}", g.findings);
    assert!(
        g.limits.iter().any(|s| s.contains("busy but idle")),
        "{:?}",
        g.limits
    );
}
