//! The detector on the second set of labelled H200 data: scenarios recorded by `gpulse record`
//! itself beside real PyTorch jobs (`tests/data/h200-2026-12-02-gpulse/`), each as a recording
//! slice (driver windows, SM activity, PCIe, processes) and as an `nvidia-smi -lms 250` log.
//!
//! `cargo test --test detector_h200_gpulse -- --nocapture` prints the results table.

use std::path::{Path, PathBuf};

use gpulse::analyze::{analyze_path, Report};
use gpulse::backend::SampleSource;
use gpulse::detector::{DetectorConfig, FindingEvent};
use gpulse::engine::{Engine, EngineConfig};
use gpulse::model::{Finding, FindingKind, Severity};
use gpulse::recording::RecordingReader;

/// The first run's data, and the second run's (`RUN2`, recorded later the same day).
const RUN1: &str = "h200-2026-12-02-gpulse";
const RUN2: &str = "h200-2026-12-02-gpulse-run2";
const RUN6: &str = "h200-2026-12-03-gpulse-run6";
const RUN7: &str = "h200-2026-12-03-gpulse-run7";
const RUN8: &str = "h200-2026-12-03-gpulse-run8";
const RUN9: &str = "h200-2026-12-03-gpulse-run9";
const RUN10: &str = "h200-2026-12-03-gpulse-run10";
const RUN11: &str = "h200-2026-12-03-gpulse-run11";
const RUN12: &str = "h200-2026-12-03-gpulse-run12";
const RUN13: &str = "h200-2026-12-03-gpulse-run13";
const RUN14: &str = "h200-2026-12-03-gpulse-run14";
const RUN15: &str = "h200-2026-12-03-gpulse-run15";

fn data_of(run: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(run)
}

fn data() -> PathBuf {
    data_of(RUN1)
}

#[derive(Debug)]
struct Label {
    name: String,
    verdict: FindingKind,
    also: Vec<FindingKind>,
    not: Vec<FindingKind>,
    start: f64,
    end: Option<f64>,
    onset: Option<f64>,
    recovered: Option<f64>,
    /// Bursts in each cycle (`bursts_per_cycle`, default 1): two where workers deliver out of
    /// step, and the true period spans two of them.
    bursts_per_cycle: usize,
    /// Stalls with no cadence (`aperiodic`): no finding may carry a period.
    aperiodic: bool,
    /// The cycle as the job measured it (`period_s`), where the bursts do not show it.
    period_s: Option<f64>,
    why: String,
}

