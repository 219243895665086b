//! What the two exporter examples share: snapshots of 8 simulated H200s, one every 250 ms,
//! the address and the web configuration file from the command line.

use std::sync::Arc;
use std::time::Duration;

use gpulse::backend::sim::{SimBackend, SimConfig};
use gpulse::backend::{Backend, DeviceSampler};
use gpulse::engine::{Engine, EngineConfig, Snapshot};
use gpulse::model::Sample;
use tokio::sync::watch;

/// Start sampling on a thread of its own; the receiver of its snapshots.
pub fn start() -> watch::Receiver<Arc<Snapshot>> {
    let cfg = SimConfig {
        gpus: 8,
        start: Some(gpulse::clock::now()),
        ..Default::default()
    };
    let system = SimBackend::new(cfg.clone()).system().clone();
    let mut devices = SimBackend::devices_for(&cfg);
    let mut engine = Engine::new(system, EngineConfig::default());
    let (tx, rx) = watch::channel(engine.snapshot());
    std::thread::spawn(move || loop {
        let t = gpulse::clock::now();
        let gpus = devices
            .iter_mut()
            .filter_map(|d| d.sample(t).ok())
            .collect();
        engine.ingest(Sample {
            t,
            gpus,
            ..Default::default()
        });
        if tx.send(engine.snapshot()).is_err() {
            return;
        }
        std::thread::sleep(Duration::from_millis(250));
    });
    rx
}

/// The address from the first argument, else 127.0.0.1:9400.
pub fn listen_address() -> std::net::SocketAddr {
    std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| std::net::SocketAddr::from(([127, 0, 0, 1], 9400)))
}

/// TLS and users from the web configuration file named by the second argument, if any.
pub fn web_security() -> std::io::Result<gpulse::output::web_config::WebSecurity> {
    match std::env::args().nth(2) {
        Some(path) => gpulse::output::web_config::load(std::path::Path::new(&path))
            .map_err(std::io::Error::other),
        None => Ok(Default::default()),
    }
}
