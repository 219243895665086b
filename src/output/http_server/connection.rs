//! One connection: read request heads within their deadline, check credentials, answer, and
//! keep the connection for the next request until it has been idle too long.
//!
//! Time limits, all from [`Limits`]: a request head must be complete within `head_timeout` of
//! its first byte (for a new connection, of its acceptance, TLS handshake included), however
//! slowly its bytes trickle in; between requests a connection may stay silent for
//! `idle_timeout`; a response must be written within `write_timeout`.

use std::io::IoSlice;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

use super::auth::{AuthCheck, BasicAuthUsers};
use super::head::{find_head_end, parse_head, Reject};
use super::slots::{Phase, Slot};
use super::{Exposition, Limits};
use crate::output::prometheus;

/// What every connection of one server shares.
pub struct Shared {
    pub expo: Exposition,
    pub limits: Limits,
    pub users: Option<Arc<BasicAuthUsers>>,
}

/// How reading a request head ended.
enum HeadRead {
    /// A whole head is in the buffer, this many bytes long (without the blank line).
    Complete(usize),
    /// The client closed, or stayed silent past the idle timeout.
    Gone,
    /// The head did not arrive within its deadline.
    TimedOut,
    TooLarge,
}

/// Read until `buf` holds a whole request head. With `deadline` `None` the connection is idle:
/// it may wait `idle_timeout` for a first byte, and the head's deadline starts with that byte.
async fn read_head<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut Vec<u8>,
    mut deadline: Option<Instant>,
    limits: Limits,
    slot: &Slot,
) -> HeadRead {
    let mut chunk = [0u8; 2048];
    loop {
        if let Some(end) = find_head_end(buf) {
            return HeadRead::Complete(end);
        }
        if buf.len() > limits.max_head {
            return HeadRead::TooLarge;
        }
        let read = match deadline {
            Some(d) => tokio::time::timeout_at(d, stream.read(&mut chunk)).await,
            None => tokio::time::timeout(limits.idle_timeout, stream.read(&mut chunk)).await,
        };
        match read {
            Ok(Ok(0)) | Ok(Err(_)) => return HeadRead::Gone,
            Ok(Ok(n)) => {
                buf.extend_from_slice(&chunk[..n]);
                if deadline.is_none() {
                    slot.enter(Phase::Head);
                    deadline = Some(Instant::now() + limits.head_timeout);
                }
            }
            Err(_) if deadline.is_none() || buf.is_empty() => return HeadRead::Gone,
            Err(_) => return HeadRead::TimedOut,
        }
    }
}

/// Serve requests on one connection until it closes, errs or times out. `deadline` is the first
/// request head's.
pub async fn serve_connection<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    shared: &Shared,
    slot: &Slot,
    deadline: Instant,
) {
    let limits = shared.limits;
    let mut buf: Vec<u8> = Vec::with_capacity(1024);
    let mut next_deadline = Some(deadline);
    loop {
        let head_end = match read_head(stream, &mut buf, next_deadline, limits, slot).await {
            HeadRead::Complete(end) => end,
            HeadRead::Gone => return,
            HeadRead::TimedOut => return reject(stream, 408, "request timed out\n", limits).await,
            HeadRead::TooLarge => {
                return reject(stream, 431, "request head too large\n", limits).await
            }
        };
        if head_end > limits.max_head {
            return reject(stream, 431, "request head too large\n", limits).await;
        }
        slot.enter(Phase::Answering);
        if !answer(stream, shared, &buf[..head_end]).await {
            return;
        }
        buf.drain(..head_end + 4);
        slot.enter(Phase::Idle);
        // A request already sent behind this one (pipelining) starts its deadline now.
        next_deadline = (!buf.is_empty()).then(|| Instant::now() + limits.head_timeout);
    }
}

/// Answer one request head; `true` when the connection stays open for another.
async fn answer<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    shared: &Shared,
    head: &[u8],
) -> bool {
    let limits = shared.limits;
    let req = match parse_head(head) {
        Ok(r) => r,
        Err(Reject(status, why)) => {
            reject(stream, status, &format!("{why}\n"), limits).await;
            return false;
        }
    };
    if req.has_body {
        reject(stream, 413, "request bodies are not accepted\n", limits).await;
        return false;
    }
    if req.method != "GET" && req.method != "HEAD" {
        reject(stream, 405, "only GET and HEAD\n", limits).await;
        return false;
    }
    if let Some(users) = &shared.users {
        if !let_in(stream, users, req.authorization, limits).await {
            return false;
        }
    }
    let head_only = req.method == "HEAD";
    let keep = req.keep_alive;
    let ok = match req.path {
        "/metrics" => {
            let text = shared.expo.current();
            let response = Response::plain(200, prometheus::CONTENT_TYPE, text.as_bytes());
            respond(stream, &response, head_only, keep, limits).await
        }
        "/healthz" => {
            let snap = shared.expo.snapshots.borrow().clone();
            let body = if prometheus::is_fresh(&snap, crate::clock::now()) {
                (200, "ok\n".to_string())
            } else {
                let why = format!(
                    "stale: newest sample at {:.3}, {} samples\n",
                    snap.t, snap.seq
                );
                (503, why)
            };
            let response = Response::plain(body.0, "text/plain", body.1.as_bytes());
            respond(stream, &response, head_only, keep, limits).await
        }
        "/" => {
            let response = Response::plain(200, "text/html; charset=utf-8", INDEX.as_bytes());
            respond(stream, &response, head_only, keep, limits).await
        }
        _ => {
            let response = Response::plain(404, "text/plain", b"not found; try /metrics\n");
            respond(stream, &response, head_only, keep, limits).await
        }
    };
    ok && keep
}

