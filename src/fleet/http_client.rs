//! A small blocking HTTP/1.1 GET client for a Prometheus server on plain http.
//!
//! Every request has a deadline: connecting, writing and each read are bounded, and the whole
//! exchange gives up once the deadline passes, so a stalled server can never hang a refresh.
//! Responses with `Content-Length`, `Transfer-Encoding: chunked` or read-to-close bodies are all
//! understood; the request asks for an uncompressed body and `Connection: close`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use thiserror::Error;

/// The biggest response body accepted (a 1,000-host answer is a few tens of MiB).
const MAX_BODY: usize = 512 * 1024 * 1024;
/// The biggest header block accepted.
const MAX_HEADER: usize = 64 * 1024;

#[derive(Debug, Error)]
pub enum HttpError {
    #[error("'{0}' is not a Prometheus URL; use http://HOST:PORT or http://HOST:PORT/PATH-PREFIX")]
    BadUrl(String),
    #[error(
        "'{0}': https is not supported; point --prometheus at a plain http address (e.g. through \
         a local port-forward: ssh -L 9090:localhost:9090 HOST, then http://127.0.0.1:9090)"
    )]
    Https(String),
    #[error("cannot resolve '{host}': {reason}")]
    Resolve { host: String, reason: String },
    #[error("cannot connect to {addr}: {reason}")]
    Connect { addr: String, reason: String },
    #[error("{addr} did not answer within {timeout_s:.1} s")]
    Timeout { addr: String, timeout_s: f64 },
    #[error("reading from {addr}: {reason}")]
    Io { addr: String, reason: String },
    #[error("{addr} sent a malformed HTTP response: {reason}")]
    Malformed { addr: String, reason: String },
}

/// Where Prometheus listens: `http://host:port/prefix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
    /// Path prefix without a trailing slash ("" or "/prometheus").
    pub prefix: String,
}

impl Endpoint {
    /// Parse `http://host[:port][/prefix]` (port 80 when absent; 9090 is Prometheus's own default,
    /// but an explicit URL names it).
    pub fn parse(url: &str) -> Result<Endpoint, HttpError> {
        let u = url.trim();
        if u.len() >= 8 && u[..8].eq_ignore_ascii_case("https://") {
            return Err(HttpError::Https(url.to_string()));
        }
        let rest = if u.len() >= 7 && u[..7].eq_ignore_ascii_case("http://") {
            &u[7..]
        } else if u.contains("://") {
            return Err(HttpError::BadUrl(url.to_string()));
        } else {
            u
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.is_empty() || authority.contains('@') {
            return Err(HttpError::BadUrl(url.to_string()));
        }
        let (host, port) = if let Some(stripped) = authority.strip_prefix('[') {
            // [::1]:9090
            let end = stripped
                .find(']')
                .ok_or_else(|| HttpError::BadUrl(url.to_string()))?;
            let host = &stripped[..end];
            let after = &stripped[end + 1..];
            let port = match after.strip_prefix(':') {
                Some(p) => p.parse().map_err(|_| HttpError::BadUrl(url.to_string()))?,
                None if after.is_empty() => 80,
                None => return Err(HttpError::BadUrl(url.to_string())),
            };
            (host.to_string(), port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (
                    h.to_string(),
                    p.parse().map_err(|_| HttpError::BadUrl(url.to_string()))?,
                ),
                None => (authority.to_string(), 80),
            }
        };
        if host.is_empty() || path.contains(['?', '#']) {
            return Err(HttpError::BadUrl(url.to_string()));
        }
        Ok(Endpoint {
            host,
            port,
            prefix: path.trim_end_matches('/').to_string(),
        })
    }

    /// `host:port` as written in messages and the Host header.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    fn socket_addrs(&self) -> Result<Vec<SocketAddr>, HttpError> {
        let addrs: Vec<SocketAddr> = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| HttpError::Resolve {
                host: self.host.clone(),
                reason: e.to_string(),
            })?
            .collect();
        if addrs.is_empty() {
            return Err(HttpError::Resolve {
                host: self.host.clone(),
                reason: "no address".into(),
            });
        }
        Ok(addrs)
    }
}

