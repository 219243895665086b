use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Instant;

use super::*;
use crate::engine::{Engine, EngineConfig};
use crate::model::{DeviceInfo, GpuReading, Sample, SystemInfo};

fn snapshots() -> watch::Receiver<Arc<Snapshot>> {
    let system = SystemInfo {
        hostname: "h".into(),
        devices: vec![DeviceInfo {
            index: 0,
            name: "GPU".into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut engine = Engine::new(system, EngineConfig::default());
    engine.ingest(Sample {
        t: crate::clock::now(),
        gpus: vec![GpuReading::empty(0, Default::default())],
        ..Default::default()
    });
    let (tx, rx) = watch::channel(engine.snapshot());
    // The sender lives as long as the test process: the server sees a channel that stays open.
    std::mem::forget(tx);
    rx
}

/// A server on its own runtime thread, on a free loopback port.
fn start(limits: Limits, security: WebSecurity) -> (SocketAddr, tokio::runtime::Runtime) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let addr = "127.0.0.1:0".parse().expect("addr");
    let (bound, _task) = rt
        .block_on(serve(
            addr,
            snapshots(),
            ExportView {
                show: Arc::new(|_| true),
                names: Default::default(),
            },
            limits,
            security,
        ))
        .expect("listen");
    (bound, rt)
}

fn short_limits() -> Limits {
    Limits {
        head_timeout: Duration::from_millis(400),
        idle_timeout: Duration::from_millis(300),
        ..Limits::default()
    }
}

fn status_of(response: &[u8]) -> Option<u16> {
    let text = String::from_utf8_lossy(response);
    text.split(' ').nth(1).and_then(|s| s.parse().ok())
}

fn get(addr: SocketAddr, extra_header: &str) -> Option<u16> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: x\r\n{extra_header}Connection: close\r\n\r\n"
    )
    .ok()?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).ok()?;
    status_of(&buf)
}

#[test]
fn a_trickling_head_is_cut_off_at_its_deadline_not_kept_alive_by_each_byte() {
    let (addr, _rt) = start(short_limits(), WebSecurity::default());
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_millis(20)))
        .expect("timeout");
    let started = Instant::now();
    let mut answer = Vec::new();
    // One byte every 50 ms: each read is quick, the head never ends.
    for byte in b"GET /metrics HTTP/1.1\r\nX-Slow: ".iter().cycle() {
        if s.write_all(&[*byte]).is_err() {
            break;
        }
        let mut buf = [0u8; 512];
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
        assert!(started.elapsed() < Duration::from_secs(3), "never cut off");
        std::thread::sleep(Duration::from_millis(30));
    }
    let took = started.elapsed();
    assert_eq!(status_of(&answer), Some(408));
    assert!(
        took >= Duration::from_millis(350) && took < Duration::from_millis(1500),
        "{took:?}"
    );
}

#[test]
fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let (addr, _rt) = start(short_limits(), WebSecurity::default());
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("write");
    let mut buf = [0u8; 4096];
    let n = s.read(&mut buf).expect("answer");
    assert_eq!(status_of(&buf[..n]), Some(200));
    let started = Instant::now();
    assert_eq!(s.read(&mut buf).expect("closed"), 0);
    let idle = started.elapsed();
    assert!(
        idle >= Duration::from_millis(250) && idle < Duration::from_secs(2),
        "{idle:?}"
    );
}

