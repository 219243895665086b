//! The fleet client against hostile and broken servers on loopback: malformed status lines,
//! headers, chunking and JSON (property tests), huge and endless answers, answers that trickle,
//! and credentials. Every answer ends in a result or an error within the deadline, never a
//! panic, and memory stays within the caps.

mod support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::thread;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use support::api::{parse_answer, ApiError, Auth, ClientOptions, HttpError, PromClient, MAX_BODY};

/// Serve each connection with `answer(request_head, stream)` on a thread of its own; the port.
fn serve(answer: impl Fn(String, &mut std::net::TcpStream) + Send + Sync + 'static) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let answer = std::sync::Arc::new(answer);
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let answer = answer.clone();
            thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                answer(String::from_utf8_lossy(&head).to_string(), &mut conn);
            });
        }
    });
    port
}

/// Serve the same bytes to every request, then close.
fn serve_bytes(bytes: Vec<u8>) -> u16 {
    serve(move |_, conn| {
        let _ = conn.write_all(&bytes);
    })
}

fn client(port: u16, timeout: Duration) -> PromClient {
    PromClient::new(&format!("http://127.0.0.1:{port}"), timeout).expect("client")
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/prometheus")
            .join(name),
    )
    .expect("fixture")
}

#[test]
fn a_chunk_size_near_the_top_of_usize_is_an_error_not_a_panic() {
    let port = serve_bytes(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFEC\r\n{\"status\":\"success\"}\r\n0\r\n\r\n".to_vec(),
    );
    let started = Instant::now();
    let e = client(port, Duration::from_secs(2))
        .instant("up", 0.0)
        .expect_err("a chunk that cannot exist");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(
        matches!(e, ApiError::Http(_) | ApiError::BadJson { .. }),
        "{e}"
    );
}

#[test]
fn an_endless_answer_is_cut_at_the_cap() {
    let port = serve(|_, conn| {
        let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        let piece = vec![b' '; 64 * 1024];
        let mut chunk = format!("{:x}\r\n", piece.len()).into_bytes();
        chunk.extend_from_slice(&piece);
        chunk.extend_from_slice(b"\r\n");
        // Until the client hangs up: far more than the cap.
        while conn.write_all(&chunk).is_ok() {}
    });
    let e = client(port, Duration::from_secs(20))
        .instant("up", 0.0)
        .expect_err("larger than the cap");
    let msg = e.to_string();
    assert!(
        matches!(e, ApiError::Http(HttpError::TooLarge { .. })),
        "{msg}"
    );
    assert!(
        msg.contains(&format!("{} MiB", MAX_BODY / (1024 * 1024))),
        "{msg}"
    );
}

#[test]
fn a_content_length_beyond_the_cap_is_refused_before_reading() {
    let port = serve(|_, conn| {
        let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 10000000000\r\n\r\n{");
        thread::sleep(Duration::from_secs(5));
    });
    let started = Instant::now();
    let e = client(port, Duration::from_secs(4))
        .instant("up", 0.0)
        .expect_err("too large");
    assert!(
        matches!(e, ApiError::Http(HttpError::TooLarge { .. })),
        "{e}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn an_answer_that_trickles_is_cut_at_the_deadline() {
    for head_done in [false, true] {
        let port = serve(move |_, conn| {
            let head: &[u8] = if head_done {
                b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"
            } else {
                b"HTTP/1.1 200 OK\r\nX-Slow: "
            };
            let _ = conn.write_all(head);
            for _ in 0..100 {
                if conn.write_all(b"a").is_err() {
                    return;
                }
                thread::sleep(Duration::from_millis(100));
            }
        });
        let started = Instant::now();
        let e = client(port, Duration::from_millis(800))
            .instant("up", 0.0)
            .expect_err("too slow");
        let took = started.elapsed();
        assert!(e.to_string().contains("did not answer within 0.8 s"), "{e}");
        assert!(took < Duration::from_millis(1800), "{took:?}");
    }
}

#[test]
fn bearer_credentials_are_read_from_their_file_and_sent() {
    let answer = fixture("up.json");
    let port = serve(move |head, conn| {
        let authorized = head
            .lines()
            .any(|l| l.eq_ignore_ascii_case("authorization: Bearer tok-123"));
        let (status, body) = if authorized {
            ("200 OK", answer.clone())
        } else {
            ("401 Unauthorized", b"Unauthorized\n".to_vec())
        };
        let _ = write!(
            conn,
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        let _ = conn.write_all(&body);
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let token = dir.path().join("token");
    std::fs::write(&token, "tok-123\n").expect("write");
    let url = format!("http://127.0.0.1:{port}");
    let with = |auth: Option<Auth>| {
        let options = ClientOptions {
            auth,
            ..ClientOptions::default()
        };
        PromClient::with_options(&url, Duration::from_secs(2), &options).expect("client")
    };
    let bearer = Auth::Credentials {
        kind: "Bearer".into(),
        credentials_file: token.clone(),
    };
    let answer = with(Some(bearer)).instant("up", 0.0).expect("let in");
    assert!(!answer.series.is_empty());
    let e = with(None).instant("up", 0.0).expect_err("no token");
    let msg = e.to_string();
    assert!(
        msg.contains("HTTP 401") && msg.contains("authorization"),
        "{msg}"
    );
    // The token is never in a message or a Debug print.
    let debug = format!(
        "{:?}",
        with(Some(Auth::Credentials {
            kind: "Bearer".into(),
            credentials_file: token,
        }))
    );
    assert!(!debug.contains("tok-123"), "{debug}");
}

#[test]
fn an_unresolvable_host_is_an_error_within_the_deadline() {
    let started = Instant::now();
    let e = PromClient::new("http://gpulse-test.invalid:9090", Duration::from_secs(2))
        .expect("client")
        .instant("up", 0.0)
        .expect_err("no such host");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    let msg = e.to_string();
    assert!(msg.contains("gpulse-test.invalid"), "{msg}");
}

/// A response head: a status line (valid or not) and headers (valid, odd or contradictory).
fn status_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("HTTP/1.1 200 OK".to_string()),
        (100u16..1000).prop_map(|s| format!("HTTP/1.1 {s} Whatever")),
        "HTTP/[0-9.]{0,4} [0-9]{0,6}[ -~]{0,12}",
        "[ -~]{0,40}",
    ]
}

fn header() -> impl Strategy<Value = String> {
    prop_oneof![
        "[-0-9a-fxX +]{0,24}".prop_map(|v| format!("Content-Length: {v}")),
        prop_oneof![
            Just("chunked"),
            Just("gzip"),
            Just("chunked, chunked"),
            Just("identity"),
            Just("gzip, chunked")
        ]
        .prop_map(|v| format!("Transfer-Encoding: {v}")),
        "[A-Za-z-]{1,12}: [ -~]{0,30}",
        "[ -~]{0,30}",
    ]
}

/// A body: chunks with sizes that lie (huge, negative, not hex) or raw bytes.
fn body() -> impl Strategy<Value = Vec<u8>> {
    let chunk_size = prop_oneof![
        Just("FFFFFFFFFFFFFFEC".to_string()),
        Just("FFFFFFFFFFFFFFFF".to_string()),
        Just("10000000000000000".to_string()),
        Just("-1".to_string()),
        (0usize..64).prop_map(|n| format!("{n:x}")),
        "[0-9a-fA-F;= ]{0,20}",
    ];
    let chunk = (chunk_size, prop::collection::vec(any::<u8>(), 0..48)).prop_map(|(size, data)| {
        [format!("{size}\r\n").into_bytes(), data, b"\r\n".to_vec()].concat()
    });
    prop_oneof![
        prop::collection::vec(chunk, 0..4)
            .prop_map(|c| [c.concat(), b"0\r\n\r\n".to_vec()].concat()),
        prop::collection::vec(any::<u8>(), 0..256),
    ]
}

/// A valid answer with bytes replaced and its end cut off.
fn mangled_json() -> impl Strategy<Value = Vec<u8>> {
    let base = fixture("verdict.json");
    let len = base.len();
    (prop::collection::vec((0..len, any::<u8>()), 0..8), 0..=len).prop_map(move |(edits, cut)| {
        let mut b = base.clone();
        for (i, v) in edits {
            b[i] = v;
        }
        b.truncate(cut);
        b
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn any_malformed_answer_is_a_result_or_an_error_within_the_deadline(
        status in status_line(),
        headers in prop::collection::vec(header(), 0..5),
        body in body(),
    ) {
        let mut bytes = format!("{status}\r\n{}\r\n", headers.iter().map(|h| format!("{h}\r\n")).collect::<String>()).into_bytes();
        bytes.extend_from_slice(&body);
        let port = serve_bytes(bytes);
        let started = Instant::now();
        let outcome = client(port, Duration::from_secs(1)).instant("up", 0.0);
        prop_assert!(started.elapsed() < Duration::from_secs(3));
        // Only a well-formed Prometheus answer can succeed, and none of these bodies is one.
        prop_assert!(outcome.is_err() || status.starts_with("HTTP/1."));
    }

    #[test]
    fn any_json_answer_parses_or_is_an_error_that_says_what(
        status in 100u16..600,
        body in mangled_json(),
    ) {
        match parse_answer(status, &body) {
            // An edit may leave valid JSON: then at most the fixture's series come back.
            Ok(a) => prop_assert!(a.series.len() <= 28),
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    #[test]
    fn any_bytes_parse_or_are_an_error_that_says_what(
        body in prop::collection::vec(any::<u8>(), 0..512),
    ) {
        if let Err(e) = parse_answer(200, &body) {
            prop_assert!(!e.to_string().is_empty());
        }
    }
}