fn labels(run: &str) -> Vec<Label> {
    let text = std::fs::read_to_string(data_of(run).join("labels.json")).expect("labels.json");
    let v: serde_json::Value = serde_json::from_str(&text).expect("json");
    let kinds = |x: Option<&serde_json::Value>| -> Vec<FindingKind> {
        x.and_then(|a| a.as_array())
            .map(|a| {
                a.iter()
                    .map(|k| FindingKind::parse(k.as_str().expect("str")).expect("known kind"))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut out: Vec<Label> = v
        .as_object()
        .expect("object")
        .iter()
        .map(|(name, l)| Label {
            name: name.clone(),
            verdict: FindingKind::parse(l["verdict"].as_str().expect("verdict")).expect("kind"),
            also: kinds(l.get("also")),
            not: kinds(l.get("not")),
            start: l["start"].as_f64().expect("start"),
            end: l.get("end").and_then(|o| o.as_f64()),
            onset: l.get("onset").and_then(|o| o.as_f64()),
            recovered: l.get("recovered").and_then(|o| o.as_f64()),
            bursts_per_cycle: l
                .get("bursts_per_cycle")
                .and_then(|o| o.as_u64())
                .map_or(1, |k| k.max(1) as usize),
            aperiodic: l
                .get("aperiodic")
                .and_then(|o| o.as_bool())
                .unwrap_or(false),
            period_s: l.get("period_s").and_then(|o| o.as_f64()),
            why: l["why"].as_str().unwrap_or("").to_string(),
        })
        .collect();
    out.sort_by(|a, b| a.start.total_cmp(&b.start));
    out
}

/// The label named `name` of run `run`.
fn label_of(run: &str, name: &str) -> Label {
    labels(run)
        .into_iter()
        .find(|l| l.name == name)
        .unwrap_or_else(|| panic!("{run}: no label {name}"))
}

/// The true burst period, from the recording's 200 ms driver windows: the median spacing of
/// burst starts (a window of at least a fifth of the peak after at least 0.35 s of windows below a
/// twentieth of it), from 1 s after `onset` (the last fast steps end) to `recovered` where the
/// label has them; with several bursts to a cycle, the spacing of every `bursts_per_cycle`-th
/// burst. `None` with fewer than four spacings. A label's own `period_s` (the job's measurement)
/// comes first.
fn true_period(run: &str, label: &Label) -> Option<f64> {
    if label.period_s.is_some() {
        return label.period_s;
    }
    let path = data_of(run).join(format!("{}.ndjson.zst", label.name));
    let mut reader = RecordingReader::open(&path).expect("recording");
    let (lo, hi) = (
        label.onset.map_or(f64::MIN, |o| o + 1.0),
        label.recovered.unwrap_or(f64::MAX),
    );
    let mut windows = Vec::new();
    while let Some(s) = reader.next_sample() {
        windows.extend(
            s.gpus[0]
                .util_windows
                .iter()
                .filter(|w| (lo..=hi).contains(&w.t))
                .map(|w| (w.t, w.util)),
        );
    }
    let peak = windows.iter().map(|w| w.1).fold(0.0, f64::max);
    let mut starts = Vec::new();
    let mut quiet_since: Option<f64> = None;
    for &(t, u) in &windows {
        if u < peak / 20.0 {
            quiet_since.get_or_insert(t);
        } else {
            if u >= peak / 5.0 && quiet_since.is_some_and(|q| t - q >= 0.35) {
                starts.push(t);
            }
            quiet_since = None;
        }
    }
    let k = label.bursts_per_cycle;
    let mut sp: Vec<f64> = starts.windows(k + 1).map(|w| w[k] - w[0]).collect();
    if sp.len() < 4 {
        return None;
    }
    sp.sort_by(|a, b| a.total_cmp(b));
    Some(sp[sp.len() / 2])
}

const STARVING_KINDS: [FindingKind; 2] = [FindingKind::InputStarvation, FindingKind::ErraticStalls];

fn check(run: &str, label: &Label, r: &Report, input: &str, rows: &mut Vec<String>) -> Vec<String> {
    let mut errors = Vec::new();
    let g = &r.gpus[0];
    let ok: Vec<FindingKind> = std::iter::once(label.verdict)
        .chain(label.also.iter().copied())
        .collect();
    if !ok.contains(&g.verdict) || label.not.contains(&g.verdict) {
        errors.push(format!(
            "{} ({input}): verdict {} not in {ok:?}",
            label.name, g.verdict
        ));
    }
    for f in &g.findings {
        if label.not.contains(&f.kind) {
            errors.push(format!(
                "{} ({input}): finding {} is excluded",
                label.name, f.kind
            ));
        }
        if let Some(p) = f.evidence.period_s.filter(|_| label.aperiodic) {
            errors.push(format!(
                "{} ({input}): {} with a period ({p:.2} s) in stalls with none",
                label.name, f.kind
            ));
        }
        if label.name == "healthy" && STARVING_KINDS.contains(&f.kind) {
            errors.push(format!(
                "{} ({input}): {} on a healthy job",
                label.name, f.kind
            ));
        }
    }
    let starving = g.findings.iter().find(|f| STARVING_KINDS.contains(&f.kind));
    let begin = label.onset.unwrap_or(label.start);
    let after = starving.map(|f| f.detected_at - begin);
    let truth = true_period(run, label);
    // A job labelled starving is flagged within 15 s of its start (or onset) whenever the
    // detector names it at all; a miss is allowed only where the label accepts it (`also`). The
    // same holds for the nvidia-smi logs, whose utilization misses some single-window bursts:
    // their power column shows them (`POWER_BURST_W`).
    let limit = 15.0;
    if STARVING_KINDS.contains(&label.verdict) && STARVING_KINDS.contains(&g.verdict) {
        match after {
            Some(a) if a <= limit => {}
            other => errors.push(format!(
                "{} ({input}): starvation detected after {other:?} s (limit {limit:.1} s)",
                label.name
            )),
        }
    }
    let period = g
        .findings
        .iter()
        .find_map(|f| (f.kind == FindingKind::InputStarvation).then_some(f.evidence.period_s)?);
    if let (Some(p), Some(tp)) = (period, truth) {
        if tp >= 1.0 && (p - tp).abs() > 0.15 * tp {
            errors.push(format!(
                "{} ({input}): period {p:.2} s, true {tp:.2} s",
                label.name
            ));
        }
    }
    let dash = || "-".to_string();
    rows.push(format!(
        "| {} | {input} | {} | {} | {} | {} | {} | {} |",
        label.name,
        ok.iter()
            .map(|k| k.as_str())
            .collect::<Vec<_>>()
            .join(" / "),
        g.verdict,
        after.map(|a| format!("{a:.1}")).unwrap_or_else(dash),
        period.map(|p| format!("{p:.2}")).unwrap_or_else(dash),
        truth.map(|p| format!("{p:.2}")).unwrap_or_else(dash),
        g.findings
            .iter()
            .map(|f| format!("{}:{}", f.kind, f.severity.as_str()))
            .collect::<Vec<_>>()
            .join(" "),
    ));
    errors
}

/// Every scenario of `run` through `analyze` from both inputs: the results table and the errors.
fn results(run: &str, scenarios: usize) -> (Vec<String>, Vec<String>) {
    results_keeping(run, scenarios, |_, _, _, _| true)
}

/// [`results`], with the errors `keep(label, input, report, error)` keeps.
fn results_keeping(
    run: &str,
    scenarios: usize,
    keep: impl Fn(&Label, &str, &Report, &str) -> bool,
) -> (Vec<String>, Vec<String>) {
    let cfg = DetectorConfig::default();
    let mut rows = vec![
        "| scenario | input | expected | got | detected after s | period s | true period s | findings |".to_string(),
        "|---|---|---|---|---|---|---|---|".to_string(),
    ];
    let mut errors = Vec::new();
    let all = labels(run);
    assert_eq!(all.len(), scenarios, "labels: {all:?}");
    for label in &all {
        assert!(!label.why.is_empty(), "{} has no why", label.name);
        for input in ["ndjson.zst", "smi.csv"] {
            let path = data_of(run).join(format!("{}.{input}", label.name));
            let r = analyze_path(&path, None, &cfg).expect("analyze");
            assert!(
                r.warnings.is_empty(),
                "{}: {:?}",
                path.display(),
                r.warnings
            );
            assert!(r.samples > 80, "{}: {} samples", path.display(), r.samples);
            let found = check(run, label, &r, input, &mut rows);
            errors.extend(found.into_iter().filter(|e| keep(label, input, &r, e)));
        }
    }
    (rows, errors)
}

/// The starvation and erratic-stalls findings of `found` raised while the job `label` ran.
fn stalls_named_during<'a>(found: &'a [Finding], label: &Label) -> Vec<&'a Finding> {
    let end = label.end.expect("end");
    found
        .iter()
        .filter(|f| {
            STARVING_KINDS.contains(&f.kind) && f.detected_at >= label.start && f.detected_at <= end
        })
        .collect()
}

/// The detection time an error of [`check`] reports ("starvation detected after Some(t) s").
fn detected_after(error: &str) -> Option<f64> {
    error
        .split("detected after Some(")
        .nth(1)?
        .split(')')
        .next()?
        .parse()
        .ok()
}

/// For a starving job with a long cycle, whose detection time is allowed beyond the bound: its
/// starvation finding has the period `period` within `tolerance` s (asserted), and whether the
/// error `e` is only a detection within `allowed(input)` s.
fn slow_cycle_allowed(
    input: &str,
    r: &Report,
    e: &str,
    period: f64,
    tolerance: f64,
    allowed: impl Fn(&str) -> f64,
) -> bool {
    let p = r.gpus[0]
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::InputStarvation)
        .and_then(|f| f.evidence.period_s);
    assert!(
        p.is_some_and(|p| (p - period).abs() < tolerance),
        "{input}: {p:?}"
    );
    detected_after(e).is_some_and(|t| t <= allowed(input))
}

