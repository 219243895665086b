//! Running the exporter: on the caller's runtime ([`spawn_server`], as `gpulse serve` does), or on
//! a thread of its own next to another front end ([`serve_in_background`], for `--serve`).

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::watch;

use crate::engine::Snapshot;
use crate::output::http_server::{self, Limits};
use crate::output::web_config::WebSecurity;

/// How the exporter serves: which GPUs, with which TLS and users, within which limits.
#[derive(Clone)]
pub struct ServeOptions {
    /// The GPUs exported (by index).
    pub show: Arc<dyn Fn(u32) -> bool + Send + Sync>,
    /// Which of dcgm-exporter's metric names are written.
    pub names: crate::output::prometheus::DcgmNames,
    /// TLS and basic auth from the web config file (none by default).
    pub security: WebSecurity,
    pub limits: Limits,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            show: Arc::new(|_| true),
            names: Default::default(),
            security: WebSecurity::default(),
            limits: Limits::default(),
        }
    }
}

impl ServeOptions {
    /// `http` or `https`, for the address printed at start.
    pub fn scheme(&self) -> &'static str {
        if self.security.tls.is_some() {
            "https"
        } else {
            "http"
        }
    }
}

/// Start the exporter on `addr` on the current tokio runtime; returns the bound address.
///
/// Serves `/metrics`, `/healthz` and `/` from the newest snapshot on `snapshots`, every GPU,
/// plain HTTP without credentials. A non-loopback address is served as asked, with a warning
/// (logged: stderr for a headless command, the event panel for the dashboard).
pub async fn spawn_server(
    addr: SocketAddr,
    snapshots: watch::Receiver<Arc<Snapshot>>,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    spawn_server_with(addr, snapshots, ServeOptions::default()).await
}

/// [`spawn_server`] with options. A non-loopback address is served as asked, with a warning on
/// stderr (louder without TLS or users).
pub async fn spawn_server_with(
    addr: SocketAddr,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    options: ServeOptions,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    if !addr.ip().is_loopback() {
        let open = options.security.tls.is_none() && options.security.users.is_none();
        if open {
            tracing::warn!("serving metrics on {addr} to anyone who can reach it, without TLS or credentials (use 127.0.0.1 to keep it local, or --web.config.file)");
        } else {
            tracing::warn!("serving metrics on {addr}, reachable from other machines");
        }
    }
    http_server::serve(
        addr,
        snapshots,
        http_server::ExportView {
            show: options.show,
            names: options.names,
        },
        options.limits,
        options.security,
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
    options: ServeOptions,
) -> Result<BackgroundServer, std::io::Error> {
    let scheme = options.scheme();
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
                match spawn_server_with(addr, snapshots, options).await {
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
    eprintln!("gpulse: serving {scheme}://{bound}/metrics");
    Ok(BackgroundServer {
        addr: bound,
        _stop: stop_tx,
    })
}
