//! `analyze` throughput: a synthetic 24 h, 8-GPU nvidia-smi log (`-lms 250`, the query of the
//! labelled logs in tests/data), written to a temporary file and read through the CSV reader,
//! engine and detector.
//!
//! `cargo bench --bench analyze`

use std::io::Write;
use std::time::Instant;

use gpulse::analyze::analyze_path;
use gpulse::backend::sim::Rng;
use gpulse::detector::DetectorConfig;

fn main() -> std::io::Result<()> {
    const GPUS: u32 = 8;
    let hours: f64 = std::env::var("GPULSE_BENCH_HOURS")
        .ok()
        .and_then(|h| h.parse().ok())
        .unwrap_or(24.0);
    let ticks = (hours * 3600.0 / 0.25) as u64;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("day.smi.csv");
    let gen = Instant::now();
    {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&path)?);
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
                // Half the GPUs starve (1.7 s period), the rest train steadily.
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
            let _ = h;
        }
        w.flush()?;
    }
    let size = std::fs::metadata(&path)?.len();
    println!(
        "analyze: generated {hours} h x {GPUS} GPUs = {} samples ({:.0} MB) in {:.1} s",
        ticks * GPUS as u64,
        size as f64 / 1e6,
        gen.elapsed().as_secs_f64()
    );
    // The CSV path alone: read every sample, no engine or detector.
    let cpu0 = thread_cpu_s();
    let mut source = gpulse::backend::smi_csv::SmiCsvSource::open(&path, None)
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
    // Reader and engine, with the detector evaluating once an hour: the cost around the analysis.
    let cpu0 = thread_cpu_s();
    let rare = DetectorConfig {
        eval_interval_s: 3600.0,
        ..DetectorConfig::default()
    };
    analyze_path(&path, None, &rare).map_err(|e| std::io::Error::other(e.to_string()))?;
    let cpu = thread_cpu_s() - cpu0;
    println!(
        "analyze: reader + engine, detector evaluating hourly: {rows} GPU samples in {cpu:.2} s CPU = {:.2} million samples/s",
        rows as f64 / cpu / 1e6
    );
    let start = Instant::now();
    let cpu0 = thread_cpu_s();
    let report = analyze_path(&path, None, &DetectorConfig::default())
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let secs = start.elapsed().as_secs_f64();
    let cpu = thread_cpu_s() - cpu0;
    let samples = ticks * GPUS as u64;
    println!(
        "analyze: {samples} GPU samples ({} ticks) in {secs:.2} s wall, {cpu:.2} s CPU = {:.2} million samples/s per CPU-second on one core (target >= 1; {:.2} M/s wall)",
        report.samples,
        samples as f64 / cpu / 1e6,
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

/// CPU time of this thread, seconds (wall time on a shared machine includes other processes).
fn thread_cpu_s() -> f64 {
    gpulse::clock::thread_cpu_s().unwrap_or(0.0)
}
