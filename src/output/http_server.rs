//! A small HTTP/1.1 server for the exporter, on tokio.
//!
//! Robust by construction: a request head larger than [`Limits::max_head`] gets 431, a head that
//! does not arrive within [`Limits::read_timeout`] closes the connection (408 when something was
//! sent), anything that is not `GET`/`HEAD` of an origin-form path over HTTP/1.x gets 400/405, and
//! at most [`Limits::max_connections`] connections are served at once (the others wait in the
//! kernel's backlog). Keep-alive is supported, as Prometheus reuses its connection. The exposition
//! is rendered once per snapshot and shared by every scrape of it.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};

use crate::engine::Snapshot;
use crate::output::prometheus;

/// Bounds on what one client may cost.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest request head (request line and headers), bytes.
    pub max_head: usize,
    /// Time a client has to send a whole request head (and, between requests, to send the next).
    pub read_timeout: Duration,
    /// Time allowed to write one response.
    pub write_timeout: Duration,
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_head: 8 * 1024,
            read_timeout: Duration::from_secs(5),
            write_timeout: Duration::from_secs(10),
            max_connections: 512,
        }
    }
}

type Show = Arc<dyn Fn(u32) -> bool + Send + Sync>;

/// Renders the exposition at most once per snapshot.
struct Exposition {
    snapshots: watch::Receiver<Arc<Snapshot>>,
    show: Show,
    cache: Mutex<Option<(u64, Arc<String>)>>,
}

impl Exposition {
    fn current(&self) -> (Arc<Snapshot>, Arc<String>) {
        let snap = self.snapshots.borrow().clone();
        if let Ok(mut cache) = self.cache.lock() {
            if let Some((seq, text)) = cache.as_ref() {
                if *seq == snap.seq {
                    return (snap, text.clone());
                }
            }
            let text = Arc::new(prometheus::render(&snap, &*self.show));
            *cache = Some((snap.seq, text.clone()));
            return (snap, text);
        }
        let text = Arc::new(prometheus::render(&snap, &*self.show));
        (snap, text)
    }
}

/// Bind `addr` and serve on the current runtime. Returns the bound address and the accept task.
pub async fn serve(
    addr: SocketAddr,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    show: Show,
    limits: Limits,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let expo = Arc::new(Exposition {
        snapshots,
        show,
        cache: Mutex::new(None),
    });
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let task = tokio::spawn(async move {
        loop {
            let Ok(permit) = permits.clone().acquire_owned().await else {
                return;
            };
            match listener.accept().await {
                Ok((stream, _peer)) => {
                    let expo = expo.clone();
                    tokio::spawn(async move {
                        let _permit = permit;
                        let _ = stream.set_nodelay(true);
                        connection(stream, &expo, limits).await;
                    });
                }
                Err(e) => {
                    // Out of file descriptors and the like: wait a little instead of spinning.
                    tracing::warn!("exporter accept failed: {e}");
                    drop(permit);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    });
    Ok((bound, task))
}

/// A parsed request head.
#[derive(Debug, PartialEq)]
pub struct Request<'a> {
    pub method: &'a str,
    pub path: &'a str,
    /// The connection stays open after the response.
    pub keep_alive: bool,
    pub has_body: bool,
}

/// Why a request head is rejected: the status and a line of text for the body.
#[derive(Debug, PartialEq)]
pub struct Reject(pub u16, pub &'static str);

/// Parse a request head (everything before the blank line).
pub fn parse_head(head: &[u8]) -> Result<Request<'_>, Reject> {
    let text = std::str::from_utf8(head).map_err(|_| Reject(400, "request is not text"))?;
    let mut lines = text.split("\r\n");
    let line = lines.next().unwrap_or("");
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Reject(400, "malformed request line"));
    };
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(Reject(400, "malformed method"));
    }
    let http11 = match version {
        "HTTP/1.1" => true,
        "HTTP/1.0" => false,
        _ => return Err(Reject(400, "unsupported HTTP version")),
    };
    if !target.starts_with('/') || target.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(Reject(400, "malformed request target"));
    }
    let mut keep_alive = http11;
    let mut has_body = false;
    for h in lines {
        if h.is_empty() {
            continue;
        }
        let Some((name, value)) = h.split_once(':') else {
            return Err(Reject(400, "malformed header"));
        };
        if name.is_empty() || name.bytes().any(|b| b <= b' ' || b >= 0x7f) {
            return Err(Reject(400, "malformed header name"));
        }
        let value = value.trim();
        if name.eq_ignore_ascii_case("connection") {
            if value.eq_ignore_ascii_case("close") {
                keep_alive = false;
            } else if value.eq_ignore_ascii_case("keep-alive") {
                keep_alive = true;
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding")
            || (name.eq_ignore_ascii_case("content-length") && value != "0")
        {
            has_body = true;
        }
    }
    let path = target.split('?').next().unwrap_or(target);
    Ok(Request {
        method,
        path,
        keep_alive,
        has_body,
    })
}

fn find_head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n")
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

async fn respond(
    stream: &mut TcpStream,
    status: u16,
    content_type: &str,
    body: &[u8],
    head_only: bool,
    keep_alive: bool,
    limits: Limits,
) -> bool {
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: {}\r\n\r\n",
        reason(status),
        body.len(),
        if keep_alive { "keep-alive" } else { "close" }
    );
    let write = async {
        stream.write_all(head.as_bytes()).await?;
        if !head_only {
            stream.write_all(body).await?;
        }
        stream.flush().await
    };
    matches!(
        tokio::time::timeout(limits.write_timeout, write).await,
        Ok(Ok(()))
    )
}