#[test]
fn every_scenario_gets_an_accepted_verdict_from_the_recording_and_the_csv_log() {
    let (rows, errors) = results(RUN1, 9);
    println!("{}", rows.join("\n"));
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn every_scenario_of_the_second_run_gets_an_accepted_verdict() {
    let (rows, errors) = results(RUN2, 4);
    println!("{}", rows.join("\n"));
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn recordings_carry_what_the_csv_logs_lack_and_the_detector_uses_it() {
    let cfg = DetectorConfig::default();
    let rec = analyze_path(&data().join("sync_bound.ndjson.zst"), None, &cfg).expect("analyze");
    assert!(rec.source.starts_with("gpulse recording"), "{}", rec.source);
    let f = rec.gpus[0]
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::HostBound)
        .expect("host_bound");
    // GPM SM activity is only in the recording: the evidence names it.
    assert!(f.summary.contains("SM activity"), "{}", f.summary);
    let csv = analyze_path(&data().join("sync_bound.smi.csv"), None, &cfg).expect("analyze");
    let f = csv.gpus[0]
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::HostBound)
        .expect("host_bound");
    assert!(!f.summary.contains("SM activity"), "{}", f.summary);
    // Statistics over driver windows (200 ms) rather than polled rows (250 ms): more readings
    // than ticks.
    let r = analyze_path(&data().join("starved_dips.ndjson.zst"), None, &cfg).expect("analyze");
    assert!(
        r.gpus[0].stats.samples > r.samples,
        "{} windows, {} ticks",
        r.gpus[0].stats.samples,
        r.samples
    );
}

/// The first run's transition starves for only three slow cycles (~4 s apart) in 12 s: the
/// recording names it from those three deep, evenly spaced dips, within 15 s of onset, as a
/// provisional period (warn, low confidence, 3 cycles, the period itself not reported: three
/// cycles do not confirm one). Its nvidia-smi log, which keeps one
/// window in each poll, still misses it (the label accepts `healthy`).
#[test]
fn three_slow_starving_cycles_are_named_from_the_recording() {
    let label = label_of(RUN1, "transition");
    let onset = label.onset.expect("onset");
    let cfg = DetectorConfig::default();
    let path = data_of(RUN1).join("transition.ndjson.zst");
    let r = analyze_path(&path, None, &cfg).expect("analyze");
    let g = &r.gpus[0];
    assert_eq!(g.verdict, FindingKind::InputStarvation, "{:?}", g.findings);
    let f = g
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::InputStarvation)
        .expect("starvation finding");
    let after = f.detected_at - onset;
    assert!(
        (0.0..=15.0).contains(&after),
        "detected {after:.1} s after onset"
    );
    assert_eq!(f.severity, gpulse::model::Severity::Warn);
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

/// A job that starves after a healthy stretch (the second run's transition): named within three
/// periods of onset from the recording and four from the nvidia-smi log, cleared after it
/// recovers, and the live verdict (the engine's, tick by tick as the dashboard shows it) is never
/// `idle` while the process holds its memory and batches keep coming.
#[test]
fn a_job_that_starts_starving_after_a_healthy_stretch_is_named_and_never_called_idle() {
    let label = label_of(RUN2, "transition");
    let (onset, recovered) = (
        label.onset.expect("onset"),
        label.recovered.expect("recovered"),
    );
    let period = true_period(RUN2, &label).expect("burst spacing");
    assert!((3.5..4.5).contains(&period), "{period}");
    let cfg = DetectorConfig::default();
    for input in ["ndjson.zst", "smi.csv"] {
        let path = data_of(RUN2).join(format!("transition.{input}"));
        let r = analyze_path(&path, None, &cfg).expect("analyze");
        let f = r.gpus[0]
            .findings
            .iter()
            .find(|f| f.kind == FindingKind::InputStarvation)
            .unwrap_or_else(|| panic!("{input}: no starvation in {:?}", r.gpus[0].findings));
        let after = f.detected_at - onset;
        let periods = if input == "smi.csv" { 4.0 } else { 3.0 };
        assert!(
            after <= periods * period,
            "{input}: detected {after:.1} s after onset"
        );
        let end = f.end.expect("cleared before the end of the file");
        assert!(
            end > onset + 0.5 * (recovered - onset) && end <= recovered + period,
            "{input}: last seen {:.1} s after recovered",
            end - recovered
        );
        let p = f.evidence.period_s.expect("period");
        assert!(
            (p - period).abs() <= 0.15 * period,
            "{input}: {p} vs {period}"
        );
        assert_eq!(r.gpus[0].findings.len(), 1, "{:?}", r.gpus[0].findings);
    }
    // Its slice alone, and the whole run as the dashboard saw it: the 90 s window then also
    // holds the starved_dips job's 1.35 s dips and the idle stretch after it.
    for files in [&["transition"][..], &["whole_run"][..]] {
        let (verdicts, found) = replay(&cfg, files);
        assert!(verdicts.len() > 100, "{files:?}: {} ticks", verdicts.len());
        let in_phase: Vec<FindingKind> = verdicts
            .iter()
            .filter(|(t, _)| (onset..recovered).contains(t))
            .map(|v| v.1)
            .collect();
        assert!(
            !in_phase.contains(&FindingKind::Idle),
            "{files:?}: idle while starving: {in_phase:?}"
        );
        assert_eq!(in_phase.last(), Some(&FindingKind::InputStarvation));
        let f = found
            .iter()
            .find(|f| f.kind == FindingKind::InputStarvation && f.start >= onset - 1.0)
            .unwrap_or_else(|| panic!("{files:?}: {found:?}"));
        assert!(f.detected_at - onset <= 5.0 * period, "{files:?}: {f:?}");
        let end = f.end.expect("cleared");
        assert!(end <= recovered + period, "{files:?}: {f:?}");
    }
}

