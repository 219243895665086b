//! The detector on the second set of labelled H200 data: scenarios recorded by `gpulse record`
//! itself beside real PyTorch jobs (`tests/data/h200-2026-12-02-gpulse/`), each as a recording
//! slice (driver windows, SM activity, PCIe, processes) and as an `nvidia-smi -lms 250` log.
//!
//! `cargo test --test detector_h200_gpulse -- --nocapture` prints the results table.

use std::path::{Path, PathBuf};

use gpulse::analyze::{analyze_path, Report};
use gpulse::backend::replay::RecordingReader;
use gpulse::backend::SampleSource;
use gpulse::detector::DetectorConfig;
use gpulse::model::FindingKind;

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/h200-2026-12-02-gpulse")
}

#[derive(Debug)]
struct Label {
    name: String,
    verdict: FindingKind,
    also: Vec<FindingKind>,
    not: Vec<FindingKind>,
    start: f64,
    onset: Option<f64>,
    why: String,
}

fn labels() -> Vec<Label> {
    let text = std::fs::read_to_string(data().join("labels.json")).expect("labels.json");
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
            onset: l.get("onset").and_then(|o| o.as_f64()),
            why: l["why"].as_str().unwrap_or("").to_string(),
        })
        .collect();
    out.sort_by(|a, b| a.start.total_cmp(&b.start));
    out
}

/// The true burst period, from the recording's 200 ms driver windows: the median spacing of
/// burst starts (a window of at least a fifth of the peak after at least 0.5 s of windows below a
/// twentieth of it). `None` with fewer than four spacings.
fn true_period(name: &str) -> Option<f64> {
    let mut reader =
        RecordingReader::open(&data().join(format!("{name}.ndjson.zst"))).expect("recording");
    let mut windows = Vec::new();
    while let Some(s) = reader.next_sample() {
        windows.extend(s.gpus[0].util_windows.iter().map(|w| (w.t, w.util)));
    }
    let peak = windows.iter().map(|w| w.1).fold(0.0, f64::max);
    let mut starts = Vec::new();
    let mut quiet_since: Option<f64> = None;
    for &(t, u) in &windows {
        if u < peak / 20.0 {
            quiet_since.get_or_insert(t);
        } else {
            if u >= peak / 5.0 && quiet_since.is_some_and(|q| t - q >= 0.5) {
                starts.push(t);
            }
            quiet_since = None;
        }
    }
    let mut sp: Vec<f64> = starts.windows(2).map(|w| w[1] - w[0]).collect();
    if sp.len() < 4 {
        return None;
    }
    sp.sort_by(|a, b| a.total_cmp(b));
    Some(sp[sp.len() / 2])
}

const STARVING_KINDS: [FindingKind; 2] = [FindingKind::InputStarvation, FindingKind::ErraticStalls];

fn check(label: &Label, r: &Report, input: &str, rows: &mut Vec<String>) -> Vec<String> {
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
    let truth = true_period(&label.name);
    // A job labelled starving is flagged within 15 s of its start (or onset), or about four
    // periods for long periods (a period needs cycles to be seen), whenever the detector names it
    // at all; a miss is allowed only where the label accepts it (`also`). An nvidia-smi log keeps
    // only the latest 200 ms window of each 250 ms poll and so misses some of the short bursts of
    // a long-period job: it gets six periods.
    let periods = if input == "smi.csv" { 6.0 } else { 4.5 };
    let limit = truth.map_or(15.0, |p| (periods * p).max(15.0));
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

#[test]
fn every_scenario_gets_an_accepted_verdict_from_the_recording_and_the_csv_log() {
    let cfg = DetectorConfig::default();
    let mut rows = vec![
        "| scenario | input | expected | got | detected after s | period s | true period s | findings |".to_string(),
        "|---|---|---|---|---|---|---|---|".to_string(),
    ];
    let mut errors = Vec::new();
    let all = labels();
    assert_eq!(all.len(), 9, "labels: {all:?}");
    for label in &all {
        assert!(!label.why.is_empty(), "{} has no why", label.name);
        for input in ["ndjson.zst", "smi.csv"] {
            let path = data().join(format!("{}.{input}", label.name));
            let r = analyze_path(&path, None, &cfg).expect("analyze");
            assert!(
                r.warnings.is_empty(),
                "{}: {:?}",
                path.display(),
                r.warnings
            );
            assert!(r.samples > 80, "{}: {} samples", path.display(), r.samples);
            errors.extend(check(label, &r, input, &mut rows));
        }
    }
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
