//! Feeding every GPU's ledger from the engine: each tick's readings under what the snapshot
//! showed, and the ledger as the front ends read it.

use std::sync::Arc;

use crate::ledger::{GpuLedger, TickInput};
use crate::model::{GpuStatus, Metrics, Sample};

use super::Engine;

impl Engine {
    /// Book the interval since the previous sample in every answering GPU's ledger, under what
    /// the snapshot showed during it, and take this tick's verdict and findings.
    pub(super) fn update_ledgers(&mut self, sample: &Sample) {
        let findings = self.detector.active();
        for reading in &sample.gpus {
            let Some(pos) = self.gpus.iter().position(|g| g.info.index == reading.index) else {
                continue;
            };
            let g = &mut self.gpus[pos];
            if self.mig.has(reading.index) {
                // A MIG GPU books its time and energy; its instances book what they lose.
                let metrics = Metrics {
                    power_w: reading.metrics.power_w,
                    energy_j: reading.metrics.energy_j,
                    ..Default::default()
                };
                let input = TickInput {
                    t: sample.t,
                    gpu: reading.index,
                    answering: !matches!(reading.status, GpuStatus::Lost { .. }),
                    metrics: &metrics,
                    processes: &[],
                    verdict: crate::model::FindingKind::Idle,
                    full_level: None,
                    findings: &[],
                    xids: &reading.xids,
                    sm_clock_max_mhz: None,
                };
                self.ledgers[pos].tick(self.mig.own_ledger(reading.index), &input);
                if let Some(l) = self.mig.composed_ledger(reading.index) {
                    g.ledger = Arc::new(l);
                }
                continue;
            }
            let input = TickInput {
                t: sample.t,
                gpu: reading.index,
                answering: !matches!(reading.status, GpuStatus::Lost { .. }),
                metrics: &reading.metrics,
                // Kept while the GPU is stale, cleared when it is lost.
                processes: &g.processes,
                verdict: self.detector.verdict(pos),
                full_level: self.detector.full_level(pos),
                findings,
                xids: &reading.xids,
                sm_clock_max_mhz: g.info.sm_clock_max_mhz,
            };
            self.ledgers[pos].tick(&mut g.ledger, &input);
        }
    }

    /// The ledger of the GPU at `pos` (in the system's device order).
    pub fn ledger(&self, pos: usize) -> Option<&GpuLedger> {
        self.gpus.get(pos).map(|g| g.ledger.as_ref())
    }
}
