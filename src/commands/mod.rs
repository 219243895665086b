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
pub mod logging;
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
        say!("gpulse: {e}");
        ExitCode::from(USAGE_ERROR)
    })
}

/// Open the configured backend and start sampling it for `command` (`None`: the dashboard); no
/// GPU is printed (what was tried, and how to run that command without a GPU) and becomes
/// [`USAGE_ERROR`].
pub fn start_live(settings: &Settings, command: Option<&str>) -> Result<Live, ExitCode> {
    let backend = backend::open(settings.backend, &settings.sim).map_err(|e| {
        say!("{e}\n{}", no_gpu_hint(command));
        ExitCode::from(USAGE_ERROR)
    })?;
    let host =
        HostProbe::for_backend(&backend.system().backend).with_devices(&backend.system().devices);
    Ok(Live::start(backend, settings.engine.clone(), host))
}

/// Headless commands, for a machine reached without a terminal.
pub const HEADLESS_COMMANDS: &str =
    "`gpulse snapshot`, `gpulse stream`, `gpulse record FILE`, `gpulse serve` or `gpulse analyze FILE`";

/// A screen (`what`: "the dashboard", ...) needs a terminal; without one, say so and what to run
/// instead, before anything is drawn: [`USAGE_ERROR`].
pub fn require_terminal(what: &str, instead: &str) -> Result<(), ExitCode> {
    match crate::tui::term::missing_terminal() {
        None => Ok(()),
        Some(why) => {
            say!(
                "gpulse: {what} needs a terminal, and {why} (over ssh, run `ssh -t`). Without a terminal, use {instead}."
            );
            Err(ExitCode::from(USAGE_ERROR))
        }
    }
}

/// What to run instead when no GPU answers: the dashboard has `demo`; a headless command runs
/// on simulated GPUs with `--backend sim`.
pub fn no_gpu_hint(command: Option<&str>) -> String {
    match command {
        None => "To see the dashboard on simulated GPUs, run `gpulse demo` (or `gpulse --backend sim`).".into(),
        Some(c) => format!(
            "To run `gpulse {c}` on simulated GPUs, add `--backend sim` (e.g. `gpulse --backend sim {c}`)."
        ),
    }
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
            say!("gpulse: {e}");
            ExitCode::from(USAGE_ERROR)
        })
}

/// Write a command's output to stdout and flush it. A reader that has gone (`gpulse man | head`)
/// is a normal end, not an error: `Ok(false)`, and the command stops quietly.
pub fn write_stdout(bytes: impl AsRef<[u8]>) -> anyhow::Result<bool> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes.as_ref()).and_then(|()| out.flush()) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(anyhow::anyhow!("cannot write to standard output: {e}")),
    }
}

/// The exporter's options from the settings: the GPUs shown, and TLS and users from the web
/// configuration file, read and checked now; a bad file is printed and becomes [`USAGE_ERROR`].
pub fn serve_options(settings: &Settings) -> Result<ServeOptions, ExitCode> {
    let security = match &settings.web_config_file {
        Some(path) => web_config::load(path).map_err(|e| {
            say!("gpulse: {e}");
            ExitCode::from(USAGE_ERROR)
        })?,
        None => WebSecurity::default(),
    };
    for w in &security.warnings {
        say!("gpulse: warning: {w}");
    }
    Ok(ServeOptions {
        show: settings.show_filter(),
        names: settings.dcgm_names,
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

/// A message on stderr, like `say!`, except that a stderr nobody reads any more
/// (`gpulse analyze FILE 2>&1 | head -1`) loses the message instead of panicking.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        // Messages quote files, servers and processes: their escapes are shown, not obeyed.
        let text = $crate::printable::lines(&format!($($arg)*));
        let _ = writeln!(std::io::stderr(), "{text}");
    }};
}
pub(crate) use say;

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
