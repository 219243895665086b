//! A small HTTP/1.1 server for the exporter, on tokio, with optional TLS and basic auth.
//!
//! Robust by construction: a request head larger than [`Limits::max_head`] gets 431, a head
//! that is not complete within [`Limits::head_timeout`] closes the connection (408 when
//! something was sent), a keep-alive connection silent for [`Limits::idle_timeout`] is closed,
//! anything that is not `GET`/`HEAD` of an origin-form path over HTTP/1.x gets 400/405, and when
//! [`Limits::max_connections`] are open the one that waited longest for nothing makes room for a
//! new one ([`slots`]), so no number of slow or idle clients keeps a scraper out. With TLS
//! configured every connection must be TLS (plain HTTP gets a 400 that says so); with users
//! configured every request needs their credentials. The exposition is rendered once per
//! snapshot and shared by every scrape of it.

pub mod auth;
mod connection;
pub mod head;
pub mod slots;
pub mod tls;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::watch;

use crate::engine::Snapshot;
use crate::output::prometheus;
use crate::output::web_config::WebSecurity;
use connection::{serve_connection, Shared};
use slots::{Slot, Slots};

pub use head::{parse_head, Reject, Request};

/// Bounds on what one client may cost.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest request head (request line and headers), bytes.
    pub max_head: usize,
    /// Time a request head has to arrive whole, from its first byte (from the connection's
    /// acceptance for the first request, TLS handshake included).
    pub head_timeout: Duration,
    /// Time a keep-alive connection may stay silent between requests.
    pub idle_timeout: Duration,
    /// Time allowed to write one response.
    pub write_timeout: Duration,
    /// Connections open at once; past it the longest-waiting one makes room.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_head: 8 * 1024,
            head_timeout: Duration::from_secs(5),
            // Longer than Prometheus's usual scrape intervals (15 s to 60 s), so its one
            // connection is kept from scrape to scrape.
            idle_timeout: Duration::from_secs(120),
            write_timeout: Duration::from_secs(10),
            max_connections: 512,
        }
    }
}

type Show = Arc<dyn Fn(u32) -> bool + Send + Sync>;

/// What the exposition holds: the GPUs shown, and under which of dcgm-exporter's names.
#[derive(Clone)]
pub struct ExportView {
    pub show: Show,
    pub names: prometheus::DcgmNames,
}

/// Renders the exposition at most once per snapshot.
pub struct Exposition {
    snapshots: watch::Receiver<Arc<Snapshot>>,
    view: ExportView,
    cache: Mutex<Option<(u64, Arc<String>)>>,
}

impl Exposition {
    fn current(&self) -> Arc<String> {
        let snap = self.snapshots.borrow().clone();
        if let Ok(mut cache) = self.cache.lock() {
            if let Some((seq, text)) = cache.as_ref() {
                if *seq == snap.seq {
                    return text.clone();
                }
            }
            let text = Arc::new(self.render(&snap));
            *cache = Some((snap.seq, text.clone()));
            return text;
        }
        Arc::new(self.render(&snap))
    }

    fn render(&self, snap: &Snapshot) -> String {
        prometheus::render_named(snap, &*self.view.show, self.view.names)
    }
}

/// Connections the kernel completes and keeps for the server to accept, as node_exporter asks
/// (Linux caps it at `net.core.somaxconn`, 4096 by default). A burst of connects larger than
/// the queue has its excess SYNs dropped, and their clients wait a second to try again.
pub const LISTEN_BACKLOG: u32 = 4096;

/// A listener on `addr` with a queue of [`LISTEN_BACKLOG`] connections (tokio's `bind` asks for
/// 128). Call within a runtime.
pub fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    // As `TcpListener::bind`: a restarted exporter binds its port again at once.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Bind `addr` and serve on the current runtime. Returns the bound address and the accept task.
pub async fn serve(
    addr: SocketAddr,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    view: ExportView,
    limits: Limits,
    security: WebSecurity,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = listen(addr)?;
    let bound = listener.local_addr()?;
    let shared = Arc::new(Shared {
        expo: Exposition {
            snapshots,
            view,
            cache: Mutex::new(None),
        },
        limits,
        users: security.users,
    });
    let slots = Slots::new(limits.max_connections);
    let tls = security.tls;
    let task = tokio::spawn(async move {
        loop {
            match listener.accept().await {
                Ok((stream, _peer)) => {
                    let slot = slots.admit();
                    tokio::spawn(connection(stream, slot, shared.clone(), tls.clone()));
                }
                Err(e) => {
                    // Out of file descriptors and the like: wait a little instead of spinning.
                    tracing::warn!("exporter accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    });
    Ok((bound, task))
}

/// One accepted connection, until it ends or must make room for a newer one.
async fn connection(
    stream: TcpStream,
    slot: Slot,
    shared: Arc<Shared>,
    tls: Option<Arc<rustls::ServerConfig>>,
) {
    let _ = stream.set_nodelay(true);
    let deadline = tokio::time::Instant::now() + shared.limits.head_timeout;
    let close = slot.close.clone();
    let served = async {
        match tls {
            Some(config) => {
                let handshake = tokio::time::timeout_at(deadline, tls::accept(stream, config));
                if let Ok(Some(mut tls_stream)) = handshake.await {
                    serve_connection(&mut tls_stream, &shared, &slot, deadline).await;
                }
            }
            None => {
                let mut stream = stream;
                serve_connection(&mut stream, &shared, &slot, deadline).await;
            }
        }
    };
    tokio::select! {
        _ = close.notified() => {}
        _ = served => {}
    }
}

#[cfg(test)]
mod tests;
