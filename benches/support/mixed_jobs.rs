//! The synthetic jobs the detector and ledger benches share: per GPU, in turn, a starving loader
//! (1.7 s period, 60% lost), a steady full job, a host-bound plateau at 15% and a checkpoint-like
//! pause every 12 s, read at 250 ms with every 200 ms driver window.

use gpulse::detector::synth::{Polling, SynthJob};
use gpulse::model::Sample;

/// `gpus` GPUs' samples over `secs` seconds from `t0`, the job of GPU `i` chosen by `i % 4`.
pub fn mixed_jobs(gpus: usize, secs: f64, t0: f64) -> Vec<Vec<Sample>> {
    (0..gpus)
        .map(|i| {
            let job = match i % 4 {
                0 => SynthJob::periodic(1.7, 0.6, 0.05, i as u64, secs),
                1 => SynthJob::steady(1.0, secs),
                2 => SynthJob::steady(0.15, secs),
                _ => SynthJob::periodic(12.0, 0.2, 0.05, i as u64, secs),
            };
            job.samples(t0, 0.25, Polling::EveryWindow)
        })
        .collect()
}