#[test]
fn a_full_server_makes_room_for_a_scrape() {
    let limits = Limits {
        max_connections: 8,
        head_timeout: Duration::from_secs(30),
        ..Limits::default()
    };
    let (addr, _rt) = start(limits, WebSecurity::default());
    // Twice as many stalled clients as the server takes, all halfway through a head.
    let stalled: Vec<TcpStream> = (0..16)
        .map(|_| {
            let mut s = TcpStream::connect(addr).expect("connect");
            s.write_all(b"GET /metr").expect("write");
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    let started = Instant::now();
    assert_eq!(get(addr, ""), Some(200));
    assert!(started.elapsed() < Duration::from_secs(2));
    // The oldest stalled clients were closed to make room.
    let mut first = &stalled[0];
    first
        .set_read_timeout(Some(Duration::from_secs(2)))
        .expect("timeout");
    let mut buf = [0u8; 64];
    // Closed: an end of stream, or a reset where the kernel still held bytes of the head the
    // server had not read when it closed the socket.
    match first.read(&mut buf) {
        Ok(n) => assert_eq!(n, 0, "the oldest stalled client is closed"),
        Err(e) => assert!(
            matches!(
                e.kind(),
                std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted
            ),
            "closed, not {e}"
        ),
    }
}

#[test]
fn listed_users_are_let_in_and_others_get_401() {
    let hash = bcrypt::hash("s3cr3t", 4).expect("hash");
    let users =
        auth::BasicAuthUsers::new(&BTreeMap::from([("alice".to_string(), hash)])).expect("valid");
    let security = WebSecurity {
        users: Some(Arc::new(users)),
        ..WebSecurity::default()
    };
    let (addr, _rt) = start(Limits::default(), security);
    assert_eq!(get(addr, ""), Some(401));
    assert_eq!(
        get(addr, "Authorization: Basic YWxpY2U6d3Jvbmc=\r\n"),
        Some(401)
    );
    assert_eq!(
        get(addr, "Authorization: Basic YWxpY2U6czNjcjN0\r\n"),
        Some(200)
    );
}

/// Under a flood of wrong passwords a request whose check cannot run in time is told to come
/// back (429 with Retry-After), never that its right password is wrong; once the flood ends,
/// the right password gets in.
#[test]
fn a_wrong_password_flood_answers_its_excess_429_never_a_wrong_401() {
    let hash = bcrypt::hash("s3cr3t", 10).expect("hash");
    let users =
        auth::BasicAuthUsers::new(&BTreeMap::from([("alice".to_string(), hash)])).expect("valid");
    let users = Arc::new(users);
    let security = WebSecurity {
        users: Some(users.clone()),
        ..WebSecurity::default()
    };
    let (addr, _rt) = start(short_limits(), security);
    let (wrong, right) = ("Basic YWxpY2U6d3Jvbmc=", "Basic YWxpY2U6czNjcjN0");
    let clients: Vec<_> = (0..40)
        .map(|i| {
            let header = format!(
                "Authorization: {}\r\n",
                if i % 8 == 7 { right } else { wrong }
            );
            std::thread::spawn(move || (i % 8 == 7, get(addr, &header)))
        })
        .collect();
    let mut busy = 0;
    for c in clients {
        let (is_right, status) = c.join().expect("client");
        match (is_right, status) {
            (_, Some(429)) => busy += 1,
            (true, Some(200)) | (false, Some(401)) => {}
            other => panic!("right password {}: {other:?}", other.0),
        }
    }
    assert!(busy > 0, "the flood's excess is told to come back");
    assert!(users.most_checks_at_once() <= auth::CHECKS_AT_ONCE);
    let deadline = Instant::now() + Duration::from_secs(30);
    while get(addr, &format!("Authorization: {right}\r\n")) != Some(200) {
        assert!(Instant::now() < deadline, "the right password never got in");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Connects that come faster than the server accepts them wait in the kernel's queue: a burst
/// of them all complete at once (with tokio's default queue of 128 the rest would have their
/// SYNs dropped and wait a second to try again). Nothing accepts here, so only the queue holds
/// them.
#[test]
fn a_burst_of_connects_waits_in_the_listen_queue() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let listener = rt
        .block_on(async { listen("127.0.0.1:0".parse().expect("addr")) })
        .expect("listen");
    let addr = listener.local_addr().expect("addr");
    let somaxconn: usize = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(4096);
    let burst = somaxconn.min(1000);
    assert!(
        burst > 200,
        "net.core.somaxconn = {somaxconn} caps every listen queue below what this test bursts"
    );
    let mut open = Vec::with_capacity(burst);
    for i in 0..burst {
        match TcpStream::connect_timeout(&addr, Duration::from_millis(500)) {
            Ok(s) => open.push(s),
            Err(e) => panic!("connect {i} of {burst} did not complete: {e}"),
        }
    }
    assert_eq!(open.len(), burst);
}
