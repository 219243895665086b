//! The exporter under load and under hostile clients: every scrape answered, the sampler keeps
//! ticking, bad requests get an error or a timeout, and the server never stops answering.

mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::net::{http_get, metric_value, parse_response, start_exporter};

fn samples_total(addr: SocketAddr) -> f64 {
    let (_, body) = http_get(addr, "/metrics").expect("scrape");
    metric_value(&body, "gpulse_samples_total").expect("gpulse_samples_total")
}

#[test]
fn two_hundred_concurrent_scrapers_for_ten_seconds_are_all_answered() {
    let (mut gpulse, addr) = start_exporter(&["--interval", "250ms"]);
    let before = samples_total(addr);
    let ok = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let run_for = Duration::from_secs(10);
    let threads: Vec<_> = (0..200)
        .map(|_| {
            let (ok, failed) = (ok.clone(), failed.clone());
            std::thread::spawn(move || {
                while started.elapsed() < run_for {
                    match http_get(addr, "/metrics") {
                        Ok((200, body)) if body.contains("DCGM_FI_DEV_GPU_UTIL") => {
                            ok.fetch_add(1, Ordering::Relaxed)
                        }
                        Ok((status, _)) => {
                            eprintln!("scrape answered {status}");
                            failed.fetch_add(1, Ordering::Relaxed)
                        }
                        Err(e) => {
                            eprintln!("scrape failed: {e}");
                            failed.fetch_add(1, Ordering::Relaxed)
                        }
                    };
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("scraper thread");
    }
    let elapsed = started.elapsed().as_secs_f64();
    let after = samples_total(addr);
    let (ok, failed) = (ok.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
    eprintln!("{ok} scrapes in {elapsed:.1} s, {failed} failed; sampler {before} -> {after}");
    assert_eq!(failed, 0, "every scrape is answered");
    assert!(ok >= 200, "each scraper got at least one answer: {ok}");
    // 4 ticks a second; allow a loaded 2-core machine half of them.
    assert!(
        after - before >= elapsed * 4.0 * 0.5,
        "the sampler kept ticking: {before} -> {after} in {elapsed:.1} s"
    );
    assert!(
        gpulse.0.try_wait().expect("status").is_none(),
        "still running"
    );
}

fn raw(addr: SocketAddr, bytes: &[u8]) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(15)))?;
    s.write_all(bytes)?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf)?;
    parse_response(&buf)
}

#[test]
fn hostile_clients_get_errors_or_timeouts_and_the_server_keeps_answering() {
    let (mut gpulse, addr) = start_exporter(&[]);

    assert_eq!(raw(addr, b"GARBAGE\r\n\r\n").expect("answer").0, 400);
    assert_eq!(
        raw(
            addr,
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n"
        )
        .expect("answer")
        .0,
        400
    );
    assert_eq!(
        raw(addr, b"GET /metrics HTTP/9.9\r\n\r\n")
            .expect("answer")
            .0,
        400
    );
    assert_eq!(
        raw(addr, b"POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .expect("answer")
            .0,
        405
    );
    assert_eq!(
        raw(
            addr,
            b"GET /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
        )
        .expect("answer")
        .0,
        413
    );
    let mut huge = b"GET /metrics HTTP/1.1\r\n".to_vec();
    for i in 0..2000 {
        huge.extend_from_slice(format!("X-Padding-{i}: {}\r\n", "a".repeat(40)).as_bytes());
    }
    huge.extend_from_slice(b"\r\n");
    assert_eq!(raw(addr, &huge).expect("answer").0, 431);

    // Clients that stall: one silent, one halfway through its request line, plus many idle
    // connections. Scrapes are answered meanwhile, and the stalled ones are timed out.
    let idle: Vec<TcpStream> = (0..100)
        .map(|_| TcpStream::connect(addr).expect("connect"))
        .collect();
    let mut silent = TcpStream::connect(addr).expect("connect");
    let mut partial = TcpStream::connect(addr).expect("connect");
    partial.write_all(b"GET /metr").expect("write");
    let t = Instant::now();
    let (status, _) = http_get(addr, "/metrics").expect("scrape while others stall");
    assert_eq!(status, 200);
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());

    partial
        .set_read_timeout(Some(Duration::from_secs(15)))
        .expect("timeout");
    let mut buf = Vec::new();
    partial
        .read_to_end(&mut buf)
        .expect("server closes the stalled request");
    assert_eq!(parse_response(&buf).expect("response").0, 408);
    silent
        .set_read_timeout(Some(Duration::from_secs(15)))
        .expect("timeout");
    let mut buf = Vec::new();
    let n = silent
        .read_to_end(&mut buf)
        .expect("server closes the silent connection");
    assert_eq!(n, 0, "a silent connection is closed without an answer");
    drop(idle);

    // Keep-alive: two requests on one connection.
    let mut ka = TcpStream::connect(addr).expect("connect");
    ka.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    ka.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .expect("write");
    let mut buf = Vec::new();
    ka.read_to_end(&mut buf).expect("read");
    assert_eq!(
        String::from_utf8_lossy(&buf)
            .matches("HTTP/1.1 200 OK")
            .count(),
        2
    );

    assert_eq!(http_get(addr, "/metrics").expect("scrape").0, 200);
    assert!(
        gpulse.0.try_wait().expect("status").is_none(),
        "still running"
    );
}