/// Replay `names` (recordings of the second run, in order) through one engine: the verdict at
/// every tick, and every finding raised.
fn replay(cfg: &DetectorConfig, names: &[&str]) -> (Vec<(f64, FindingKind)>, Vec<Finding>) {
    replay_in(RUN2, cfg, names)
}

/// [`replay`] for recordings of `run`.
fn replay_in(
    run: &str,
    cfg: &DetectorConfig,
    names: &[&str],
) -> (Vec<(f64, FindingKind)>, Vec<Finding>) {
    let open = |n: &str| {
        RecordingReader::open(&data_of(run).join(format!("{n}.ndjson.zst"))).expect("recording")
    };
    let config = EngineConfig {
        interval_s: 0.25,
        retention_s: cfg.window_s + 30.0,
        detector: cfg.clone(),
    };
    let mut engine = Engine::new(open(names[0]).system().clone(), config);
    let (mut verdicts, mut found) = (Vec::new(), Vec::new());
    for n in names {
        let mut reader = open(n);
        while let Some(s) = reader.next_sample() {
            let t = s.t;
            for ev in engine.ingest(s) {
                if let FindingEvent::Cleared(f) = ev {
                    found.push(f);
                }
            }
            verdicts.push((t, engine.detector().verdict(0)));
        }
    }
    found.extend(engine.detector().active().iter().cloned());
    (verdicts, found)
}

/// The whole second run as the dashboard saw it: its first reading carries a short blip from the
/// driver's buffer (windows of 35-99% before the recording began) on an idle GPU: `idle`, not
/// `healthy`, until the first job loads (~37 s in).
#[test]
fn the_start_of_the_second_run_is_idle_despite_a_blip() {
    let (verdicts, _) = replay(&DetectorConfig::default(), &["whole_run"]);
    let t0 = verdicts[0].0;
    let first: Vec<FindingKind> = verdicts
        .iter()
        .take_while(|(t, _)| *t < t0 + 36.0)
        .map(|v| v.1)
        .collect();
    assert!(first.len() > 100, "{} ticks", first.len());
    assert!(first.iter().all(|v| *v == FindingKind::Idle), "{first:?}");
}

/// Run 6, recorded after the detector was last changed and not tuned on (README of its
/// directory): the 3 s loader and the healthy → starving → healthy job get their label within the
/// bound, from the recordings and from the logs; the 13 s job is in the printed table (its miss is
/// a limit the README states: four cycles of a 13 s period that a 48 s job does not hold).
#[test]
fn the_sixth_run_is_named_from_its_recordings() {
    let cfg = DetectorConfig::default();
    let (rows, errors) = results_keeping(RUN6, 3, |label, _, _, _| label.name != "starved_6s");
    println!("{}", rows.join("\n"));
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    // The 13 s job in the whole run: named as starvation once four cycles are seen (after the
    // job ended), never as a checkpoint or eval cadence.
    let r = analyze_path(&data_of(RUN6).join("whole_run.ndjson.zst"), None, &cfg).expect("analyze");
    let label = label_of(RUN6, "starved_6s");
    let end = label.end.expect("the job's end");
    let in_job = |f: &&Finding| f.start >= label.start - 10.0 && f.start <= end;
    let named: Vec<&Finding> = r.gpus[0].findings.iter().filter(in_job).collect();
    assert!(
        named.iter().any(|f| f.kind == FindingKind::InputStarvation
            && f.evidence
                .period_s
                .is_some_and(|p| (p - 13.0).abs() < 0.15 * 13.0)),
        "{named:?}"
    );
    assert!(
        named.iter().all(|f| f.kind != FindingKind::PeriodicStall),
        "{named:?}"
    );
    // It ends with its job: the process freed its memory 11.6 s after the job's end mark, and
    // the finding ended there, not 37 s after the mark (two blips of the next job's start-up,
    // 13 s apart, kept it going until that job began).
    let f = named
        .iter()
        .find(|f| f.kind == FindingKind::InputStarvation)
        .expect("named");
    let ended = f.end.expect("ended before the next job");
    println!(
        "13 s loader: finding ended {:.1} s after the job's end mark",
        ended - end
    );
    assert!(ended <= end + 13.0, "{f:?}");
}

