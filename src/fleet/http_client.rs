//! GET requests to a Prometheus server over http or https, on ureq with rustls.
//!
//! Every request has one deadline that covers name resolution, connecting, the TLS handshake,
//! the answer's head and its whole body. A body is capped at [`MAX_BODY`], and the bodies being
//! read at once share [`MAX_BODIES_IN_FLIGHT`], so a hostile or broken server costs a bounded
//! amount of memory. Credentials are read from their files for every request (a rotated token is
//! picked up) and never appear in a message or a `Debug` print.

use std::io::Read;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use super::endpoint::{encode_query_value, Endpoint, Scheme};
use super::http_error::tls_hint;
pub use super::http_error::HttpError;
use super::http_options::{Auth, ClientOptions, Secret};
use crate::capped_read;

/// The biggest answer accepted, bytes (a range query over 10,000 GPUs is about 20 MiB).
pub const MAX_BODY: usize = 48 * 1024 * 1024;
/// The most answer bytes held at once by the requests of one client together.
pub const MAX_BODIES_IN_FLIGHT: usize = 128 * 1024 * 1024;
/// The biggest response head accepted, bytes.
const MAX_HEAD: usize = 64 * 1024;

/// A response: status code and body, the request's deadline, and the body's bytes taken from
/// the client's budget (given back when the response is dropped).
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
    /// When the request's time is up: reading the answer counts too.
    pub deadline: Instant,
    _held: Reservation,
}

/// An HTTP client for one Prometheus server: its connection pool, credentials and TLS settings.
#[derive(Clone)]
pub struct HttpClient {
    agent: ureq::Agent,
    endpoint: Endpoint,
    auth: Option<Auth>,
    timeout: Duration,
    in_flight: Arc<AtomicUsize>,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("endpoint", &self.endpoint)
            .field("auth", &self.auth)
            .finish_non_exhaustive()
    }
}

impl HttpClient {
    /// A client for `endpoint` whose requests each end within `timeout`.
    pub fn new(
        endpoint: Endpoint,
        timeout: Duration,
        options: &ClientOptions,
    ) -> Result<HttpClient, HttpError> {
        let tls = super::http_tls::tls_config(options)?;
        let proxy = match &options.proxy_url {
            Some(url) => Some(ureq::Proxy::new(url).map_err(|e| HttpError::Proxy {
                url: url.clone(),
                reason: e.to_string(),
            })?),
            None if options.proxy_from_environment => ureq::Proxy::try_from_env(),
            None => None,
        };
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .max_redirects(if options.follow_redirects { 10 } else { 0 })
            .redirect_auth_headers(ureq::config::RedirectAuthHeaders::SameHost)
            .max_response_header_size(MAX_HEAD)
            // A connection per request: a pooled one the server closed meanwhile (an idle
            // timeout, a proxy) would fail the next query, and a refresh is 13 requests every
            // few seconds, where a fresh connection costs a millisecond or two.
            .max_idle_connections(0)
            .max_idle_connections_per_host(0)
            .user_agent(concat!("gpulse/", env!("CARGO_PKG_VERSION")))
            .accept("application/json")
            .accept_encoding("identity")
            .proxy(proxy)
            .tls_config(tls)
            .build();
        Ok(HttpClient {
            agent: config.new_agent(),
            endpoint,
            auth: options.auth.clone(),
            timeout,
            in_flight: Arc::new(AtomicUsize::new(0)),
        })
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// GET `path_and_query` (starting with `/`, below the endpoint's prefix).
    pub fn get(&self, path_and_query: &str) -> Result<Response, HttpError> {
        let deadline = Instant::now() + self.timeout;
        let url = format!("{}{}", self.endpoint.base_url(), path_and_query);
        let mut request = self.agent.get(&url);
        if let Some(auth) = &self.auth {
            request = request.header("Authorization", authorization(auth)?.expose());
        }
        let mut response = request.call().map_err(|e| self.error(e))?;
        let status = response.status().as_u16();
        let (body, held) = self.read_body(response.body_mut())?;
        Ok(Response {
            status,
            body,
            deadline,
            _held: held,
        })
    }

    /// The bytes all answers of this client hold while in flight, and the most they may.
    pub fn budget(&self) -> (Arc<AtomicUsize>, usize) {
        (self.in_flight.clone(), MAX_BODIES_IN_FLIGHT)
    }

    /// The error of a request whose deadline passed.
    pub fn timed_out(&self) -> HttpError {
        HttpError::Timeout {
            addr: self.endpoint.authority(),
            timeout_s: self.timeout.as_secs_f64(),
        }
    }

    /// Read a body within the per-answer cap and the client's shared budget; the body and the
    /// bytes it holds of the budget.
    fn read_body(&self, body: &mut ureq::Body) -> Result<(Vec<u8>, Reservation), HttpError> {
        let mut reservation = Reservation {
            pool: self.in_flight.clone(),
            held: 0,
        };
        let too_large = |limit: usize| HttpError::TooLarge {
            addr: self.endpoint.authority(),
            limit_mib: limit / (1024 * 1024),
        };
        if body.content_length().is_some_and(|n| n > MAX_BODY as u64) {
            return Err(too_large(MAX_BODY));
        }
        let mut out = Vec::with_capacity(
            body.content_length()
                .map_or(64 * 1024, |n| n.min(MAX_BODY as u64) as usize),
        );
        let mut reader = body.as_reader();
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            let n = reader
                .read(&mut chunk)
                .map_err(|e| self.error(ureq::Error::from(e)))?;
            if n == 0 {
                return Ok((out, reservation));
            }
            if out.len() + n > MAX_BODY {
                return Err(too_large(MAX_BODY));
            }
            if !reservation.grow(n) {
                return Err(too_large(MAX_BODIES_IN_FLIGHT));
            }
            out.extend_from_slice(&chunk[..n]);
        }
    }

