//! The HTTP client and a whole refresh against a server on loopback that answers with recorded
//! Prometheus answers, and misbehaves on request: down, stalled, chunked, partly failing, not
//! Prometheus at all.

mod support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use support::api::{
    encode_query_value, raw_util_promql, refresh_once, DetectorCache, FindingKind, FleetOptions,
    PromClient, Query, Refresher, Source,
};

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Normal,
    Chunked,
    Stall,
    FailVerdicts,
    Html,
}

struct FakePrometheus {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Drop for FakePrometheus {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(support::fixture("prometheus").join(name)).unwrap()
}

/// The fixture that answers a request line, by its `query=` parameter (as the client encodes
/// each query `gpulse fleet` asks).
fn route(request_line: &str) -> &'static str {
    let q = request_line
        .split(['?', '&', ' '])
        .find_map(|p| p.strip_prefix("query="))
        .unwrap_or_default();
    let range = request_line.contains("/api/v1/query_range");
    let is = |query: Query| q == encode_query_value(&query.promql());
    // The raw samples of the GPUs without an exporter verdict (instances in the regex).
    let raw_prefix = encode_query_value(&raw_util_promql(Some(&["127.0.0.1:1940"]), 120.0));
    let raw_prefix = &raw_prefix[..raw_prefix.find("1940").unwrap_or(0)];
    match () {
        _ if range && is(Query::Util) => "util_range.json",
        _ if range && is(Query::MemoryUsed) => "memory_used_range.json",
        _ if range && is(Query::Power) => "power_range.json",
        _ if is(Query::LastSample) => "last_sample.json",
        _ if is(Query::SampleCount) => "sample_count.json",
        _ if is(Query::RecentRaw) => "recent_raw.json",
        _ if q.starts_with(raw_prefix) && q.contains("19401") => "raw_util.json",
        _ if q.starts_with(raw_prefix) => "raw_util_dcgm.json",
        _ if is(Query::MemoryFree) => "memory_free.json",
        _ if is(Query::Verdict) => "verdict.json",
        _ if is(Query::Findings) => "findings.json",
        _ if is(Query::LostFraction) => "lost_fraction.json",
        _ if is(Query::StarvationPeriod) => "starvation_period.json",
        _ if is(Query::Up) => "up.json",
        _ if is(Query::Health) => "health.json",
        _ => "error_bad_data.json",
    }
}

fn serve(mode: Mode, prefix: &'static str) -> FakePrometheus {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let stop = Arc::new(AtomicBool::new(false));
    let stop_thread = stop.clone();
    thread::spawn(move || {
        for conn in listener.incoming() {
            if stop_thread.load(Ordering::Relaxed) {
                return;
            }
            let Ok(mut conn) = conn else { continue };
            thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                let text = String::from_utf8_lossy(&head).to_string();
                let line = text.lines().next().unwrap_or_default().to_string();
                if mode == Mode::Stall {
                    thread::sleep(Duration::from_secs(5));
                    return;
                }
                let (status, body) =
                    if mode == Mode::Html || !line.contains(&format!("GET {prefix}/api/v1/")) {
                        (
                            "404 Not Found",
                            b"<html><body>404 page not found</body></html>".to_vec(),
                        )
                    } else if mode == Mode::FailVerdicts && line.contains("query=gpulse_") {
                        ("503 Service Unavailable", fixture("error_unavailable.json"))
                    } else {
                        let file = route(&line);
                        let status = if file.starts_with("error") {
                            "400 Bad Request"
                        } else {
                            "200 OK"
                        };
                        (status, fixture(file))
                    };
                let mut out =
                    format!("HTTP/1.1 {status}\r\nContent-Type: application/json\r\n").into_bytes();
                if mode == Mode::Chunked {
                    out.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
                    for piece in body.chunks(1000) {
                        out.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
                        out.extend_from_slice(piece);
                        out.extend_from_slice(b"\r\n");
                    }
                    out.extend_from_slice(b"0\r\n\r\n");
                } else {
                    out.extend_from_slice(
                        format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes(),
                    );
                    out.extend_from_slice(&body);
                }
                let _ = conn.write_all(&out);
            });
        }
    });
    FakePrometheus { port, stop }
}

fn recorded_time() -> f64 {
    let meta: serde_json::Value = serde_json::from_slice(&fixture("recorded.json")).unwrap();
    meta["time"].as_f64().unwrap()
}

fn client(port: u16, prefix: &str, timeout_s: f64) -> PromClient {
    PromClient::new(
        &format!("http://127.0.0.1:{port}{prefix}"),
        Duration::from_secs_f64(timeout_s),
    )
    .unwrap()
}

