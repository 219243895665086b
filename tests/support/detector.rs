//! The detector over the recorded jobs: each input through `analyze` as `gpulse analyze` reads
//! it, a recording replayed tick by tick through the engine as the dashboard runs it, and the
//! findings a recording carries as the live detector raised them.

use std::path::{Path, PathBuf};

use super::api::{
    analyze, analyze_path, DetectorConfig, Engine, EngineConfig, Finding, FindingEvent,
    FindingKind, RecordingReader, Report, SampleSource,
};
use super::labels::{Folder, Input, Label};
use super::traces::PollerSource;

/// The kinds that name a starving job: with a period, or without one.
pub const STARVING: [FindingKind; 2] = [FindingKind::InputStarvation, FindingKind::ErraticStalls];

/// `input` of `folder` through `analyze`: the recording and the nvidia-smi log as
/// `gpulse analyze` reads them, the poller's trace as 250 ms ticks with its driver windows.
pub fn analyze_input(folder: &Folder, input: Input, cfg: &DetectorConfig) -> Report {
    let path = folder
        .input(input)
        .unwrap_or_else(|| panic!("{}: no {}", folder.name, input.file()));
    match input {
        Input::Poller => analyze(&folder.name, &mut PollerSource::open(&path), cfg),
        _ => analyze_path(&path, None, cfg).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    }
}

/// The engine the dashboard runs: 250 ms ticks, history for the window and 30 s more.
pub fn engine_config(cfg: &DetectorConfig) -> EngineConfig {
    EngineConfig {
        interval_s: 0.25,
        retention_s: cfg.window_s + 30.0,
        detector: cfg.clone(),
    }
}

/// Replay `paths` (recordings, in order) through one engine: the verdict of GPU 0 at every tick,
/// and every finding raised (as it ended, or as it stands at the end).
pub fn replay(cfg: &DetectorConfig, paths: &[PathBuf]) -> (Vec<(f64, FindingKind)>, Vec<Finding>) {
    let open =
        |p: &Path| RecordingReader::open(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut engine = Engine::new(open(&paths[0]).system().clone(), engine_config(cfg));
    let (mut verdicts, mut found) = (Vec::new(), Vec::new());
    for p in paths {
        let mut reader = open(p);
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

/// Every finding the live detector raised into a recording, as first raised and as last seen.
pub fn live_findings(path: &Path) -> Vec<(Finding, Finding)> {
    let records = RecordingReader::open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .read_all();
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

/// The starvation and erratic-stalls findings of `found` raised while the job `label` ran.
pub fn stalls_named_during<'a>(found: &'a [Finding], label: &Label) -> Vec<&'a Finding> {
    let end = label.end();
    found
        .iter()
        .filter(|f| {
            STARVING.contains(&f.kind) && f.detected_at >= label.start && f.detected_at <= end
        })
        .collect()
}

/// The starvation and erratic-stalls findings of `found` that overlap the job `label`'s window.
pub fn stalls_overlapping<'a>(found: &'a [Finding], label: &Label) -> Vec<&'a Finding> {
    let end = label.end();
    found
        .iter()
        .filter(|f| {
            STARVING.contains(&f.kind) && f.start < end && f.end.is_none_or(|e| e > label.start)
        })
        .collect()
}
