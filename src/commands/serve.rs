//! `gpulse serve [--listen ADDR]`: sample and serve Prometheus metrics until Ctrl-C or SIGTERM.

use std::net::SocketAddr;
use std::process::ExitCode;

use super::{or_exit, runtime, say, settings, start_live, CommandResult};
use crate::cli::GlobalArgs;
use crate::output::exporter::spawn_server_showing;

pub fn run(global: &GlobalArgs, listen: Option<SocketAddr>) -> CommandResult {
    let settings = or_exit!(settings(global, false));
    let live = or_exit!(start_live(&settings, Some("serve")));
    let addr = listen.unwrap_or(settings.exporter_listen);
    let rt = runtime()?;
    let show = settings.show_filter();
    let rx = live.snapshots.clone();
    let served: anyhow::Result<()> = rt.block_on(async move {
        let (bound, server) = spawn_server_showing(addr, rx, show).await.map_err(|e| {
            anyhow::anyhow!("cannot listen on '{addr}': {e}; pick a free port or another address")
        })?;
        say!("gpulse: serving http://{bound}/metrics");
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        server.abort();
        Ok(())
    });
    live.stop();
    rt.shutdown_timeout(std::time::Duration::from_millis(200));
    served.map(|()| ExitCode::SUCCESS)
}