    /// The error in words, naming the server and what to do.
    fn error(&self, e: ureq::Error) -> HttpError {
        let addr = self.endpoint.authority();
        let timeout = self.timeout;
        match e {
            ureq::Error::Timeout(_) => HttpError::Timeout {
                addr,
                timeout_s: timeout.as_secs_f64(),
            },
            ureq::Error::HostNotFound => HttpError::Resolve {
                host: self.endpoint.host.clone(),
                reason: "no such host".into(),
            },
            ureq::Error::Io(io) => {
                match io.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>()) {
                    // rustls reports a failed handshake through the socket's I/O error.
                    Some(tls) => HttpError::Tls {
                        addr,
                        reason: tls.to_string(),
                        hint: tls_hint(tls),
                    },
                    None => io_error(addr, io, timeout),
                }
            }
            ureq::Error::ConnectionFailed => HttpError::Connect {
                addr,
                reason: "connection failed".into(),
            },
            ureq::Error::Rustls(tls) => {
                let hint = tls_hint(&tls);
                HttpError::Tls {
                    addr,
                    reason: tls.to_string(),
                    hint,
                }
            }
            ureq::Error::Tls(reason) => HttpError::Tls {
                addr,
                reason: reason.into(),
                hint: "",
            },
            ureq::Error::LargeResponseHeader(..) => HttpError::Malformed {
                addr,
                reason: format!("a response head larger than {} KiB", MAX_HEAD / 1024),
            },
            ureq::Error::ConnectProxyFailed(reason) => HttpError::Connect {
                addr: format!("{addr} through the proxy"),
                reason,
            },
            other => HttpError::Malformed {
                addr,
                reason: other.to_string(),
            },
        }
    }
}