/// Run 7, not tuned on (README of its directory): a checkpoint cadence is a periodic stall and
/// never starvation (the whole run included: its period was once halved into starvation), and a
/// loader that delivers a batch every 10 s is starvation with its period, named after four
/// cycles (six periods from the log), in the whole run too.
#[test]
fn the_seventh_run_tells_a_checkpoint_cadence_from_a_slow_loader() {
    let cfg = DetectorConfig::default();
    // A period of 8 s or more needs four cycles: allowed six periods.
    let (rows, errors) = results_keeping(RUN7, 2, |label, input, r, e| {
        label.name != "starved_10s" || !slow_cycle_allowed(input, r, e, 10.0, 1.0, |_| 60.0)
    });
    println!("{}", rows.join("\n"));
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    let r = analyze_path(&data_of(RUN7).join("whole_run.ndjson.zst"), None, &cfg).expect("analyze");
    // The 10 s loader in the whole run, its start-up (a new process: memory moving by GiBs,
    // blips as high as its bursts) in the window: named with its period before the job ends
    // (until the window was analysed again from the moment memory settled, it was not named).
    let loader = label_of(RUN7, "starved_10s");
    let named = r.gpus[0]
        .findings
        .iter()
        .find(|f| {
            f.kind == FindingKind::InputStarvation
                && f.start >= loader.start - 10.0
                && f.evidence.period_s.is_some_and(|p| (p - 10.0).abs() < 1.5)
        })
        .unwrap_or_else(|| panic!("not named: {:?}", r.gpus[0].findings));
    println!(
        "10 s loader in the whole run: named {:.1} s after its start",
        named.detected_at - loader.start
    );
    assert!(named.detected_at <= loader.end.expect("end"), "{named:?}");
    let checkpoint = label_of(RUN7, "checkpoint");
    let end = checkpoint.end.expect("the checkpoint job's end");
    assert!(
        !r.gpus[0]
            .findings
            .iter()
            .any(|f| f.kind == FindingKind::InputStarvation
                && f.start >= checkpoint.start - 10.0
                && f.start <= end),
        "{:?}",
        r.gpus[0].findings
    );
}

