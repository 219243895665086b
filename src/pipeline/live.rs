//! The live pipeline: a backend's GPUs sampled on their threads, fed to the engine, published as
//! snapshots on a watch channel that any number of front ends read.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use tokio::sync::watch;

use crate::backend::Backend;
use crate::engine::{Engine, EngineConfig, Snapshot};
use crate::host::HostProbe;
use crate::model::SystemInfo;
use crate::sampler::Sampler;

/// A running pipeline. Dropping it stops the sampler at its next tick.
pub struct Live {
    pub snapshots: watch::Receiver<Arc<Snapshot>>,
    pub system: Arc<SystemInfo>,
    stop: Arc<AtomicBool>,
}

impl Live {
    /// Start sampling `backend` on its own threads.
    pub fn start(mut backend: Box<dyn Backend>, config: EngineConfig, host: HostProbe) -> Live {
        let system = backend.system().clone();
        let devices = backend.take_devices();
        let mut engine = Engine::new(system, config.clone());
        let (tx, rx) = watch::channel(engine.snapshot());
        let stop = Arc::new(AtomicBool::new(false));
        let stop_thread = stop.clone();
        let system = engine.system().clone();
        let interval = config.interval_s;
        let spawned = thread::Builder::new()
            .name("gpulse-sampler".into())
            .spawn(move || {
                // Keep the backend (and its library handle) alive as long as its samplers run.
                let _backend = backend;
                let sampler = Sampler::new(devices, host);
                sampler.run(interval, |sample| {
                    engine.ingest(sample);
                    let keep = tx.send(engine.snapshot()).is_ok();
                    keep && !stop_thread.load(Ordering::Relaxed)
                });
            });
        if let Err(e) = spawned {
            tracing::error!("could not start the sampler thread: {e}");
        }
        Live {
            snapshots: rx,
            system,
            stop,
        }
    }

    /// A handle over a pipeline started elsewhere (e.g. a replay), stopped through `stop`.
    pub fn from_parts(
        snapshots: watch::Receiver<Arc<Snapshot>>,
        system: Arc<SystemInfo>,
        stop: Arc<AtomicBool>,
    ) -> Live {
        Live {
            snapshots,
            system,
            stop,
        }
    }

    /// Stop sampling at the next tick.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.stop();
    }
}
