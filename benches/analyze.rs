//! `analyze` throughput: a synthetic 8-GPU nvidia-smi log (`-lms 250`, the query of the labelled
//! logs in tests/data) of a million GPU samples by default, written to a temporary file and read
//! through the CSV reader, engine and detector; then `gpulse analyze --json` itself on the log
//! and on its first half, with its peak memory (flat in the file's length).
//!
//! `cargo bench --bench analyze` (`GPULSE_BENCH_SAMPLES=N` for another length)

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use gpulse::analyze::analyze_path;
use gpulse::backend::sim::Rng;
use gpulse::detector::DetectorConfig;

const GPUS: u64 = 8;

fn main() -> std::io::Result<()> {
    let samples: u64 = std::env::var("GPULSE_BENCH_SAMPLES")
        .ok()
        .and_then(|h| h.parse().ok())
        .unwrap_or(1_000_000);
    let ticks = samples / GPUS;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("log.smi.csv");
    let half = dir.path().join("half.smi.csv");
    let gen = Instant::now();
    write_log(&path, ticks)?;
    write_log(&half, ticks / 2)?;
    let size = std::fs::metadata(&path)?.len();
    println!(
        "analyze: generated {ticks} ticks x {GPUS} GPUs = {samples} samples ({:.0} MB, {:.1} h at 250 ms) in {:.1} s",
        size as f64 / 1e6,
        ticks as f64 * 0.25 / 3600.0,
        gen.elapsed().as_secs_f64()
    );
    in_process(&path, samples)?;
    for (file, n) in [(&half, samples / 2), (&path, samples)] {
        let run = run_binary(file)?;
        println!(
            "analyze: `gpulse analyze --json` of {n} samples: {:.2} s wall, {:.2} s CPU = {:.2} million samples/s (wall), peak memory {:.1} MB",
            run.wall_s,
            run.cpu_s,
            n as f64 / run.wall_s / 1e6,
            run.max_rss_kb as f64 / 1024.0
        );
    }
    Ok(())
}

/// The reader alone, then reader, engine and detector, in this process (CPU of this thread;
/// wall time of the whole analysis).
fn in_process(path: &Path, samples: u64) -> std::io::Result<()> {
    let err = |e: gpulse::analyze::AnalyzeError| std::io::Error::other(e.to_string());
    let cpu0 = thread_cpu_s();
    let mut source = gpulse::backend::smi_csv::SmiCsvSource::open(path, None)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let mut rows = 0u64;
    while let Some(s) = gpulse::backend::SampleSource::next_sample(&mut source) {
        rows += s.gpus.len() as u64;
    }
    let cpu = thread_cpu_s() - cpu0;
    println!(
        "analyze: CSV reader alone: {rows} GPU samples in {cpu:.2} s CPU = {:.2} million samples/s",
        rows as f64 / cpu / 1e6
    );
    let start = Instant::now();
    let report = analyze_path(path, None, &DetectorConfig::default()).map_err(err)?;
    let secs = start.elapsed().as_secs_f64();
    println!(
        "analyze: in process, reader + engine + detector: {samples} GPU samples ({} ticks) in {secs:.2} s wall = {:.2} million samples/s",
        report.samples,
        samples as f64 / secs / 1e6
    );
    for g in &report.gpus {
        println!(
            "analyze: GPU {} verdict {} ({} findings)",
            g.index,
            g.verdict,
            g.findings.len()
        );
    }
    Ok(())
}

/// What one run of the binary cost.
struct Run {
    wall_s: f64,
    cpu_s: f64,
    max_rss_kb: i64,
}

/// `gpulse analyze --json FILE`, its output discarded: wall time, CPU time and peak resident
/// memory of the process.
fn run_binary(file: &Path) -> std::io::Result<Run> {
    let start = Instant::now();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_gpulse"))
        .args(["analyze", "--json"])
        .arg(file)
        .env("XDG_CONFIG_HOME", "/nonexistent/gpulse-bench-config")
        .stdout(std::process::Stdio::null())
        .spawn()?;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, writing into the two locals above.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    let wall_s = start.elapsed().as_secs_f64();
    if pid < 0 || status != 0 {
        return Err(std::io::Error::other(format!(
            "gpulse analyze failed (status {status})"
        )));
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Ok(Run {
        wall_s,
        cpu_s: secs(usage.ru_utime) + secs(usage.ru_stime),
        max_rss_kb: usage.ru_maxrss,
    })
}

/// `ticks` ticks of 8 GPUs 250 ms apart: half the GPUs starve (1.7 s period), the rest train
/// steadily.
fn write_log(path: &Path, ticks: u64) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    writeln!(w, "timestamp, index, utilization.gpu [%], utilization.memory [%], memory.used [MiB], memory.total [MiB], power.draw [W], clocks.current.sm [MHz], temperature.gpu, pcie.link.gen.current, pcie.link.width.current")?;
    let mut rng = Rng::new(5);
    let start = jiff::civil::date(2026, 12, 2).at(0, 0, 0, 0);
    let mut hour_prefix = String::new();
    for k in 0..ticks {
        let ms = k * 250;
        let (h, m, s, frac) = (
            ms / 3_600_000,
            (ms / 60_000) % 60,
            (ms / 1000) % 60,
            ms % 1000,
        );
        if ms % 3_600_000 == 0 {
            let dt = start
                .checked_add(jiff::SignedDuration::from_hours(h as i64))
                .unwrap_or(start);
            hour_prefix = dt.strftime("%Y/%m/%d %H").to_string();
        }
        let t = ms as f64 / 1000.0;
        for g in 0..GPUS {
            let u = if g % 2 == 0 {
                if (t % 1.7) < 0.7 {
                    90
                } else {
                    0
                }
            } else {
                (99.0 + rng.noise(0.5)).round().clamp(0.0, 100.0) as u32
            };
            writeln!(
                w,
                "{hour_prefix}:{m:02}:{s:02}.{frac:03}, {g}, {u} %, {} %, 40000 MiB, 143771 MiB, {:.2} W, 1980 MHz, 45, 5, 16",
                u / 2,
                130.0 + 4.7 * u as f64
            )?;
        }
    }
    w.flush()
}

/// CPU time of this thread, seconds (wall time on a shared machine includes other processes).
fn thread_cpu_s() -> f64 {
    gpulse::clock::thread_cpu_s().unwrap_or(0.0)
}