/// Run 8, recorded after this detector was written and not tuned on (README of its directory): a
/// healthy → starving → healthy job with two workers in step, an uneven three-worker loader and a
/// steady job get their labels within the bound from the recordings and the logs. (The
/// transition's log was named 26 s after onset until a reading taken as a missed burst went back
/// to what the log read when the next reading caught the burst.)
#[test]
fn the_eighth_run_is_named_from_its_recordings() {
    let (rows, errors) = results(RUN8, 3);
    println!("{}", rows.join("\n"));
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// The ninth run (recorded after this detector was written, not tuned on): a transformer whose
/// four workers deliver together every ~2.6 s, a ResNet-50 that starves from its start and then
/// recovers, and an MLP that syncs with the host every step get their labels from the recordings
/// and the nvidia-smi logs, starvation within the bound; the recovered job's finding ends.
#[test]
fn the_ninth_run_is_named_from_its_recordings() {
    let (rows, errors) = results(RUN9, 3);
    println!("{}", rows.join("\n"));
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    let label = label_of(RUN9, "reverse");
    let recovered = label.recovered.expect("recovered");
    let period = true_period(RUN9, &label).expect("burst spacing");
    let cfg = DetectorConfig::default();
    for input in ["ndjson.zst", "smi.csv"] {
        let path = data_of(RUN9).join(format!("reverse.{input}"));
        let r = analyze_path(&path, None, &cfg).expect("analyze");
        let f = r.gpus[0]
            .findings
            .iter()
            .find(|f| f.kind == FindingKind::InputStarvation)
            .unwrap_or_else(|| panic!("{input}: {:?}", r.gpus[0].findings));
        let end = f.end.expect("cleared before the end of the file");
        println!(
            "reverse ({input}): cleared {:.1} s after recovered",
            end - recovered
        );
        assert!(end <= recovered + 2.0 * period, "{input}: {f:?}");
    }
}

/// The ninth run's whole recording as the dashboard saw it: the reverse job starts 22 s after
/// the transformer's starvation (a burst every 2.6 s) ended, and starves with a burst every
/// 2.8 s for 34 s. The transformer's cycles still fill the 90 s window and no longer go on; the
/// samples after them hold the new period, named within the bound as in the job's slice (before
/// the samples after ended cycles were analysed on their own, it was not named at all, live on
/// the H200 too), and the transformer's finding ends before it.
#[test]
fn a_starving_job_right_after_another_is_named_in_the_whole_run() {
    let cfg = DetectorConfig::default();
    let label = label_of(RUN9, "reverse");
    let first = label_of(RUN9, "tfm_starved");
    let (verdicts, found) = replay_in(RUN9, &cfg, &["whole_run"]);
    let f = found
        .iter()
        .find(|f| f.kind == FindingKind::InputStarvation && f.start >= label.start - 1.0)
        .unwrap_or_else(|| panic!("not named: {found:?}"));
    println!(
        "reverse: named {:.1} s after start: {}",
        f.detected_at - label.start,
        f.summary
    );
    assert!(f.detected_at - label.start <= 15.0, "{f:?}");
    let p = f.evidence.period_s.expect("period");
    assert!((2.5..3.1).contains(&p), "{p}");
    let before = found
        .iter()
        .find(|f| f.kind == FindingKind::InputStarvation && f.start < first.end.expect("end"))
        .expect("the transformer's finding");
    assert!(
        before.end.is_some_and(|e| e <= f.start),
        "{before:?} then {f:?}"
    );
    // Tick by tick, the job reads as starving from when it is named until it recovers.
    let recovered = label.recovered.expect("recovered");
    assert!(verdicts
        .iter()
        .filter(|(t, _)| (f.detected_at..recovered).contains(t))
        .all(|(_, v)| *v == FindingKind::InputStarvation));
}

/// The tenth run (recorded after this detector was written, not tuned on): each job in its own
/// process, so the GPU has no context between jobs. A ViT-B/16 whose six workers deliver
/// together, an evaluation cadence, the same starving job run twice, and a starving job followed
/// by a healthy one get their labels from the recordings and the nvidia-smi logs.
#[test]
fn the_tenth_run_is_named_from_its_recordings() {
    let (rows, errors) = results(RUN10, 6);
    println!("{}", rows.join("\n"));
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// The tenth run's whole recording, as the dashboard saw it: each job starts in a new process
/// after the last one freed its memory. Every starving job is named within 15 s of its start
/// (before the samples of earlier jobs left the window at a new context, the first restarted
/// job was not named at all and the job after it 25 s late), each finding ends with its job,
/// and the healthy job after a starving one is never called starving.
#[test]
fn jobs_one_after_another_are_each_named_in_the_whole_run() {
    let cfg = DetectorConfig::default();
    let (_, found) = replay_in(RUN10, &cfg, &["whole_run"]);
    for name in ["vit_starved", "restart_a", "restart_b", "exit_starved"] {
        let label = label_of(RUN10, name);
        let end = label.end.expect("end");
        // The job's findings: erratic stalls first where its period needs more cycles.
        let of_job = stalls_named_during(&found, &label);
        let first = of_job
            .first()
            .unwrap_or_else(|| panic!("{name} not named: {found:?}"));
        let last_end = of_job.iter().filter_map(|f| f.end).fold(f64::MIN, f64::max);
        println!(
            "{name}: {} named {:.1} s after start ({}), the last ended {:.1} s after the job",
            first.kind,
            first.detected_at - label.start,
            of_job
                .iter()
                .map(|f| f.kind.to_string())
                .collect::<Vec<_>>()
                .join(" then "),
            last_end - end
        );
        assert!(first.detected_at - label.start <= 15.0, "{name}: {first:?}");
        assert!(
            of_job.iter().all(|f| f.end.is_some_and(|e| e <= end + 8.0)),
            "{name}: {of_job:?}"
        );
    }
    let healthy = label_of(RUN10, "then_healthy");
    let carried: Vec<_> = found
        .iter()
        .filter(|f| {
            f.severity >= Severity::Warn
                && f.end.is_none_or(|e| e > healthy.start)
                && f.start < healthy.end.expect("end")
        })
        .collect();
    assert!(carried.is_empty(), "{carried:?}");
}

/// Run 11 (recorded after the detector's last change, not tuned on): a 230 s steady job, a
/// loader far slower than meant (67% waiting, a ~2 s cycle) and one worker feeding a batch every
/// ~6.6 s (99% waiting). Every label is met; the steady job and the 2 s loader within the bound.
/// The 6.6 s loader's first bursts after its start come at 3.4, 10.0 and 16.6 s (one 200 ms
/// window each), so a period can be claimed from the recording only after 16.6 s (named at
/// 18.2 s: three periods allowed); its nvidia-smi log, whose 250 ms polls missed the bursts at
/// 10.0 s (and caught the others at 6–9%), names it after three bursts it did catch (36.7 s: six
/// periods allowed, as for run 7's 10 s loader).
#[test]
fn the_eleventh_run_is_named_from_its_recordings() {
    let (rows, errors) = results_keeping(RUN11, 3, |label, input, r, e| {
        let periods = |input: &str| if input == "smi.csv" { 6.0 } else { 3.0 };
        label.name != "long_period"
            || !slow_cycle_allowed(input, r, e, 6.6, 0.5, |i| periods(i) * 6.6)
    });
    println!("{}", rows.join("\n"));
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// Run 12 (recorded after the detector's last change, not tuned on): a job whose host stalls at
/// random moments (29 stalls of 0.3–1.6 s in 90 s), a loader whose per-sample cost varies, and a
/// ViT checkpointing 1 GB every ~12 s. Every label is met; the random stalls get no period and,
/// from either input, one finding for the whole job (before, four of them came one after another
/// at 1.6 s spacing and were named input starvation with a period, and the erratic-stalls finding
/// ended and was raised again three times).
#[test]
fn the_twelfth_run_is_named_from_its_recordings() {
    let (rows, errors) = results(RUN12, 3);
    println!("{}", rows.join("\n"));
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    let cfg = DetectorConfig::default();
    let label = label_of(RUN12, "random_stalls");
    for input in ["ndjson.zst", "smi.csv"] {
        let path = data_of(RUN12).join(format!("random_stalls.{input}"));
        let r = analyze_path(&path, None, &cfg).expect("analyze");
        let stalls: Vec<&Finding> = r.gpus[0]
            .findings
            .iter()
            .filter(|f| STARVING_KINDS.contains(&f.kind))
            .collect();
        assert_eq!(stalls.len(), 1, "{input}: {stalls:?}");
        let f = stalls[0];
        let end = label.end.expect("end");
        assert!(f.end.is_none_or(|e| e >= end - 1.0), "{input}: {f:?}");
        // Time lost over the job: about the 31% of it the job measured stalled (the busy level
        // of the stretches between stalls, not a sum of overlapping findings).
        let lost = r.gpus[0].stats.time_lost_s / (end - label.start);
        assert!((0.2..=0.45).contains(&lost), "{input}: {lost:.2}");
    }
    // The whole recording, as the dashboard saw it: the random stalls one finding without a
    // period that ends with the job; the jittery loader named within the bound; nothing starving
    // during the checkpoints.
    let (_, found) = replay_in(RUN12, &cfg, &["whole_run"]);
    let during = |name: &str| {
        let l = label_of(RUN12, name);
        let end = l.end.expect("end");
        let of_job: Vec<Finding> = found
            .iter()
            .filter(|f| {
                STARVING_KINDS.contains(&f.kind)
                    && f.start < end
                    && f.end.is_none_or(|e| e > l.start)
            })
            .cloned()
            .collect();
        (l, of_job)
    };
    let (l, stalls) = during("random_stalls");
    assert_eq!(stalls.len(), 1, "{stalls:?}");
    assert!(stalls[0].evidence.period_s.is_none(), "{stalls:?}");
    assert!(
        stalls[0].detected_at - l.start <= 15.0
            && stalls[0].end.is_some_and(|e| (l.end.expect("end") - 1.0
                ..=l.end.expect("end") + 5.0)
                .contains(&e)),
        "{stalls:?}"
    );
    let (l, loader) = during("jitter_loader");
    assert!(
        loader
            .first()
            .is_some_and(|f| f.detected_at - l.start <= 15.0),
        "{loader:?}"
    );
    let (_, ckpt) = during("vit_checkpoint");
    assert!(ckpt.is_empty(), "{ckpt:?}");
}

/// Every finding the live detector raised during `run`'s whole recording, as first raised and as
/// last seen.
fn live_findings(run: &str) -> Vec<(Finding, Finding)> {
    let path = data_of(run).join("whole_run.ndjson.zst");
    let records = RecordingReader::open(&path).expect("recording").read_all();
    let mut live: Vec<(Finding, Finding)> = Vec::new();
    for r in &records {
        for f in &r.findings {
            match live
                .iter_mut()
                .find(|l| l.0.kind == f.kind && l.0.start.to_bits() == f.start.to_bits())
            {
                Some(l) => l.1 = f.clone(),
                None => live.push((f.clone(), f.clone())),
            }
        }
    }
    live
}

/// Run 13, recorded with the detector after run 12's changes: what it raised live on the H200
/// (the findings in the whole recording) and from the files. Random stalls with another seed get
/// one erratic-stalls finding and no period; a healthy job that starts starving in the same
/// process, and six workers delivering together every ~2 s, are named within 10 s with their
/// periods (within 15% of the bursts' spacing).
#[test]
fn the_thirteenth_run_is_named_live_and_from_its_recordings() {
    let (rows, errors) = results(RUN13, 3);
    println!("{}", rows.join("\n"));
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    let live: Vec<Finding> = live_findings(RUN13).into_iter().map(|l| l.1).collect();
    // The periods: the burst spacing in the recording's driver windows (the table's true period).
    for (name, period) in [
        ("random_stalls2", None),
        ("transition3", Some(1.60)),
        ("starved_6w", Some(2.20)),
    ] {
        let l = label_of(RUN13, name);
        let begin = l.onset.unwrap_or(l.start);
        let of_job = stalls_named_during(&live, &l);
        println!(
            "{name}: live {}",
            of_job
                .iter()
                .map(|f| format!(
                    "{} {:.1} s after start, period {:?}",
                    f.kind,
                    f.detected_at - begin,
                    f.evidence.period_s
                ))
                .collect::<Vec<_>>()
                .join("; ")
        );
        assert_eq!(of_job.len(), 1, "{name}: {of_job:?}");
        let f = of_job[0];
        assert!(f.detected_at - begin <= 15.0, "{name}: {f:?}");
        match period {
            None => assert!(f.evidence.period_s.is_none(), "{name}: {f:?}"),
            Some(p) => assert!(
                f.evidence
                    .period_s
                    .is_some_and(|q| (q - p).abs() < 0.15 * p),
                "{name}: {f:?}"
            ),
        }
    }
}

/// Run 14, recorded with periods reported only once confirmed and the stall watch: what it
/// raised live on the H200 and from the files. Random stalls with a third seed get one
/// erratic-stalls finding (16.1 s after the start: its fifth stall began at 16.0 s) and no period; one worker feeding a batch every ~7.25 s is named from
/// its third burst (17.4 s, over the 15 s bound as for run 11's 6.6 s loader: three periods
/// allowed) without its period, which it reports once 40 s of cycles confirm it; one worker
/// every ~1.8 s is named within 10 s, its period confirmed within 15 s (both within 15% of the
/// job's own batch spacing).
#[test]
fn the_fourteenth_run_is_named_live_and_from_its_recordings() {
    let (rows, errors) =
        results_keeping(RUN14, 3, |label, input, r, e| match label.name.as_str() {
            "slow_7s" => !slow_cycle_allowed(input, r, e, 7.25, 0.5, |_| 3.0 * 7.25),
            // Sparser than runs 12 and 13's (16 stalls in 60 s): the fifth stall that erratic stalls
            // need began 16.0 s after the start (13.4 s counting one at 0.6 s, as the job began).
            "random_stalls3" => !detected_after(e).is_some_and(|t| t <= 17.0),
            _ => true,
        });
    println!("{}", rows.join("\n"));
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    let live = live_findings(RUN14);
    let last: Vec<Finding> = live.iter().map(|l| l.1.clone()).collect();
    for (name, period, named_by) in [
        ("random_stalls3", None, 17.0),
        ("slow_7s", Some(7.25), 3.0 * 7.25),
        ("starved_1w", Some(1.80), 10.0),
    ] {
        let l = label_of(RUN14, name);
        let of_job = stalls_named_during(&last, &l);
        println!(
            "{name}: live {}",
            of_job
                .iter()
                .map(|f| format!(
                    "{} {:.1} s after start, period {:?}: {}",
                    f.kind,
                    f.detected_at - l.start,
                    f.evidence.period_s,
                    f.summary
                ))
                .collect::<Vec<_>>()
                .join("; ")
        );
        assert_eq!(of_job.len(), 1, "{name}: {of_job:?}");
        let f = of_job[0];
        assert!(f.detected_at - l.start <= named_by, "{name}: {f:?}");
        let first = &live
            .iter()
            .find(|x| x.1.start.to_bits() == f.start.to_bits() && x.1.kind == f.kind)
            .expect("first seen")
            .0;
        match period {
            None => assert!(
                live.iter().all(|x| x.1.evidence.period_s.is_none()
                    || x.1.start > l.end.unwrap_or(f64::MAX)
                    || x.1.end.is_some_and(|e| e < l.start)),
                "{name}: a period"
            ),
            Some(p) => {
                // Raised before its period was confirmed, then reported with it.
                assert_eq!(first.evidence.period_s, None, "{name}: {first:?}");
                assert!(
                    first.summary.contains("period not yet confirmed"),
                    "{first:?}"
                );
                assert!(
                    f.evidence
                        .period_s
                        .is_some_and(|q| (q - p).abs() < 0.15 * p),
                    "{name}: {f:?}"
                );
            }
        }
    }
}

/// Run 15, recorded with the stall watch's longer span and hold: one worker feeding a batch every
/// ~10.24 s is named with its period once four cycles are seen (42.1 s from the recording, 37.3 s
/// from the log; 40 s of cycles confirm the period at once: the synthetic sweep's bound for long
/// periods, four and a half periods and 5 s, allowed), and a checkpoint cadence (a 2.5 s pause
/// every ~8 s of training) is a periodic stall, never starvation. The watch table above replays
/// both: one line each, shown once and hidden once.
#[test]
fn the_fifteenth_run_is_named_from_its_recordings() {
    let (rows, errors) = results_keeping(RUN15, 2, |label, input, r, e| {
        label.name != "slow_10s"
            || !slow_cycle_allowed(input, r, e, 10.24, 0.5, |_| 4.5 * 10.24 + 5.0)
    });
    println!("{}", rows.join("\n"));
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// Every labelled recording replayed tick by tick as the dashboard runs it: how soon a starving
/// job's stalls are shown (the snapshot's `watch`, while the GPU still reads `healthy`) against
/// when it is named, and how often a job labelled without stalls shows them. The watch never
/// shows beside a finding, does not flicker, and on the steady training jobs (`healthy`) it stays
/// rare.
#[test]
fn stalls_are_watched_before_starvation_is_named() {
    let cfg = DetectorConfig::default();
    let mut rows = vec![
        "| run | job | label | stalls shown after s | named after s | ticks shown | shown or hidden |".to_string(),
        "|---|---|---|---|---|---|---|".to_string(),
    ];
    let mut errors = Vec::new();
    for run in [
        RUN1, RUN2, RUN6, RUN7, RUN8, RUN9, RUN10, RUN11, RUN12, RUN13, RUN14, RUN15,
    ] {
        for label in labels(run) {
            let path = data_of(run).join(format!("{}.ndjson.zst", label.name));
            let Ok(mut reader) = RecordingReader::open(&path) else {
                continue;
            };
            let config = EngineConfig {
                interval_s: 0.25,
                retention_s: cfg.window_s + 30.0,
                detector: cfg.clone(),
            };
            let mut engine = Engine::new(reader.system().clone(), config);
            let begin = label.onset.unwrap_or(label.start);
            let (mut first, mut named, mut shown, mut ticks) = (None, None, 0usize, 0usize);
            let (mut toggles, mut was) = (0usize, false);
            while let Some(s) = reader.next_sample() {
                let t = s.t;
                engine.ingest(s);
                let d = engine.detector();
                if t < label.start || label.end.is_some_and(|e| t > e) {
                    continue;
                }
                ticks += 1;
                toggles += usize::from(d.watch(0).is_some() != was);
                was = d.watch(0).is_some();
                if let Some(w) = d.watch(0) {
                    shown += 1;
                    if t >= begin {
                        first.get_or_insert(t - begin);
                    }
                    if d.active().iter().any(|f| f.severity >= Severity::Warn) {
                        errors.push(format!("{run} {}: {w:?} beside a finding", label.name));
                    }
                }
                if t >= begin && STARVING_KINDS.contains(&d.verdict(0)) {
                    named.get_or_insert(t - begin);
                }
            }
            let share = shown as f64 / ticks.max(1) as f64;
            // It does not flicker: shown and hidden at most three times a job (a checkpoint
            // cadence's pauses enter and leave the span before the cadence is named).
            if toggles > 6 {
                errors.push(format!(
                    "{run} {}: shown or hidden {toggles} times",
                    label.name
                ));
            }
            if label.name == "healthy" && share > 0.05 {
                errors.push(format!(
                    "{run} healthy: stalls shown on {:.0}% of ticks",
                    100.0 * share
                ));
            }
            let secs = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.1}"));
            rows.push(format!(
                "| {run} | {} | {} | {} | {} | {:.0}% | {toggles} |",
                label.name,
                label.verdict,
                secs(first),
                secs(named),
                100.0 * share
            ));
        }
    }
    println!("{}", rows.join("\n"));
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}
