//! The waste ledger in the exposition: counters that only grow, so that Prometheus's
//! `increase()` gives the ledger over any range, across restarts of the exporter.
//!
//! Labels are bounded: the GPU's index and one of the fixed kinds; per job, the job's labels as
//! dcgm-exporter writes them (`pod`, `namespace`, `container`, and `slurm_job`), at most
//! [`crate::ledger::jobs::MAX_JOBS`] per GPU. Processes and users stay in the snapshot, never in
//! labels. A series appears once it has time (or energy) booked and stays.

use std::fmt::Write as _;

use crate::engine::GpuSnapshot;

/// The ledger's series, in the order they are written.
pub const LEDGER_METRICS: &[&str] = &[
    "gpulse_gpu_seconds_total",
    "gpulse_lost_gpu_seconds_total",
    "gpulse_energy_joules_total",
    "gpulse_job_gpu_seconds_total",
    "gpulse_job_lost_gpu_seconds_total",
    "gpulse_job_energy_joules_total",
];

fn header(out: &mut String, name: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} counter");
}

/// Write the ledger counters of `gpus`; a counter with no series yet is left out.
pub fn render(out: &mut String, gpus: &[&GpuSnapshot]) {
    let seconds: Vec<(u32, &str, f64)> = gpus
        .iter()
        .flat_map(|g| {
            g.ledger
                .seconds_by_verdict
                .iter()
                .map(|(k, s)| (g.info.index, k.as_str(), s))
        })
        .collect();
    if !seconds.is_empty() {
        header(
            out,
            "gpulse_gpu_seconds_total",
            "Seconds each GPU spent under each verdict since the exporter started.",
        );
        for (gpu, verdict, s) in seconds {
            let _ = writeln!(
                out,
                "gpulse_gpu_seconds_total{{gpu=\"{gpu}\",verdict=\"{verdict}\"}} {s}"
            );
        }
    }
    let lost: Vec<(u32, &str, f64)> = gpus
        .iter()
        .flat_map(|g| {
            g.ledger
                .lost_by_kind
                .iter()
                .map(|(k, s)| (g.info.index, k.as_str(), s))
        })
        .collect();
    if !lost.is_empty() {
        header(
            out,
            "gpulse_lost_gpu_seconds_total",
            "GPU-seconds lost, by the kind of bottleneck that lost them, since the exporter started.",
        );
        for (gpu, kind, s) in lost {
            let _ = writeln!(
                out,
                "gpulse_lost_gpu_seconds_total{{gpu=\"{gpu}\",kind=\"{kind}\"}} {s}"
            );
        }
    }
    // Only settled energy: what a later counter read cannot lower.
    let energy: Vec<(u32, f64)> = gpus
        .iter()
        .filter_map(|g| g.ledger.energy.map(|e| (g.info.index, e.settled())))
        .collect();
    if !energy.is_empty() {
        header(
            out,
            "gpulse_energy_joules_total",
            "Energy each GPU drew since the exporter started (joules).",
        );
        for (gpu, j) in energy {
            let _ = writeln!(out, "gpulse_energy_joules_total{{gpu=\"{gpu}\"}} {j}");
        }
    }
    render_jobs(out, gpus);
}

