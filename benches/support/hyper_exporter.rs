//! The exporter's `/metrics` on hyper 1.x (HTTP/1.1, keep-alive, a 5 s header-read timeout),
//! serving the same exposition as gpulse's own server (rendered once per snapshot): the other
//! side of the hand-written-versus-hyper measurement.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::watch;

use gpulse::engine::Snapshot;
use gpulse::output::prometheus;

type Cache = Arc<Mutex<Option<(u64, Bytes)>>>;

fn exposition(snapshots: &watch::Receiver<Arc<Snapshot>>, cache: &Cache) -> Bytes {
    let snap = snapshots.borrow().clone();
    let mut cache = cache.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((seq, text)) = cache.as_ref() {
        if *seq == snap.seq {
            return text.clone();
        }
    }
    let text = Bytes::from(prometheus::render(&snap, &|_| true));
    *cache = Some((snap.seq, text.clone()));
    text
}

fn answer(
    path: &str,
    snapshots: &watch::Receiver<Arc<Snapshot>>,
    cache: &Cache,
) -> Response<Full<Bytes>> {
    let (status, body) = match path {
        "/metrics" => (StatusCode::OK, exposition(snapshots, cache)),
        _ => (
            StatusCode::NOT_FOUND,
            Bytes::from_static(b"not found; try /metrics\n"),
        ),
    };
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static(prometheus::CONTENT_TYPE),
    );
    response
}

/// Bind `addr` and serve on the current runtime; the bound address.
pub async fn serve(
    addr: SocketAddr,
    snapshots: watch::Receiver<Arc<Snapshot>>,
) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let cache: Cache = Arc::new(Mutex::new(None));
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            };
            let _ = stream.set_nodelay(true);
            let (snapshots, cache) = (snapshots.clone(), cache.clone());
            tokio::spawn(async move {
                let service = service_fn(move |req: Request<Incoming>| {
                    let response = answer(req.uri().path(), &snapshots, &cache);
                    async move { Ok::<_, Infallible>(response) }
                });
                let _ = http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(Duration::from_secs(5))
                    .keep_alive(true)
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(bound)
}
