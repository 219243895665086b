//! Headless front ends: the snapshot table and JSON, the NDJSON stream, recordings and the
//! Prometheus exporter. Each reads the engine's [`Snapshot`]s from the watch channel of a
//! [`Live`] pipeline; none talks to a GPU library itself.

pub mod cli;
pub mod exporter;
pub mod http;
pub mod json;
pub mod prometheus;
pub mod record;
pub mod stream;
pub mod table;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::backend::{self, NoGpuError};
use crate::config::Settings;
use crate::engine::Snapshot;
use crate::host::HostProbe;
use crate::live::Live;

/// Ticks to wait before the first snapshot is printed: rates (PCIe, CPU) need two readings, and
/// the driver's utilization window needs a tick to complete.
pub const WARMUP_TICKS: u64 = 3;

/// Open the configured backend and start sampling it.
pub fn start_live(settings: &Settings) -> Result<Live, NoGpuError> {
    let backend = backend::open(settings.backend, &settings.sim)?;
    Ok(Live::start(
        backend,
        settings.engine.clone(),
        HostProbe::new(),
    ))
}

/// Whether GPU `index` is among those the settings show.
pub fn shows(settings: &Settings, index: u32) -> bool {
    settings
        .gpu_filter
        .as_ref()
        .is_none_or(|only| only.contains(&index))
}

/// The GPU filter of the settings, shareable with the exporter's threads.
pub fn show_filter(settings: &Settings) -> Arc<dyn Fn(u32) -> bool + Send + Sync> {
    let filter = settings.gpu_filter.clone();
    Arc::new(move |i| filter.as_ref().is_none_or(|f| f.contains(&i)))
}

/// A runtime for the headless commands (the exporter's connections run on its workers).
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("gpulse-io")
        .enable_all()
        .build()
}

/// Wait until a snapshot with at least `seq` samples is published, or `timeout` passes.
pub async fn wait_for_seq(
    rx: &mut watch::Receiver<Arc<Snapshot>>,
    seq: u64,
    timeout: Duration,
) -> Option<Arc<Snapshot>> {
    let wait = async {
        loop {
            let s = rx.borrow_and_update().clone();
            if s.seq >= seq {
                return Some(s);
            }
            if rx.changed().await.is_err() {
                return None;
            }
        }
    };
    tokio::time::timeout(timeout, wait).await.ok().flatten()
}
