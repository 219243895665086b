//! The exporter's `/metrics` on hyper 1.x (HTTP/1.1, keep-alive, a 5 s header-read timeout),
//! serving the same exposition as gpulse's own server (rendered once per snapshot), with the same
//! TLS (tokio-rustls) and basic auth: the other side of the hand-written-versus-hyper
//! measurement, so that the two differ only in their HTTP code.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::watch;

use gpulse::engine::Snapshot;
use gpulse::output::prometheus;
use gpulse::output::web_config::WebSecurity;

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
    allowed: bool,
    snapshots: &watch::Receiver<Arc<Snapshot>>,
    cache: &Cache,
) -> Response<Full<Bytes>> {
    let (status, body) = match path {
        _ if !allowed => (
            StatusCode::UNAUTHORIZED,
            Bytes::from_static(b"unauthorized\n"),
        ),
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

/// Serve one connection's requests until it closes.
async fn connection<S>(
    stream: S,
    security: WebSecurity,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    cache: Cache,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |req: Request<Incoming>| {
        let (users, snapshots, cache) = (security.users.clone(), snapshots.clone(), cache.clone());
        async move {
            let header = req
                .headers()
                .get(AUTHORIZATION)
                .and_then(|v| v.to_str().ok());
            let allowed = match &users {
                Some(users) => matches!(
                    users.allows(header).await,
                    gpulse::output::http_server::auth::AuthCheck::Allowed
                ),
                None => true,
            };
            Ok::<_, Infallible>(answer(req.uri().path(), allowed, &snapshots, &cache))
        }
    });
    let _ = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(5))
        .keep_alive(true)
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

/// Bind `addr` and serve on the current runtime; the bound address.
pub async fn serve(
    addr: SocketAddr,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    security: WebSecurity,
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
            let (snapshots, cache, security) = (snapshots.clone(), cache.clone(), security.clone());
            tokio::spawn(async move {
                match security.tls.clone() {
                    Some(config) => {
                        let accept = tokio_rustls::TlsAcceptor::from(config).accept(stream);
                        if let Ok(Ok(tls)) =
                            tokio::time::timeout(Duration::from_secs(5), accept).await
                        {
                            connection(tls, security, snapshots, cache).await;
                        }
                    }
                    None => connection(stream, security, snapshots, cache).await,
                }
            });
        }
    });
    Ok(bound)
}