/// A response: status code and body.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

/// GET `path_and_query` (starting with `/`, below the endpoint's prefix) within `timeout`.
pub fn get(
    endpoint: &Endpoint,
    path_and_query: &str,
    timeout: Duration,
) -> Result<Response, HttpError> {
    let deadline = Instant::now() + timeout;
    let authority = endpoint.authority();
    let timed_out = || HttpError::Timeout {
        addr: authority.clone(),
        timeout_s: timeout.as_secs_f64(),
    };
    let mut last_err = None;
    let mut stream = None;
    for addr in endpoint.socket_addrs()? {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(timed_out());
        }
        match TcpStream::connect_timeout(&addr, left) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return Err(timed_out()),
            Err(e) => last_err = Some(e.to_string()),
        }
    }
    let Some(mut stream) = stream else {
        return Err(HttpError::Connect {
            addr: authority,
            reason: last_err.unwrap_or_else(|| "no address".into()),
        });
    };
    let io = |e: std::io::Error| {
        if matches!(
            e.kind(),
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
        ) {
            HttpError::Timeout {
                addr: endpoint.authority(),
                timeout_s: timeout.as_secs_f64(),
            }
        } else {
            HttpError::Io {
                addr: endpoint.authority(),
                reason: e.to_string(),
            }
        }
    };
    let _ = stream.set_nodelay(true);
    let request = format!(
        "GET {}{} HTTP/1.1\r\nHost: {}\r\nUser-Agent: gpulse/{}\r\nAccept: application/json\r\n\
         Accept-Encoding: identity\r\nConnection: close\r\n\r\n",
        endpoint.prefix,
        path_and_query,
        authority,
        env!("CARGO_PKG_VERSION")
    );
    stream
        .set_write_timeout(Some(remaining(deadline).ok_or_else(timed_out)?))
        .map_err(io)?;
    stream.write_all(request.as_bytes()).map_err(io)?;

    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    let header_end = loop {
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > MAX_HEADER {
            return Err(malformed(&authority, "header block too large"));
        }
        let n = read_some(&mut stream, &mut chunk, deadline).map_err(io)?;
        if n == 0 {
            return Err(malformed(
                &authority,
                "connection closed before the headers ended",
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = std::str::from_utf8(&buf[..header_end])
        .map_err(|_| malformed(&authority, "headers are not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .filter(|_| status_line.starts_with("HTTP/1."))
        .ok_or_else(|| malformed(&authority, &format!("status line '{status_line}'")))?;
    let mut content_length = None;
    let mut chunked = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            content_length = Some(
                value
                    .parse::<usize>()
                    .map_err(|_| malformed(&authority, &format!("Content-Length '{value}'")))?,
            );
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.to_ascii_lowercase().contains("chunked");
        }
    }
    if content_length.is_some_and(|n| n > MAX_BODY) {
        return Err(malformed(&authority, "body larger than 512 MiB"));
    }
    let mut raw = buf.split_off(header_end);
    // Read until the body is complete (or the server closes).
    loop {
        if let Some(n) = content_length.filter(|_| !chunked) {
            if raw.len() >= n {
                raw.truncate(n);
                break;
            }
        } else if chunked && raw.ends_with(b"0\r\n\r\n") && dechunk(&raw).is_ok() {
            // Only the tail is checked per read: a large body arrives in thousands of reads.
            break;
        }
        if raw.len() > MAX_BODY {
            return Err(malformed(&authority, "body larger than 512 MiB"));
        }
        let n = read_some(&mut stream, &mut chunk, deadline).map_err(io)?;
        if n == 0 {
            if let Some(want) = content_length.filter(|_| !chunked) {
                return Err(malformed(
                    &authority,
                    &format!("connection closed after {} of {want} body bytes", raw.len()),
                ));
            }
            break;
        }
        raw.extend_from_slice(&chunk[..n]);
    }
    let body = if chunked {
        dechunk(&raw).map_err(|r| malformed(&authority, r))?
    } else {
        raw
    };
    Ok(Response { status, body })
}

fn remaining(deadline: Instant) -> Option<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    (!left.is_zero()).then_some(left)
}

fn read_some(stream: &mut TcpStream, buf: &mut [u8], deadline: Instant) -> std::io::Result<usize> {
    let left = remaining(deadline).ok_or(std::io::ErrorKind::TimedOut)?;
    stream.set_read_timeout(Some(left))?;
    loop {
        match stream.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

fn malformed(addr: &str, reason: &str) -> HttpError {
    HttpError::Malformed {
        addr: addr.to_string(),
        reason: reason.to_string(),
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Decode a complete chunked body; `Err` while it is incomplete or broken.
fn dechunk(raw: &[u8]) -> Result<Vec<u8>, &'static str> {
    let mut out = Vec::with_capacity(raw.len());
    let mut pos = 0;
    loop {
        let line_end = find(&raw[pos..], b"\r\n").ok_or("incomplete chunk size")? + pos;
        let size_text = std::str::from_utf8(&raw[pos..line_end]).map_err(|_| "bad chunk size")?;
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| "bad chunk size")?;
        pos = line_end + 2;
        if size == 0 {
            return Ok(out);
        }
        let end = pos.checked_add(size).ok_or("bad chunk size")?;
        if raw.len() < end + 2 {
            return Err("incomplete chunk");
        }
        out.extend_from_slice(&raw[pos..end]);
        if &raw[end..end + 2] != b"\r\n" {
            return Err("chunk not followed by CRLF");
        }
        pos = end + 2;
    }
}

/// Percent-encode a query-string value.
pub fn encode_query_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls() {
        let e = Endpoint::parse("http://127.0.0.1:9090").unwrap();
        assert_eq!(
            (e.host.as_str(), e.port, e.prefix.as_str()),
            ("127.0.0.1", 9090, "")
        );
        let e = Endpoint::parse("http://prom.example:8080/prometheus/").unwrap();
        assert_eq!(e.prefix, "/prometheus");
        assert_eq!(e.authority(), "prom.example:8080");
        let e = Endpoint::parse("localhost:9090").unwrap();
        assert_eq!(e.port, 9090);
        let e = Endpoint::parse("http://[::1]:9090/").unwrap();
        assert_eq!((e.host.as_str(), e.port), ("::1", 9090));
        assert_eq!(e.authority(), "[::1]:9090");
        assert_eq!(Endpoint::parse("http://h").unwrap().port, 80);
        assert!(matches!(
            Endpoint::parse("https://h:9090"),
            Err(HttpError::Https(_))
        ));
        assert!(Endpoint::parse("ftp://h").is_err());
        assert!(Endpoint::parse("http://h:notaport").is_err());
        assert!(Endpoint::parse("http://:9090").is_err());
        assert!(Endpoint::parse("http://h:9090/?x=1").is_err());
        let msg = Endpoint::parse("https://h").unwrap_err().to_string();
        assert!(
            msg.contains("'https://h'") && msg.contains("plain http"),
            "{msg}"
        );
    }

    #[test]
    fn decodes_chunked_bodies() {
        assert_eq!(
            dechunk(b"4\r\nWiki\r\n5;x=y\r\npedia\r\n0\r\n\r\n").unwrap(),
            b"Wikipedia"
        );
        assert!(dechunk(b"4\r\nWi").is_err());
        assert!(dechunk(b"zz\r\n").is_err());
    }

    #[test]
    fn encodes_query_values() {
        assert_eq!(
            encode_query_value("up{job=\"a b\"}"),
            "up%7Bjob%3D%22a%20b%22%7D"
        );
    }
}
