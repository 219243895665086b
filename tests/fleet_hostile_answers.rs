//! `fleet` against a Prometheus whose answers are well-formed but hostile: every series carrying
//! hundreds of labels, more series, points or labels than any fleet has, values that cannot be
//! (a utilization of 1e308 or -5, a lost fraction of -5), a raw sample 1e10 s in the future.
//! The answers are served on loopback; an allocator here counts the peak memory.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use gpulse::fleet::answer_limits::{AnswerLimits, KEPT_LABELS};
use gpulse::fleet::api::ApiError;
use gpulse::fleet::{refresh_once, DetectorCache, FleetOptions, PromClient, Source};

/// The system allocator, counting the bytes held now and the most held since the last reset.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged to the system allocator.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = HELD.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// One test at a time: the peak is the whole process's.
static SERIAL: Mutex<()> = Mutex::new(());

/// Serve every request with `answer(request_line)` as a 200 JSON body with its length; the port.
fn serve(answer: impl Fn(&str) -> Arc<Vec<u8>> + Send + Sync + 'static) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let answer = Arc::new(answer);
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
                let head = String::from_utf8_lossy(&head).to_string();
                let line = head.lines().next().unwrap_or_default().to_string();
                let body = answer(&decode(&line));
                let _ = write!(
                    conn,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = conn.write_all(&body);
            });
        }
    });
    port
}

