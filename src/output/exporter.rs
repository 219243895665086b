//! Running the exporter: on the caller's runtime ([`spawn_server`], as `gpulse serve` does), or on
//! a thread of its own next to another front end ([`serve_in_background`], for `--serve`).

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::watch;

use crate::engine::Snapshot;

/// Start the exporter on `addr` on the current tokio runtime; returns the bound address.
///
/// Serves `/metrics`, `/healthz` and `/` from the newest snapshot on `snapshots`. A
/// non-loopback address is served as asked, with a warning (logged: stderr for a headless
/// command, the event panel for the dashboard).
pub async fn spawn_server(
    addr: SocketAddr,
    snapshots: watch::Receiver<Arc<Snapshot>>,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    spawn_server_showing(addr, snapshots, Arc::new(|_| true)).await
}

/// [`spawn_server`] exporting only the GPUs `show` accepts.
pub async fn spawn_server_showing(
    addr: SocketAddr,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    show: Arc<dyn Fn(u32) -> bool + Send + Sync>,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    if !addr.ip().is_loopback() {
        tracing::warn!("serving metrics on {addr}, reachable from other machines (use 127.0.0.1 to keep it local)");
    }
    crate::output::http_server::serve(
        addr,
        snapshots,
        show,
        crate::output::http_server::Limits::default(),
    )
    .await
}

/// An exporter running on its own thread and runtime; dropping it stops the server.
pub struct BackgroundServer {
    pub addr: SocketAddr,
    _stop: tokio::sync::oneshot::Sender<()>,
}

/// Serve `snapshots` on `addr` from a thread of its own, next to any front end (`--serve`).
pub fn serve_in_background(
    addr: SocketAddr,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    show: Arc<dyn Fn(u32) -> bool + Send + Sync>,
) -> Result<BackgroundServer, std::io::Error> {
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (bound_tx, bound_rx) = std::sync::mpsc::channel::<std::io::Result<SocketAddr>>();
    std::thread::Builder::new()
        .name("gpulse-exporter".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = bound_tx.send(Err(e));
                    return;
                }
            };
            rt.block_on(async move {
                match spawn_server_showing(addr, snapshots, show).await {
                    Ok((bound, task)) => {
                        let _ = bound_tx.send(Ok(bound));
                        let _ = stop_rx.await;
                        task.abort();
                    }
                    Err(e) => {
                        let _ = bound_tx.send(Err(e));
                    }
                }
            });
        })?;
    let bound = bound_rx
        .recv()
        .map_err(|_| std::io::Error::other("the exporter thread ended before listening"))?
        .map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("cannot listen on '{addr}': {e}; pick a free port or another address"),
            )
        })?;
    eprintln!("gpulse: serving http://{bound}/metrics");
    Ok(BackgroundServer {
        addr: bound,
        _stop: stop_tx,
    })
}
