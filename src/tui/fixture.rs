//! Simulated GPUs driven through the real engine on a virtual clock, for screen tests and
//! benchmarks: the same snapshots the live pipeline publishes, without threads or wall time.

use std::sync::Arc;

use crate::backend::sim::{Scenario, SimBackend, SimConfig};
use crate::backend::{Backend, DeviceSampler};
use crate::engine::{Engine, EngineConfig, Snapshot};
use crate::model::{GpuReading, HostDetail, HostReading, Sample, UnixTime};

/// Where the virtual clock starts (2026-01-01 12:00:00 UTC).
pub const T0: UnixTime = 1_767_268_800.0;

/// Simulated GPUs and the engine they feed, on a virtual clock.
pub struct SimRun {
    pub engine: Engine,
    devices: Vec<crate::backend::sim::SimDevice>,
    pub t: UnixTime,
    pub interval_s: f64,
    /// Host figures every later tick carries (none by default: the host is not read).
    pub host: HostReading,
    pub host_detail: HostDetail,
}

impl SimRun {
    /// `gpus` simulated GPUs running `scenario` (seed 1, host "testhost"), sampled every 250 ms.
    pub fn new(scenario: Scenario, gpus: u32) -> SimRun {
        let cfg = SimConfig {
            scenario,
            gpus,
            seed: 1,
            start: Some(T0),
            hostname: Some("testhost".into()),
        };
        let system = SimBackend::new(cfg.clone()).system().clone();
        let devices = SimBackend::devices_for(&cfg);
        SimRun {
            engine: Engine::new(system, EngineConfig::default()),
            devices,
            t: T0,
            interval_s: 0.25,
            host: HostReading::default(),
            host_detail: HostDetail::default(),
        }
    }

    /// Sample every GPU at each tick for `seconds` more.
    pub fn advance(&mut self, seconds: f64) {
        let ticks = (seconds / self.interval_s).round() as u64;
        for _ in 0..ticks {
            self.t += self.interval_s;
            let t = self.t;
            let gpus: Vec<GpuReading> = self
                .devices
                .iter_mut()
                .filter_map(|d| d.sample(t).ok())
                .collect();
            self.engine.ingest(Sample {
                t,
                gpus,
                host: self.host,
                host_detail: self.host_detail.clone(),
                ..Default::default()
            });
        }
    }

    /// Ingest one tick in which only the given readings arrived (e.g. a GPU stale or lost).
    pub fn ingest_tick(
        &mut self,
        readings: impl FnOnce(UnixTime, Vec<GpuReading>) -> Vec<GpuReading>,
    ) {
        self.t += self.interval_s;
        let t = self.t;
        let gpus: Vec<GpuReading> = self
            .devices
            .iter_mut()
            .filter_map(|d| d.sample(t).ok())
            .collect();
        let gpus = readings(t, gpus);
        self.engine.ingest(Sample {
            t,
            gpus,
            host: self.host,
            host_detail: self.host_detail.clone(),
            ..Default::default()
        });
    }

    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.engine.snapshot()
    }
}

/// The whole screen drawn afresh for `app` at `w`×`h` (every part, nothing kept): what a
/// terminal drawn in parts must hold.
pub fn whole_screen(app: &super::App, w: u16, h: u16) -> ratatui::buffer::Buffer {
    let area = ratatui::layout::Rect::new(0, 0, w, h);
    let mut buf = ratatui::buffer::Buffer::empty(area);
    super::render(area, &mut buf, app, app.displayed());
    buf
}
