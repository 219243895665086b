//! Exporter latency: scrapes of `/metrics` from concurrent clients while the engine publishes a
//! new snapshot every 250 ms (so the exposition is re-rendered as in production).
//!
//! Run with `cargo bench --bench exporter`. Prints render time and scrape latency percentiles,
//! then the same scrapes against gpulse's own server and against hyper 1.x serving the same
//! exposition, each on a runtime of its own whose threads' CPU time is read from
//! `/proc/self/task/TID/schedstat`: latency and server CPU per scrape, side by side.

#[path = "support/hyper_exporter.rs"]
mod hyper_exporter;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gpulse::backend::sim::{SimBackend, SimConfig};
use gpulse::backend::{Backend, DeviceSampler};
use gpulse::engine::{Engine, EngineConfig};
use gpulse::model::Sample;
use gpulse::output::prometheus;

const GPUS: u32 = 8;

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn report(name: &str, mut v: Vec<f64>) {
    v.sort_by(f64::total_cmp);
    println!(
        "{name:<44} n={:>7}  p50 {:>7.3} ms  p90 {:>7.3} ms  p99 {:>7.3} ms  max {:>7.3} ms",
        v.len(),
        percentile(&v, 0.5) * 1e3,
        percentile(&v, 0.9) * 1e3,
        percentile(&v, 0.99) * 1e3,
        v.last().copied().unwrap_or(0.0) * 1e3
    );
}

fn scrape(stream: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<()> {
    stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: bench\r\n\r\n")?;
    buf.clear();
    let mut chunk = [0u8; 16384];
    loop {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Err(std::io::Error::other("closed"));
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(head_end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..head_end]);
            let len: usize = head
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length").then_some(value)
                })
                .and_then(|v| v.trim().parse().ok())
                .ok_or_else(|| std::io::Error::other("no length"))?;
            if buf.len() >= head_end + 4 + len {
                return Ok(());
            }
        }
    }
}

fn clients(addr: SocketAddr, threads: usize, run: Duration, keep_alive: bool) -> Vec<f64> {
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            std::thread::spawn(move || {
                let mut lat = Vec::new();
                let mut buf = Vec::new();
                let start = Instant::now();
                let mut conn: Option<TcpStream> = None;
                while start.elapsed() < run {
                    let t = Instant::now();
                    if conn.is_none() || !keep_alive {
                        conn = TcpStream::connect(addr).ok();
                    }
                    let Some(s) = conn.as_mut() else { continue };
                    if scrape(s, &mut buf).is_ok() {
                        lat.push(t.elapsed().as_secs_f64());
                    } else {
                        conn = None;
                    }
                }
                lat
            })
        })
        .collect();
    handles
        .into_iter()
        .flat_map(|h| h.join().unwrap_or_default())
        .collect()
}

/// A two-worker runtime (as `gpulse serve` has) that records its threads' ids.
fn measured_runtime() -> (tokio::runtime::Runtime, Arc<std::sync::Mutex<Vec<i32>>>) {
    let tids = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = tids.clone();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .on_thread_start(move || {
            // `/proc/thread-self` links to `PID/task/TID` of the calling thread.
            let tid = std::fs::read_link("/proc/thread-self")
                .ok()
                .and_then(|p| p.file_name()?.to_str()?.parse::<i32>().ok());
            if let Some(tid) = tid {
                record.lock().unwrap_or_else(|p| p.into_inner()).push(tid);
            }
        })
        .enable_all()
        .build()
        .expect("runtime");
    (rt, tids)
}

/// CPU time the threads have used so far, seconds.
fn cpu_seconds(tids: &std::sync::Mutex<Vec<i32>>) -> f64 {
    let tids = tids.lock().unwrap_or_else(|p| p.into_inner()).clone();
    tids.iter()
        .filter_map(|tid| std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .sum::<f64>()
        / 1e9
}

/// The same scrapes against gpulse's server and hyper's, each on its own measured runtime.
fn compare_servers(snapshots: tokio::sync::watch::Receiver<Arc<gpulse::engine::Snapshot>>) {
    let run = Duration::from_secs(5);
    for server in ["hand-written", "hyper"] {
        let (rt, tids) = measured_runtime();
        let addr: SocketAddr = "127.0.0.1:0".parse().expect("addr");
        let rx = snapshots.clone();
        let bound = rt
            .block_on(async move {
                if server == "hyper" {
                    hyper_exporter::serve(addr, rx, Default::default()).await
                } else {
                    gpulse::output::exporter::spawn_server(addr, rx)
                        .await
                        .map(|(a, _)| a)
                }
            })
            .expect("listen");
        for n in [1, 16, 200] {
            let before = cpu_seconds(&tids);
            let lat = clients(bound, n, run, true);
            let cpu = cpu_seconds(&tids) - before;
            let scrapes = lat.len().max(1);
            report(&format!("{server}: {n} clients, keep-alive"), lat);
            println!(
                "{:<44} server CPU {:.1} µs per scrape ({:.2} s over {scrapes} scrapes)",
                "",
                cpu / scrapes as f64 * 1e6,
                cpu
            );
        }
        rt.shutdown_timeout(Duration::from_millis(200));
    }
}

fn main() {
    let cfg = SimConfig {
        gpus: GPUS,
        start: Some(gpulse::clock::now()),
        ..Default::default()
    };
    let system = SimBackend::new(cfg.clone()).system().clone();
    let mut devs = SimBackend::devices_for(&cfg);
    let mut engine = Engine::new(system, EngineConfig::default());
    let mut t = gpulse::clock::now();
    let mut tick = move |engine: &mut Engine, t: f64| {
        let gpus = devs.iter_mut().filter_map(|d| d.sample(t).ok()).collect();
        engine.ingest(Sample {
            t,
            gpus,
            sample_duration_s: Some(0.004),
            ..Default::default()
        });
    };
    for _ in 0..240 {
        t += 0.25;
        tick(&mut engine, t);
    }
    let snap = engine.snapshot();
    let mut render = Vec::new();
    let mut bytes = 0;
    for _ in 0..2000 {
        let s = Instant::now();
        let text = prometheus::render(&snap, &|_| true);
        render.push(s.elapsed().as_secs_f64());
        bytes = text.len();
    }
    println!("exposition of {GPUS} GPUs: {bytes} bytes");
    report("render (no HTTP)", render);

    let (tx, rx) = tokio::sync::watch::channel(engine.snapshot());
    let rx_compare = rx.clone();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let addr: SocketAddr = "127.0.0.1:0".parse().expect("addr");
    let (bound, _task) = rt
        .block_on(gpulse::output::exporter::spawn_server(addr, rx))
        .expect("listen");
    let stop = Arc::new(AtomicBool::new(false));
    let stop_sampler = stop.clone();
    let sampler = std::thread::spawn(move || {
        while !stop_sampler.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(250));
            t += 0.25;
            tick(&mut engine, t);
            let _ = tx.send(engine.snapshot());
        }
    });
    let run = Duration::from_secs(5);
    report("1 client, keep-alive", clients(bound, 1, run, true));
    report(
        "1 client, new connection each",
        clients(bound, 1, run, false),
    );
    report("16 clients, keep-alive", clients(bound, 16, run, true));
    report("200 clients, keep-alive", clients(bound, 200, run, true));
    report(
        "200 clients, new connection each",
        clients(bound, 200, run, false),
    );
    compare_servers(rx_compare);
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.join();
}
