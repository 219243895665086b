//! Every labelled H200 job (a folder under `tests/data/h200` with its `labels.json`, described in
//! `tests/data/README.md`) through the detector from each input its folder holds: the gpulse
//! recording and the nvidia-smi log as `gpulse analyze` reads them, the 50 ms NVML poller's trace
//! as 250 ms ticks with their driver windows. Each field of the label is checked against what the
//! detector found. With `--nocapture` the tests print one row per check (job, input, check,
//! expected, found, seconds from the job's onset to the finding that names it: its first stall
//! finding, or its first finding of the label's verdict): the calibration table. A failure names
//! the job's folder, the input and the label field.
//!
//! `cargo test --test detector_labelled_recordings -- --nocapture`

mod support;

use support::api::{DetectorConfig, Engine, FindingKind, RecordingReader, SampleSource, Severity};
use support::detector::{analyze_input, engine_config, STARVING};
use support::labels::{folders, Folder, Input, Label};
use support::traces::true_period;

#[path = "detector_labelled_recordings/checks.rs"]
mod checks;

use checks::{check_input, Row};

#[test]
fn every_labelled_job_gets_what_its_label_allows_from_every_input() {
    let jobs: Vec<Folder> = folders().into_iter().filter(Folder::is_job).collect();
    assert!(!jobs.is_empty(), "no labelled jobs under tests/data/h200");
    let rows: Vec<Row> = in_parallel(&jobs, check_job)
        .into_iter()
        .flatten()
        .collect();
    println!("{}", Row::table(&rows));
    let failed: Vec<String> = rows.iter().filter(|r| !r.ok).map(Row::error).collect();
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// Every check of one job, from every input its folder holds.
fn check_job(folder: &Folder) -> Vec<Row> {
    let label = folder.label();
    assert!(
        label.verdict.is_some(),
        "{}: labels.json: no verdict",
        folder.name
    );
    assert!(
        !label.why.trim().is_empty(),
        "{}: labels.json: no why",
        folder.name
    );
    let inputs: Vec<Input> = Input::ALL
        .into_iter()
        .filter(|i| folder.input(*i).is_some())
        .collect();
    assert!(!inputs.is_empty(), "{}: no input to analyze", folder.name);
    let cfg = DetectorConfig::default();
    let truth = true_period(folder, label);
    let mut rows = Vec::new();
    if let Some([lo, hi]) = label.true_period_between_s {
        rows.push(Row::new(
            folder,
            "-",
            "true_period_between_s",
            format!("{lo:.2}..{hi:.2} s"),
            fmt_s(truth),
            None,
            truth.is_some_and(|t| (lo..hi).contains(&t)),
        ));
    }
    for input in inputs {
        let report = analyze_input(folder, input, &cfg);
        rows.extend(check_input(folder, label, input, &report, truth));
    }
    rows
}

/// `f` over `items` on as many threads as the machine has cores, the results in order.
fn in_parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut out: Vec<(usize, R)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        done.push((i, f(item)));
                    }
                    done
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a checking thread"))
            .collect()
    });
    out.sort_by_key(|(i, _)| *i);
    out.into_iter().map(|(_, r)| r).collect()
}

fn fmt_s(x: Option<f64>) -> String {
    x.map_or("-".to_string(), |x| format!("{x:.2} s"))
}

/// A recording of several jobs lists each job by its own folder, with the same window.
#[test]
fn every_job_of_a_whole_recording_has_its_own_folder_with_the_same_window() {
    let all = folders();
    let whole: Vec<&Folder> = all.iter().filter(|f| !f.is_job()).collect();
    assert!(!whole.is_empty(), "no recordings of several jobs");
    for folder in whole {
        assert!(folder.input(Input::Recording).is_some(), "{}", folder.name);
        for entry in &folder.labels {
            let own = all
                .iter()
                .find(|f| f.name == entry.job && f.is_job())
                .unwrap_or_else(|| panic!("{}: {} has no folder", folder.name, entry.job));
            let l = own.label();
            let window = |l: &Label| (l.start, l.end, l.onset, l.recovered);
            assert_eq!(
                window(entry),
                window(l),
                "{}: {}: start, end, onset, recovered",
                folder.name,
                entry.job
            );
        }
    }
}

/// Shown and hidden at most this many times a job: three times each (a checkpoint cadence's
/// pauses enter and leave the watch's span before the cadence is named).
const WATCH_CHANGES_AT_MOST: usize = 6;

/// Every labelled recording replayed tick by tick as the dashboard runs it: how soon a starving
/// job's stalls are shown (the snapshot's `watch`, while the GPU reads stalling) against when it
/// is named (within `watched_within_s` of onset where the label bounds it), and how often a job
/// labelled without stalls shows them. The watch never shows beside a finding, does not flicker,
/// and on a steady job stays as rare as its label says (`watch_share_at_most`).
#[test]
fn stalls_are_watched_before_starvation_is_named() {
    let jobs: Vec<Folder> = folders()
        .into_iter()
        .filter(|f| f.is_job() && f.input(Input::Recording).is_some())
        .collect();
    let results = in_parallel(&jobs, watch_job);
    let mut rows = vec![
        "| job | label | stalls shown after s | named after s | ticks shown | shown or hidden |"
            .to_string(),
        "|---|---|---|---|---|---|".to_string(),
    ];
    let mut errors = Vec::new();
    for (row, errs) in results {
        rows.push(row);
        errors.extend(errs);
    }
    println!("{}", rows.join("\n"));
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// One job's recording through the engine: its row of the watch table and its errors.
fn watch_job(folder: &Folder) -> (String, Vec<String>) {
    let label = folder.label();
    let cfg = DetectorConfig::default();
    let mut reader = RecordingReader::open(&folder.recording()).expect("recording");
    let mut engine = Engine::new(reader.system().clone(), engine_config(&cfg));
    let begin = label.begin();
    let (mut first, mut named, mut shown, mut ticks) = (None, None, 0usize, 0usize);
    let (mut toggles, mut was) = (0usize, false);
    let mut errors = Vec::new();
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
                errors.push(format!("{}: {w:?} beside a finding", folder.name));
            }
        }
        if t >= begin && STARVING.contains(&d.verdict(0)) {
            named.get_or_insert(t - begin);
        }
    }
    let share = shown as f64 / ticks.max(1) as f64;
    if let Some(within) = label.watched_within_s {
        if first.is_none_or(|f| f > within) {
            errors.push(format!(
                "{}: watched_within_s: stalls first shown after {first:?} s, at most {within:.1} s",
                folder.name
            ));
        }
    }
    if toggles > WATCH_CHANGES_AT_MOST {
        errors.push(format!("{}: shown or hidden {toggles} times", folder.name));
    }
    if let Some(most) = label.watch_share_at_most.filter(|m| share > *m) {
        errors.push(format!(
            "{}: watch_share_at_most: stalls shown on {:.0}% of ticks, at most {:.0}%",
            folder.name,
            100.0 * share,
            100.0 * most
        ));
    }
    let secs = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.1}"));
    let verdict = label.verdict.map_or("-", FindingKind::as_str);
    let row = format!(
        "| {} | {verdict} | {} | {} | {:.0}% | {toggles} |",
        folder.name,
        secs(first),
        secs(named),
        100.0 * share
    );
    (row, errors)
}