/// Whether the credentials of `authorization` let the request in; when not, the answer (401, or
/// 429 when the check could not be made in time) has been sent.
async fn let_in<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    users: &Arc<BasicAuthUsers>,
    authorization: Option<&str>,
    limits: Limits,
) -> bool {
    let check = users.allows(authorization);
    // Past the deadline the answer is not known: the client is told to come back, not that its
    // credentials are wrong.
    let verdict = tokio::time::timeout(limits.head_timeout, check)
        .await
        .unwrap_or(AuthCheck::Busy);
    let response = match verdict {
        AuthCheck::Allowed => return true,
        AuthCheck::Denied => Response {
            status: 401,
            content_type: "text/plain",
            body: b"unauthorized: send the user and password of basic_auth_users\n",
            extra_headers: "WWW-Authenticate: Basic realm=\"gpulse\"\r\n",
        },
        AuthCheck::Busy => Response {
            status: 429,
            content_type: "text/plain",
            body: b"too many password checks at once; try again in a second\n",
            extra_headers: "Retry-After: 1\r\n",
        },
    };
    if respond(stream, &response, false, false, limits).await {
        close_gently(stream).await;
    }
    false
}

const INDEX: &str = "<!doctype html>\n<html><head><title>gpulse exporter</title></head><body>\n<h1>gpulse exporter</h1>\n<p><a href=\"/metrics\">/metrics</a>: GPU metrics in the Prometheus text format (dcgm-exporter names plus <code>gpulse_*</code>).</p>\n<p><a href=\"/healthz\">/healthz</a>: 200 while sampling is fresh, 503 when it is not.</p>\n</body></html>\n";

struct Response<'a> {
    status: u16,
    content_type: &'a str,
    body: &'a [u8],
    /// Header lines, each ending in CRLF.
    extra_headers: &'a str,
}

impl<'a> Response<'a> {
    fn plain(status: u16, content_type: &'a str, body: &'a [u8]) -> Response<'a> {
        Response {
            status,
            content_type,
            body,
            extra_headers: "",
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Content Too Large",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

/// Write a response within the write timeout; `true` when it was written whole.
async fn respond<S: AsyncWrite + Unpin>(
    stream: &mut S,
    r: &Response<'_>,
    head_only: bool,
    keep_alive: bool,
    limits: Limits,
) -> bool {
    let head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\n{}Connection: {}\r\n\r\n",
        r.status,
        reason(r.status),
        r.content_type,
        r.body.len(),
        r.extra_headers,
        if keep_alive { "keep-alive" } else { "close" }
    );
    let body = if head_only { &[][..] } else { r.body };
    let write = async {
        write_all_parts(stream, head.as_bytes(), body).await?;
        stream.flush().await
    };
    matches!(
        tokio::time::timeout(limits.write_timeout, write).await,
        Ok(Ok(()))
    )
}

/// Write `head` then `body` with as few system calls as the stream allows (one `writev` for a
/// whole response on TCP), instead of one write each.
async fn write_all_parts<S: AsyncWrite + Unpin>(
    stream: &mut S,
    mut head: &[u8],
    mut body: &[u8],
) -> std::io::Result<()> {
    while !head.is_empty() || !body.is_empty() {
        let parts = [IoSlice::new(head), IoSlice::new(body)];
        let n = stream.write_vectored(&parts).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        let from_head = n.min(head.len());
        head = &head[from_head..];
        body = &body[n - from_head..];
    }
    Ok(())
}

/// Answer an error and close gently.
async fn reject<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    status: u16,
    body: &str,
    limits: Limits,
) {
    let response = Response::plain(status, "text/plain", body.as_bytes());
    if respond(stream, &response, false, false, limits).await {
        close_gently(stream).await;
    }
}

/// Stop writing, then drain what the client still sends for a moment, so the response is not
/// lost to a reset caused by unread input.
async fn close_gently<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut S) {
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
