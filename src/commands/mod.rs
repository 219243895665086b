//! One file per subcommand: the only layer that knows several front ends, opens backends and
//! decides exit statuses. `main` parses the command line and calls one `run` here.
//!
//! Exit statuses: 0 success, 1 a failure while running (printed as `gpulse: …`), 2 a usage,
//! config or environment error found before anything ran (no GPU, a bad config file, a port in
//! use).

pub mod analyze;
pub mod completions;
pub mod config;
pub mod dashboard;
pub mod doctor;
pub mod fleet;
pub mod record;
pub mod replay;
pub mod serve;
pub mod snapshot;
pub mod stream;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::backend;
use crate::cli::GlobalArgs;
use crate::config::Settings;
use crate::engine::Snapshot;
use crate::host::HostProbe;
use crate::output::exporter::{serve_in_background, BackgroundServer, ServeOptions};
use crate::output::http_server::Limits;
use crate::output::web_config::{self, WebSecurity};
use crate::pipeline::Live;

/// Exit status of usage, config and environment errors.
pub const USAGE_ERROR: u8 = 2;

/// A command's result: an exit status, or an error printed as `gpulse: …` with status 1.
pub type CommandResult = anyhow::Result<ExitCode>;

/// Settings from the command line over the config file; a bad file is printed and becomes
/// [`USAGE_ERROR`]. `demo` forces the simulated backend.
pub fn settings(global: &GlobalArgs, demo: bool) -> Result<Settings, ExitCode> {
    Settings::resolve(&global.overrides(), demo).map_err(|e| {
        eprintln!("gpulse: {e}");
        ExitCode::from(USAGE_ERROR)
    })
}

/// Open the configured backend and start sampling it; no GPU is printed (it says what was tried
/// and what to do) and becomes [`USAGE_ERROR`].
pub fn start_live(settings: &Settings) -> Result<Live, ExitCode> {
    let backend = backend::open(settings.backend, &settings.sim).map_err(|e| {
        eprintln!("{e}");
        ExitCode::from(USAGE_ERROR)
    })?;
    let host = HostProbe::for_backend(&backend.system().backend);
    Ok(Live::start(backend, settings.engine.clone(), host))
}

/// `--serve ADDR`: the exporter beside another command, on a thread of its own. A port that
/// cannot be bound is printed and becomes [`USAGE_ERROR`].
pub fn serve_beside(
    settings: &Settings,
    snapshots: &watch::Receiver<Arc<Snapshot>>,
) -> Result<Option<BackgroundServer>, ExitCode> {
    let Some(addr) = settings.serve else {
        return Ok(None);
    };
    let options = serve_options(settings)?;
    serve_in_background(addr, snapshots.clone(), options)
        .map(Some)
        .map_err(|e| {
            eprintln!("gpulse: {e}");
            ExitCode::from(USAGE_ERROR)
        })
}

/// The exporter's options from the settings: the GPUs shown, and TLS and users from the web
/// configuration file, read and checked now; a bad file is printed and becomes [`USAGE_ERROR`].
pub fn serve_options(settings: &Settings) -> Result<ServeOptions, ExitCode> {
    let security = match &settings.web_config_file {
        Some(path) => web_config::load(path).map_err(|e| {
            eprintln!("gpulse: {e}");
            ExitCode::from(USAGE_ERROR)
        })?,
        None => WebSecurity::default(),
    };
    Ok(ServeOptions {
        show: settings.show_filter(),
        security,
        limits: Limits::default(),
    })
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

/// How long to wait for `ticks` samples before saying the backend does not answer.
pub fn patience(settings: &Settings, ticks: u64) -> Duration {
    Duration::from_secs_f64(10.0 + settings.engine.interval_s * ticks as f64 * 2.0)
}

/// Unwrap a step that already printed its error and chose an exit status.
macro_rules! or_exit {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(code) => return Ok(code),
        }
    };
}
pub(crate) use or_exit;