/// A request line with its percent-escapes decoded.
fn decode(line: &str) -> String {
    let bytes = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let hex = |j: usize| {
            bytes
                .get(j..j + 2)
                .and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok())
        };
        match (bytes[i], hex(i + 1)) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b'+', _) => {
                out.push(b' ');
                i += 1;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn client(port: u16, timeout: Duration) -> PromClient {
    PromClient::new(&format!("http://127.0.0.1:{port}"), timeout).expect("client")
}

/// A vector answer of `n` series, each with `labels` labels besides `instance` and `gpu`.
fn wide_vector(n: usize, labels: usize) -> Vec<u8> {
    let mut out = String::from(r#"{"status":"success","data":{"resultType":"vector","result":["#);
    for i in 0..n {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&format!(r#"{{"metric":{{"instance":"n{i}:9400","gpu":"0""#));
        for l in 0..labels {
            out.push_str(&format!(r#","label_{l}":"value of label {l}""#));
        }
        out.push_str(r#"},"value":[1800000000,"50"]}"#);
    }
    out.push_str("]}}");
    out.into_bytes()
}

#[test]
fn an_answer_under_the_body_cap_keeps_only_the_labels_read_in_bounded_memory() {
    let body = wide_vector(9_000, 150);
    let size = body.len();
    assert!(size > 30 << 20 && size < 48 << 20, "{size} bytes");
    let body = Arc::new(body);
    let port = serve(move |_| body.clone());
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let before = HELD.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let answer = client(port, Duration::from_secs(60))
        .instant("DCGM_FI_DEV_GPU_UTIL", 1_800_000_000.0)
        .expect("an answer");
    let peak = PEAK.load(Ordering::Relaxed) - before;
    assert_eq!(answer.series.len(), 9_000);
    for s in &answer.series {
        assert!(s.labels.keys().all(|k| KEPT_LABELS.contains(&k.as_str())));
        assert_eq!(s.label("gpu"), Some("0"));
    }
    // The body once, and a little for what was kept (every label kept was ~10 times this).
    assert!(
        peak < size + (24 << 20),
        "{} MiB at the peak for a {} MiB answer",
        peak >> 20,
        size >> 20
    );
}

#[test]
fn more_series_points_or_labels_than_an_answer_may_hold_are_refused_naming_the_limit() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let limits = AnswerLimits::default();
    let many_points = {
        let mut out = String::from(
            r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":["#,
        );
        out.push_str(&vec![r#"[1,"1"]"#; limits.points + 1].join(","));
        out.push_str("]}]}}");
        out.into_bytes()
    };
    for (body, says) in [
        (
            wide_vector(limits.series + 1, 0),
            format!("more than {} series", limits.series),
        ),
        (many_points, format!("more than {} points", limits.points)),
        (
            wide_vector(2, limits.labels_per_series),
            format!("more than {} labels", limits.labels_per_series),
        ),
    ] {
        let body = Arc::new(body);
        let port = serve(move |_| body.clone());
        let e = client(port, Duration::from_secs(60))
            .instant("up", 1_800_000_000.0)
            .expect_err("over a limit");
        assert!(matches!(e, ApiError::TooLarge { .. }), "{e}");
        assert!(e.to_string().contains(&says), "{e}");
    }
}

const NOW: f64 = 1_800_000_000.0;

/// One dcgm-only GPU on `n1` and one gpulse GPU on `n2`, with impossible values: utilization
/// 1e308 and -5, a lost fraction of -5, a raw sample 1e10 s ahead.
fn hostile_prometheus(request: &str) -> Arc<Vec<u8>> {
    let series = |metric: &str, points: &[(f64, &str)], matrix: bool| {
        let pts: Vec<String> = points
            .iter()
            .map(|(t, v)| format!(r#"[{t},"{v}"]"#))
            .collect();
        let (kind, key, values) = if matrix {
            ("matrix", "values", format!("[{}]", pts.join(",")))
        } else {
            ("vector", "value", pts[0].clone())
        };
        format!(
            r#"{{"status":"success","data":{{"resultType":"{kind}","result":[{{"metric":{metric},"{key}":{values}}}]}}}}"#
        )
    };
    let n1 = r#"{"instance":"n1:9400","gpu":"0","Hostname":"n1"}"#;
    let raw: Vec<(f64, &str)> = (0..100)
        .map(|i| (NOW - 100.0 + i as f64, if i % 10 < 5 { "95" } else { "20" }))
        .chain([(NOW - 0.5, "-5"), (NOW - 0.2, "1e308"), (NOW + 1e10, "60")])
        .collect();
    // Utilization is asked under both of dcgm-exporter's names: the range query as
    // `DCGM_FI_DEV_GPU_UTIL or (…)`, the raw samples by `__name__`.
    let body = if request.contains("query_range?query=DCGM_FI_DEV_GPU_UTIL") {
        series(n1, &[(NOW - 10.0, "50"), (NOW, "1e308")], true)
    } else if request.contains("__name__") && request.contains("DCGM_FI_DEV_GPU_UTIL") {
        series(n1, &raw, true)
    } else if request.contains("query=gpulse_verdict&") {
        series(
            r#"{"instance":"n2:9400","gpu":"0","verdict":"input_starvation"}"#,
            &[(NOW, "1")],
            false,
        )
    } else if request.contains("query=gpulse_lost_fraction&") {
        series(
            r#"{"instance":"n2:9400","gpu":"0","kind":"input_starvation"}"#,
            &[(NOW, "-5")],
            false,
        )
    } else {
        r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#.to_string()
    };
    Arc::new(body.into_bytes())
}

#[test]
fn impossible_values_and_a_sample_far_ahead_are_dropped_and_said() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let port = serve(hostile_prometheus);
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let opts = FleetOptions {
            timeout: Duration::from_secs(5),
            ..FleetOptions::default()
        };
        let client = client(port, opts.timeout);
        let started = Instant::now();
        let r = refresh_once(&client, &opts, NOW, &mut DetectorCache::default());
        let _ = tx.send((r, started.elapsed()));
    });
    // Fed one tick per second up to 1e10 s ahead, the detector would not end for hours.
    let (refresh, took) = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the refresh ends");
    let refresh = refresh.expect("a fleet");
    assert!(took < Duration::from_secs(20), "{took:?}");
    let gpus: Vec<_> = refresh.fleet.gpus().collect();
    let dcgm = gpus.iter().find(|g| g.source == Source::Dcgm).expect("n1");
    assert_eq!(
        dcgm.utilization_gpu,
        Some(20.0),
        "the last possible reading"
    );
    assert!(dcgm.util.values.iter().flatten().all(|v| *v <= 100.0));
    let gpulse = gpus
        .iter()
        .find(|g| g.source == Source::Gpulse)
        .expect("n2");
    assert_eq!(gpulse.lost_fraction, None);
    let problems = refresh.problems.join("\n");
    for says in [
        "utilization query: dropped 1 sample(s)",
        "lost fraction query: dropped 1 sample(s)",
        "(the first: -5 at",
    ] {
        assert!(problems.contains(says), "{says}: {problems}");
    }
}

/// `fleet --json` prints a Prometheus's warnings and errors on stderr as text: the escapes
/// they carry (a new window title, a cleared screen, red text, a clipboard write) are shown,
/// not obeyed; the JSON on stdout escapes them as JSON does.
#[test]
fn a_prometheus_s_warnings_and_errors_reach_stderr_escaped() {
    let escapes = r#"\u001b]0;owned\u0007\u001b[2J\u001b[31m\u001b]52;c;ZWNobw==\u0007"#;
    let port = serve(move |request| {
        let body = if request.contains("query=up&") {
            format!(r#"{{"status":"error","errorType":"bad_data{escapes}","error":"no{escapes}"}}"#)
        } else {
            format!(
                r#"{{"status":"success","data":{{"resultType":"vector","result":[]}},"warnings":["careful{escapes}"]}}"#
            )
        };
        Arc::new(body.into_bytes())
    });
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gpulse"))
        .env("XDG_CONFIG_HOME", "/nonexistent/gpulse-test-config-home")
        .args(["fleet", "--json", "--timeout", "5", "--prometheus"])
        .arg(format!("http://127.0.0.1:{port}"))
        .output()
        .expect("run gpulse");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        !err.chars().any(|c| c.is_control() && c != '\n'),
        "raw control bytes on stderr: {err:?}"
    );
    assert!(
        err.contains("Prometheus warns: careful\\x1b]0;owned\\x07")
            && err.contains("no\\x1b]0;owned\\x07\\x1b[2J"),
        "{err}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert!(doc["warnings"].as_array().is_some_and(|w| !w.is_empty()));
}