#[test]
fn a_refresh_over_http_finds_every_gpu() {
    for (mode, prefix) in [(Mode::Normal, ""), (Mode::Chunked, "/prometheus")] {
        let server = serve(mode, prefix);
        let c = client(server.port, prefix, 5.0);
        let r = refresh_once(
            &c,
            &FleetOptions::default(),
            recorded_time(),
            &mut DetectorCache::default(),
        )
        .unwrap();
        assert!(r.problems.is_empty(), "{:?}", r.problems);
        assert_eq!(r.fleet.gpu_count(), 4);
        // The GPU whose exporter reports XID 79 heads the list; then the starving one.
        let mut gpus = r.fleet.gpus();
        let first = gpus.next().unwrap();
        assert_eq!(first.health.and_then(|h| h.last_xid), Some(79));
        assert_eq!(first.source, Source::Dcgm);
        let starving = r
            .fleet
            .gpus()
            .find(|g| g.verdict == Some(FindingKind::InputStarvation))
            .unwrap();
        assert_eq!(starving.source, Source::Gpulse);
        assert_eq!(
            r.fleet.gpus().filter(|g| g.source == Source::Dcgm).count(),
            2
        );
    }
}

#[test]
fn some_queries_failing_give_partial_data_with_the_reason() {
    let server = serve(Mode::FailVerdicts, "");
    let r = refresh_once(
        &client(server.port, "", 5.0),
        &FleetOptions::default(),
        recorded_time(),
        &mut DetectorCache::default(),
    )
    .unwrap();
    assert_eq!(r.fleet.gpu_count(), 4);
    assert_eq!(r.problems.len(), 4, "{:?}", r.problems);
    assert!(r.fleet.gpus().all(|g| g.raw_util.len() >= 100));
    assert!(
        r.problems.iter().all(|p| p.contains("unavailable")),
        "{:?}",
        r.problems
    );
    // Without the exporter's verdicts every GPU is judged from its utilization.
    assert!(r
        .fleet
        .gpus()
        .all(|g| g.source == Source::Dcgm && g.verdict.is_some()));
}

#[test]
fn prometheus_down_is_an_error_that_names_the_address() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let e = refresh_once(
        &client(port, "", 2.0),
        &FleetOptions::default(),
        recorded_time(),
        &mut DetectorCache::default(),
    )
    .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains(&format!("127.0.0.1:{port}")) && msg.contains("cannot connect"),
        "{msg}"
    );
}

#[test]
fn a_stalled_server_times_out_within_the_deadline() {
    let server = serve(Mode::Stall, "");
    let started = Instant::now();
    let e = refresh_once(
        &client(server.port, "", 0.5),
        &FleetOptions::default(),
        recorded_time(),
        &mut DetectorCache::default(),
    )
    .unwrap_err();
    let took = started.elapsed();
    assert!(e.to_string().contains("did not answer within 0.5 s"), "{e}");
    // All queries run side by side: one deadline, not ten.
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[test]
fn a_server_that_is_not_prometheus_says_so() {
    let server = serve(Mode::Html, "");
    let e = refresh_once(
        &client(server.port, "", 2.0),
        &FleetOptions::default(),
        recorded_time(),
        &mut DetectorCache::default(),
    )
    .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("HTTP 404") && msg.contains("Prometheus server's address"),
        "{msg}"
    );
}

#[test]
fn the_refresher_reports_a_stall_without_blocking_its_reader() {
    let server = serve(Mode::Stall, "");
    let opts = FleetOptions {
        timeout: Duration::from_millis(400),
        refresh_s: 0.2,
        ..FleetOptions::default()
    };
    let refresher = Refresher::start(client(server.port, "", 0.4), opts).unwrap();
    let started = Instant::now();
    // While the request hangs the state says a refresh is in flight; reading it never waits.
    let mut saw_in_flight = false;
    let mut error = None;
    while started.elapsed() < Duration::from_secs(5) {
        let s = refresher.state.borrow().clone();
        saw_in_flight |= s.in_flight_since.is_some();
        if s.error.is_some() {
            error = s.error;
            assert!(s.fleet.is_none());
            break;
        }
        thread::sleep(Duration::from_millis(20));
    }
    assert!(saw_in_flight);
    let error = error.expect("the refresher published the timeout");
    assert!(error.contains("did not answer within"), "{error}");
}

#[test]
fn the_refresher_publishes_the_fleet() {
    let server = serve(Mode::Normal, "");
    let refresher =
        Refresher::start(client(server.port, "", 2.0), FleetOptions::default()).unwrap();
    let started = Instant::now();
    loop {
        let s = refresher.state.borrow().clone();
        if let Some(f) = s.fleet {
            // Evaluated now, so the recorded data is as old as the recording.
            assert_eq!(f.gpu_count(), 4);
            assert!(s.error.is_none());
            let recording_age = s.fetched_at.unwrap() - recorded_time();
            for g in f.gpus() {
                let age = g.last_sample_age_seconds.unwrap();
                assert!(
                    (age - recording_age).abs() < 2.0,
                    "{age} vs {recording_age}"
                );
            }
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no fleet published"
        );
        thread::sleep(Duration::from_millis(20));
    }
}