fn io_error(addr: String, io: std::io::Error, timeout: Duration) -> HttpError {
    use std::io::ErrorKind;
    match io.kind() {
        ErrorKind::TimedOut | ErrorKind::WouldBlock => HttpError::Timeout {
            addr,
            timeout_s: timeout.as_secs_f64(),
        },
        ErrorKind::ConnectionRefused
        | ErrorKind::HostUnreachable
        | ErrorKind::NetworkUnreachable
        | ErrorKind::AddrNotAvailable => HttpError::Connect {
            addr,
            reason: io.to_string(),
        },
        ErrorKind::InvalidData | ErrorKind::UnexpectedEof => HttpError::Malformed {
            addr,
            reason: io.to_string(),
        },
        _ => HttpError::Io {
            addr,
            reason: io.to_string(),
        },
    }
}

/// The `Authorization` header's value, with the secret read from its file now.
fn authorization(auth: &Auth) -> Result<Secret, HttpError> {
    match auth {
        Auth::Basic {
            username,
            password_file,
        } => {
            let password = read_secret("basic_auth.password_file", password_file)?;
            let pair = format!("{username}:{}", password.expose());
            Ok(Secret::new(format!(
                "Basic {}",
                base64_encode(pair.as_bytes())
            )))
        }
        Auth::Credentials {
            kind,
            credentials_file,
        } => {
            let token = read_secret("authorization.credentials_file", credentials_file)?;
            Ok(Secret::new(format!("{kind} {}", token.expose())))
        }
    }
}

/// A secret file's content without its trailing newline (as Prometheus reads it).
pub fn read_secret(what: &'static str, path: &std::path::Path) -> Result<Secret, HttpError> {
    let text =
        capped_read::read_text(path, capped_read::SECRET_MAX, "a secret file").map_err(|e| {
            HttpError::Secret {
                what,
                path: crate::printable::path(path),
                reason: e.to_string(),
            }
        })?;
    let value = text.trim_end_matches(['\r', '\n']);
    if value.is_empty() || value.contains(['\r', '\n']) {
        return Err(HttpError::Secret {
            what,
            path: crate::printable::path(path),
            reason: "it must hold the secret on one line".into(),
        });
    }
    Ok(Secret::new(value.to_string()))
}

/// Standard base64 with padding (RFC 4648), for the Basic scheme.
fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let b = [
            group[0],
            group.get(1).copied().unwrap_or(0),
            group.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= group.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Bytes of the shared budget held by one body; given back when dropped.
#[derive(Debug)]
struct Reservation {
    pool: Arc<AtomicUsize>,
    held: usize,
}

impl Reservation {
    /// Take `n` more bytes from the budget; `false` when that would exceed it.
    fn grow(&mut self, n: usize) -> bool {
        let taken = self
            .pool
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                (used + n <= MAX_BODIES_IN_FLIGHT).then_some(used + n)
            });
        if taken.is_ok() {
            self.held += n;
        }
        taken.is_ok()
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.pool.fetch_sub(self.held, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
            ("alice:s3cr3t", "YWxpY2U6czNjcjN0"),
        ] {
            assert_eq!(base64_encode(plain.as_bytes()), encoded);
        }
    }

    #[test]
    fn the_budget_is_shared_and_given_back() {
        let pool = Arc::new(AtomicUsize::new(0));
        {
            let mut a = Reservation {
                pool: pool.clone(),
                held: 0,
            };
            assert!(a.grow(MAX_BODIES_IN_FLIGHT - 10));
            let mut b = Reservation {
                pool: pool.clone(),
                held: 0,
            };
            assert!(!b.grow(11));
            assert!(b.grow(10));
        }
        assert_eq!(pool.load(Ordering::Acquire), 0);
    }

    #[test]
    fn a_secret_file_is_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("token");
        std::fs::write(&p, "abc\n").unwrap();
        assert_eq!(read_secret("x", &p).unwrap().expose(), "abc");
        std::fs::write(&p, "abc\ndef\n").unwrap();
        assert!(read_secret("x", &p).is_err());
        let e = read_secret("basic_auth.password_file", &dir.path().join("none")).unwrap_err();
        assert!(e.to_string().contains("password_file"), "{e}");
    }
}