/// Answer an error and close gently: stop writing, then drain what the client still sends for a
/// moment, so the response is not lost to a reset caused by unread input.
async fn reject(stream: &mut TcpStream, status: u16, body: &str, limits: Limits) {
    if respond(
        stream,
        status,
        "text/plain",
        body.as_bytes(),
        false,
        false,
        limits,
    )
    .await
    {
        let _ = stream.shutdown().await;
        let mut sink = [0u8; 4096];
        let drain = async {
            let mut total = 0usize;
            while let Ok(n) = stream.read(&mut sink).await {
                total += n;
                if n == 0 || total > 1 << 20 {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(1), drain).await;
    }
}

const INDEX: &str = "<!doctype html>\n<html><head><title>gpulse exporter</title></head><body>\n<h1>gpulse exporter</h1>\n<p><a href=\"/metrics\">/metrics</a>: GPU metrics in the Prometheus text format (dcgm-exporter names plus <code>gpulse_*</code>).</p>\n<p><a href=\"/healthz\">/healthz</a>: 200 while sampling is fresh, 503 when it is not.</p>\n</body></html>\n";

async fn connection(mut stream: TcpStream, expo: &Exposition, limits: Limits) {
    let mut buf: Vec<u8> = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        // Read one request head, within the size and time limits.
        let head_end = loop {
            if let Some(end) = find_head_end(&buf) {
                break end;
            }
            if buf.len() > limits.max_head {
                return reject(&mut stream, 431, "request head too large\n", limits).await;
            }
            match tokio::time::timeout(limits.read_timeout, stream.read(&mut chunk)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return,
                Ok(Ok(n)) => buf.extend_from_slice(&chunk[..n]),
                Err(_) if buf.is_empty() => return,
                Err(_) => return reject(&mut stream, 408, "request timed out\n", limits).await,
            }
        };
        if head_end > limits.max_head {
            return reject(&mut stream, 431, "request head too large\n", limits).await;
        }
        let req = match parse_head(&buf[..head_end]) {
            Ok(r) => r,
            Err(Reject(status, why)) => {
                return reject(&mut stream, status, &format!("{why}\n"), limits).await;
            }
        };
        if req.has_body {
            return reject(
                &mut stream,
                413,
                "request bodies are not accepted\n",
                limits,
            )
            .await;
        }
        if req.method != "GET" && req.method != "HEAD" {
            return reject(&mut stream, 405, "only GET and HEAD\n", limits).await;
        }
        let head_only = req.method == "HEAD";
        let keep = req.keep_alive;
        let (status, content_type, body): (u16, &str, Vec<u8>) = match req.path {
            "/metrics" => {
                let (_, text) = expo.current();
                let ok = respond(
                    &mut stream,
                    200,
                    prometheus::CONTENT_TYPE,
                    text.as_bytes(),
                    head_only,
                    keep,
                    limits,
                )
                .await;
                if !ok || !keep {
                    return;
                }
                buf.drain(..head_end + 4);
                continue;
            }
            "/healthz" => {
                let snap = expo.snapshots.borrow().clone();
                if prometheus::is_fresh(&snap, crate::clock::now()) {
                    (200, "text/plain", b"ok\n".to_vec())
                } else {
                    let body = format!(
                        "stale: newest sample at {:.3}, {} samples\n",
                        snap.t, snap.seq
                    );
                    (503, "text/plain", body.into_bytes())
                }
            }
            "/" => (200, "text/html; charset=utf-8", INDEX.as_bytes().to_vec()),
            _ => (404, "text/plain", b"not found; try /metrics\n".to_vec()),
        };
        let ok = respond(
            &mut stream,
            status,
            content_type,
            &body,
            head_only,
            keep,
            limits,
        )
        .await;
        if !ok || !keep {
            return;
        }
        buf.drain(..head_end + 4);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_scrape() {
        let r = parse_head(b"GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nAccept: */*").expect("valid");
        assert_eq!(r.method, "GET");
        assert_eq!(r.path, "/metrics");
        assert!(r.keep_alive);
        let r = parse_head(b"GET / HTTP/1.0").expect("valid");
        assert!(!r.keep_alive);
        let r = parse_head(b"GET / HTTP/1.1\r\nConnection: close").expect("valid");
        assert!(!r.keep_alive);
    }

    #[test]
    fn rejects_malformed_heads() {
        assert_eq!(
            parse_head(b"GARBAGE").map(|_| ()),
            Err(Reject(400, "malformed request line"))
        );
        assert!(parse_head(b"GET /metrics HTTP/2.0").is_err());
        assert!(parse_head(b"GET metrics HTTP/1.1").is_err());
        assert!(parse_head(b"get / HTTP/1.1").is_err());
        assert!(parse_head(b"GET / HTTP/1.1\r\nno colon here").is_err());
        assert!(parse_head(b"GET /\x01 HTTP/1.1").is_err());
        assert!(parse_head(&[0xff, 0xfe, b' ', b'/']).is_err());
        assert!(
            parse_head(b"POST / HTTP/1.1\r\nContent-Length: 5")
                .expect("parses")
                .has_body
        );
    }
}