/// The per-job counters: GPU-seconds, lost GPU-seconds and (settled) energy of each job's row.
fn render_jobs(out: &mut String, gpus: &[&GpuSnapshot]) {
    type Read = fn(&crate::ledger::JobLedger) -> Option<f64>;
    let counters: [(&str, &str, Read); 3] = [
        (
            "gpulse_job_gpu_seconds_total",
            "GPU-seconds each pod, container or Slurm job held on each GPU since the exporter started.",
            |j| Some(j.gpu_seconds),
        ),
        (
            "gpulse_job_lost_gpu_seconds_total",
            "GPU-seconds each pod, container or Slurm job lost on each GPU since the exporter started.",
            |j| Some(j.lost_gpu_seconds),
        ),
        (
            "gpulse_job_energy_joules_total",
            "Energy each pod, container or Slurm job drew on each GPU since the exporter started (joules).",
            |j| Some(j.energy.settled()).filter(|e| *e > 0.0),
        ),
    ];
    for (name, help, read) in counters {
        let lines: Vec<String> = gpus
            .iter()
            .flat_map(|g| {
                g.ledger.jobs.iter().filter_map(move |j| {
                    let labels: String = j
                        .job
                        .labels()
                        .into_iter()
                        .map(|(k, v)| format!(",{k}=\"{}\"", super::prometheus::escape(&v)))
                        .collect();
                    read(j).map(|v| format!("{name}{{gpu=\"{}\"{labels}}} {v}", g.info.index))
                })
            })
            .collect();
        if lines.is_empty() {
            continue;
        }
        header(out, name, help);
        for l in lines {
            let _ = writeln!(out, "{l}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Engine, EngineConfig};
    use crate::model::{DeviceInfo, GpuProcess, GpuReading, Metrics, Sample, SystemInfo};

    /// `ticks` ticks 250 ms apart of one GPU idle at 100 W held by a process, with an energy
    /// counter drawing 120 W read every 5 s.
    fn exposition_after(engine: &mut Engine, from: usize, ticks: usize) -> String {
        for k in from..from + ticks {
            let t = 1000.0 + k as f64 * 0.25;
            engine.ingest(Sample {
                t,
                gpus: vec![GpuReading {
                    index: 0,
                    metrics: Metrics {
                        util_gpu: Some(0.0),
                        power_w: Some(100.0),
                        energy_j: Some(120.0 * ((t - 1000.0) / 5.0).floor() * 5.0),
                        ..Default::default()
                    },
                    processes: vec![GpuProcess {
                        pid: 42,
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            });
        }
        let s = engine.snapshot();
        let shown: Vec<&GpuSnapshot> = s.gpus.iter().collect();
        let mut out = String::new();
        render(&mut out, &shown);
        out
    }

    fn value(text: &str, series: &str) -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(series))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("{series} in {text}"))
    }

    #[test]
    fn ledger_counters_grow_with_bounded_labels() {
        let system = SystemInfo {
            devices: vec![DeviceInfo::default()],
            ..Default::default()
        };
        let mut engine = Engine::new(system, EngineConfig::default());
        let first = exposition_after(&mut engine, 0, 41);
        // 10 s with a process holding the GPU idle: under `pending` until the detector has the
        // job's first seconds, then `idle`; all of it lost, under the verdict shown.
        let pending = "gpulse_gpu_seconds_total{gpu=\"0\",verdict=\"pending\"}";
        let idle = "gpulse_gpu_seconds_total{gpu=\"0\",verdict=\"idle\"}";
        let lost_pending = "gpulse_lost_gpu_seconds_total{gpu=\"0\",kind=\"pending\"}";
        let lost = "gpulse_lost_gpu_seconds_total{gpu=\"0\",kind=\"idle\"}";
        let energy = "gpulse_energy_joules_total{gpu=\"0\"}";
        let booked = value(&first, pending) + value(&first, idle);
        assert!((booked - 10.0).abs() < 1e-9, "{first}");
        let lost_s = value(&first, lost_pending) + value(&first, lost);
        assert!((lost_s - 10.0).abs() < 1e-9, "{first}");
        assert!(value(&first, pending) > 0.0 && value(&first, idle) > 0.0);
        // Every label is one of the fixed kinds.
        for line in first.lines().filter(|l| !l.starts_with('#')) {
            let label = line
                .split(['"'])
                .skip_while(|p| !p.ends_with("verdict=") && !p.ends_with("kind="))
                .nth(1);
            if let Some(k) = label {
                assert!(crate::model::FindingKind::parse(k).is_some(), "{line}");
            }
        }
        // The counter's 1200 J, settled at its reads.
        assert!((value(&first, energy) - 1200.0).abs() < 1e-6, "{first}");
        assert!(first.contains("# TYPE gpulse_energy_joules_total counter"));
        assert!(!first.contains("pid"));
        let later = exposition_after(&mut engine, 41, 10);
        for series in [pending, idle, lost_pending, lost, energy] {
            assert!(value(&later, series) >= value(&first, series), "{series}");
        }
    }
}
