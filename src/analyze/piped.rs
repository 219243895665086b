//! Reading a file on its own thread while the engine analyses what was read: the reader (parsing
//! text) and the detector then each have a core.

use std::sync::mpsc::sync_channel;

use super::{analyze, analyze_samples, Report};
use crate::backend::SampleSource;
use crate::detector::DetectorConfig;
use crate::model::Sample;

/// Samples handed over at once: one hand-over per batch, not per sample.
const BATCH: usize = 256;
/// Batches read ahead of the engine at most: the memory in flight stays bounded whatever the
/// length of the file.
const BATCHES_AHEAD: usize = 4;

/// [`analyze`], the source read on a thread of its own (on one thread when none can start).
pub fn analyze_piped(
    file: &str,
    source: &mut (dyn SampleSource + Send),
    detector: &DetectorConfig,
) -> Report {
    let system = source.system().clone();
    let piped = std::thread::scope(|scope| {
        let (tx, rx) = sync_channel::<Vec<Sample>>(BATCHES_AHEAD);
        let reader = &mut *source;
        let spawned = std::thread::Builder::new()
            .name("gpulse-reader".into())
            .spawn_scoped(scope, move || loop {
                let batch: Vec<Sample> = std::iter::from_fn(|| reader.next_sample())
                    .take(BATCH)
                    .collect();
                // An empty batch is the end; a closed channel, an engine that stopped.
                if batch.is_empty() || tx.send(batch).is_err() {
                    break;
                }
            });
        spawned.ok().map(|_| {
            let mut samples = rx.into_iter().flatten();
            analyze_samples(file, system, &mut samples, detector)
        })
    });
    match piped {
        Some(mut report) => {
            report.assumptions = source.assumptions();
            report.warnings = source.warnings();
            report
        }
        None => analyze(file, source, detector),
    }
}
