//! The Prometheus exposition of a [`Snapshot`] (text format 0.0.4), and the exporter that serves it.
//!
//! Device metrics use dcgm-exporter's names, units and labels (`gpu`, `UUID`, `device`,
//! `modelName`, `Hostname`), so dashboards built for it keep working: memory in MiB, `PROF` activity
//! as a 0–1 ratio. gpulse's own series (`gpulse_*`) carry findings, verdicts and the monitor's
//! health. A reading that is absent (unsupported, or the GPU did not answer this tick) is left out,
//! never written as 0.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::watch;

use crate::engine::{GpuSnapshot, Snapshot};
use crate::model::{FindingKind, GpuStatus, Metrics};

const MIB: f64 = (1u64 << 20) as f64;

/// The exposition's content type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// One device metric: name, help, type, and how to read it from the readings.
struct DeviceMetric {
    name: &'static str,
    help: &'static str,
    read: fn(&Metrics) -> Option<f64>,
}

fn ratio(v: Option<f64>) -> Option<f64> {
    v.map(|p| p / 100.0)
}

const DEVICE_METRICS: &[DeviceMetric] = &[
    DeviceMetric {
        name: "DCGM_FI_DEV_GPU_UTIL",
        help: "GPU utilization (in %).",
        read: |m| m.util_gpu,
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_MEM_COPY_UTIL",
        help: "Memory utilization (in %).",
        read: |m| m.util_mem,
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_FB_USED",
        help: "Framebuffer memory used (in MiB).",
        read: |m| m.mem_used_bytes.map(|b| (b as f64 / MIB).round()),
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_FB_FREE",
        help: "Framebuffer memory free (in MiB).",
        read: |m| match (m.mem_total_bytes, m.mem_used_bytes) {
            (Some(t), Some(u)) => Some((t.saturating_sub(u) as f64 / MIB).round()),
            _ => None,
        },
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_FB_TOTAL",
        help: "Framebuffer memory total (in MiB).",
        read: |m| m.mem_total_bytes.map(|b| (b as f64 / MIB).round()),
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_POWER_USAGE",
        help: "Power draw (in W).",
        read: |m| m.power_w,
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_POWER_MGMT_LIMIT",
        help: "Power management limit (in W).",
        read: |m| m.power_limit_w,
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_GPU_TEMP",
        help: "GPU temperature (in C).",
        read: |m| m.temp_c,
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_SM_CLOCK",
        help: "SM clock frequency (in MHz).",
        read: |m| m.sm_clock_mhz.map(f64::from),
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_MEM_CLOCK",
        help: "Memory clock frequency (in MHz).",
        read: |m| m.mem_clock_mhz.map(f64::from),
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_FAN_SPEED",
        help: "Fan speed (in %).",
        read: |m| m.fan_pct.map(f64::from),
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_PSTATE",
        help: "Performance state (0 fastest to 15 slowest).",
        read: |m| m.pstate.map(f64::from),
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_PCIE_LINK_GEN",
        help: "Current PCIe link generation.",
        read: |m| m.pcie_gen.map(f64::from),
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_PCIE_LINK_WIDTH",
        help: "Current PCIe link width (lanes).",
        read: |m| m.pcie_width.map(f64::from),
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
        help: "Current clock throttle reasons (bitmask of NVML's clock event reasons).",
        read: |m| m.throttle.map(|b| b as f64),
    },
    DeviceMetric {
        name: "DCGM_FI_PROF_SM_ACTIVE",
        help: "The ratio of cycles an SM has at least 1 warp assigned (0-1).",
        read: |m| ratio(m.sm_active),
    },
    DeviceMetric {
        name: "DCGM_FI_PROF_SM_OCCUPANCY",
        help: "The ratio of number of warps resident on an SM to the maximum (0-1).",
        read: |m| ratio(m.sm_occupancy),
    },
    DeviceMetric {
        name: "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        help: "Ratio of cycles the tensor (HMMA) pipe is active (0-1).",
        read: |m| ratio(m.tensor_active),
    },
    DeviceMetric {
        name: "DCGM_FI_PROF_DRAM_ACTIVE",
        help:
            "Ratio of cycles the device memory interface is active sending or receiving data (0-1).",
        read: |m| ratio(m.dram_active),
    },
    DeviceMetric {
        name: "DCGM_FI_PROF_PCIE_RX_BYTES",
        help: "The rate of data received over the PCIe bus, including headers (in B/s).",
        read: |m| m.pcie_rx_bytes_per_s,
    },
    DeviceMetric {
        name: "DCGM_FI_PROF_PCIE_TX_BYTES",
        help: "The rate of data transmitted over the PCIe bus, including headers (in B/s).",
        read: |m| m.pcie_tx_bytes_per_s,
    },
];

/// gpulse's own series, in the order they are written.
pub const GPULSE_METRICS: &[&str] = &[
    "gpulse_gpu_up",
    "gpulse_verdict",
    "gpulse_finding_active",
    "gpulse_lost_fraction",
    "gpulse_starvation_period_seconds",
    "gpulse_host_cpu_percent",
    "gpulse_host_memory_used_bytes",
    "gpulse_host_memory_total_bytes",
    "gpulse_host_load1",
    "gpulse_host_iowait_percent",
    "gpulse_sample_duration_seconds",
    "gpulse_samples_total",
    "gpulse_errors_total",
    "gpulse_interval_seconds",
    "gpulse_last_sample_timestamp_seconds",
];

/// Every metric name the exporter can write.
pub fn metric_names() -> Vec<&'static str> {
    DEVICE_METRICS
        .iter()
        .map(|m| m.name)
        .chain(GPULSE_METRICS.iter().copied())
        .collect()
}

/// Escape a label value (backslash, double quote, newline).
pub fn escape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

fn gpu_labels(g: &GpuSnapshot, hostname: &str) -> String {
    format!(
        "gpu=\"{}\",UUID=\"{}\",pci_bus_id=\"{}\",device=\"nvidia{}\",modelName=\"{}\",Hostname=\"{}\"",
        g.info.index,
        escape(g.info.uuid.as_deref().unwrap_or("")),
        escape(g.info.bus_id.as_deref().unwrap_or("")),
        g.info.index,
        escape(&g.info.name),
        escape(hostname)
    )
}

/// A float as Prometheus writes it.
fn num(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        }
    } else {
        format!("{v}")
    }
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// The exposition of one snapshot, keeping only the GPUs `show` accepts.
pub fn render(s: &Snapshot, show: &dyn Fn(u32) -> bool) -> String {
    let mut out = String::with_capacity(8 * 1024);
    let host = s.system.hostname.as_str();
    let gpus: Vec<(&GpuSnapshot, String)> = s
        .gpus
        .iter()
        .filter(|g| show(g.info.index))
        .map(|g| (g, gpu_labels(g, host)))
        .collect();
    let answered = |g: &GpuSnapshot| g.status == GpuStatus::Ok;

    for m in DEVICE_METRICS {
        let values: Vec<(&String, f64)> = gpus
            .iter()
            .filter(|(g, _)| answered(g))
            .filter_map(|(g, l)| (m.read)(&g.current).map(|v| (l, v)))
            .collect();
        if values.is_empty() {
            continue;
        }
        header(&mut out, m.name, "gauge", m.help);
        for (l, v) in values {
            let _ = writeln!(out, "{}{{{l}}} {}", m.name, num(v));
        }
    }

    header(
        &mut out,
        "gpulse_gpu_up",
        "gauge",
        "1 when the GPU answered the newest tick, 0 when it is stale or lost.",
    );
    for (g, l) in &gpus {
        let _ = writeln!(out, "gpulse_gpu_up{{{l}}} {}", u8::from(answered(g)));
    }

    header(
        &mut out,
        "gpulse_verdict",
        "gauge",
        "The detector's current verdict of each GPU (1 for the current one, 0 for the others).",
    );
    for (g, _) in &gpus {
        for k in FindingKind::ALL {
            let _ = writeln!(
                out,
                "gpulse_verdict{{gpu=\"{}\",verdict=\"{}\"}} {}",
                g.info.index,
                k.as_str(),
                u8::from(g.verdict == k)
            );
        }
    }

    header(
        &mut out,
        "gpulse_finding_active",
        "gauge",
        "1 while a finding of this kind is active on the GPU (severity \"none\" when it is not).",
    );
    for (g, _) in &gpus {
        for k in FindingKind::ALL {
            let active = g
                .findings
                .iter()
                .filter(|f| f.kind == k)
                .max_by_key(|f| f.severity);
            let (sev, v) = match active {
                Some(f) => (f.severity.as_str(), 1),
                None => ("none", 0),
            };
            let _ = writeln!(
                out,
                "gpulse_finding_active{{gpu=\"{}\",kind=\"{}\",severity=\"{sev}\"}} {v}",
                g.info.index,
                k.as_str()
            );
        }
    }

    let lost: Vec<(u32, &str, f64)> = gpus
        .iter()
        .flat_map(|(g, _)| {
            g.findings.iter().filter_map(|f| {
                f.evidence
                    .lost_fraction
                    .map(|v| (g.info.index, f.kind.as_str(), v))
            })
        })
        .collect();
    if !lost.is_empty() {
        header(
            &mut out,
            "gpulse_lost_fraction",
            "gauge",
            "Share of GPU time an active finding estimates is lost (0-1).",
        );
        for (gpu, kind, v) in lost {
            let _ = writeln!(
                out,
                "gpulse_lost_fraction{{gpu=\"{gpu}\",kind=\"{kind}\"}} {}",
                num(v)
            );
        }
    }
    let period: Vec<(u32, &str, f64)> = gpus
        .iter()
        .flat_map(|(g, _)| {
            g.findings.iter().filter_map(|f| {
                f.evidence
                    .period_s
                    .map(|v| (g.info.index, f.kind.as_str(), v))
            })
        })
        .collect();
    if !period.is_empty() {
        header(
            &mut out,
            "gpulse_starvation_period_seconds",
            "gauge",
            "Period of the stall cycle an active finding measured (seconds).",
        );
        for (gpu, kind, v) in period {
            let _ = writeln!(
                out,
                "gpulse_starvation_period_seconds{{gpu=\"{gpu}\",kind=\"{kind}\"}} {}",
                num(v)
            );
        }
    }

    let hl = format!("Hostname=\"{}\"", escape(host));
    let h = &s.host;
    for (name, help, v) in [
        (
            "gpulse_host_cpu_percent",
            "Whole-host CPU busy (in % of all cores).",
            h.cpu_percent,
        ),
        (
            "gpulse_host_memory_used_bytes",
            "Host memory used (bytes).",
            h.memory_used_bytes.map(|b| b as f64),
        ),
        (
            "gpulse_host_memory_total_bytes",
            "Host memory total (bytes).",
            h.memory_total_bytes.map(|b| b as f64),
        ),
        ("gpulse_host_load1", "One-minute load average.", h.load1),
        (
            "gpulse_host_iowait_percent",
            "Share of CPU time waiting on I/O (in %).",
            h.iowait_percent,
        ),
    ] {
        if let Some(v) = v {
            header(&mut out, name, "gauge", help);
            let _ = writeln!(out, "{name}{{{hl}}} {}", num(v));
        }
    }

    let st = &s.stats;
    if let Some(d) = st.sample_duration_s {
        header(
            &mut out,
            "gpulse_sample_duration_seconds",
            "gauge",
            "Wall time the newest tick took to read every GPU.",
        );
        let _ = writeln!(out, "gpulse_sample_duration_seconds{{{hl}}} {}", num(d));
    }
    header(
        &mut out,
        "gpulse_samples_total",
        "counter",
        "Ticks sampled since the monitor started.",
    );
    let _ = writeln!(out, "gpulse_samples_total{{{hl}}} {}", st.samples_total);
    header(
        &mut out,
        "gpulse_errors_total",
        "counter",
        "GPU readings that failed (stale, lost or error) since the monitor started.",
    );
    let _ = writeln!(out, "gpulse_errors_total{{{hl}}} {}", st.errors_total);
    header(
        &mut out,
        "gpulse_interval_seconds",
        "gauge",
        "The sampling interval.",
    );
    let _ = writeln!(
        out,
        "gpulse_interval_seconds{{{hl}}} {}",
        num(st.interval_s)
    );
    if s.seq > 0 {
        header(
            &mut out,
            "gpulse_last_sample_timestamp_seconds",
            "gauge",
            "Unix time of the newest sample.",
        );
        let _ = writeln!(
            out,
            "gpulse_last_sample_timestamp_seconds{{{hl}}} {}",
            num(s.t)
        );
    }
    out
}

/// Whether the newest snapshot is fresh at `now`: taken within a few intervals.
pub fn is_fresh(s: &Snapshot, now: f64) -> bool {
    let allowed = (s.stats.interval_s * 5.0).max(2.0);
    s.seq > 0 && (now - s.t) <= allowed
}

/// Start the exporter on `addr` on the current tokio runtime; returns the bound address.
///
/// Serves `/metrics`, `/healthz` and `/` from the newest snapshot on `snapshots`. A
/// non-loopback address is served as asked, with a warning on stderr.
pub async fn spawn_server(
    addr: SocketAddr,
    snapshots: watch::Receiver<Arc<Snapshot>>,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    spawn_server_showing(addr, snapshots, Arc::new(|_| true)).await
}

/// [`spawn_server`] exporting only the GPUs `show` accepts.
pub async fn spawn_server_showing(
    addr: SocketAddr,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    show: Arc<dyn Fn(u32) -> bool + Send + Sync>,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    if !addr.ip().is_loopback() {
        tracing::warn!("serving metrics on {addr}, reachable from other machines");
        eprintln!("gpulse: warning: serving metrics on {addr}, reachable from other machines (use 127.0.0.1 to keep it local)");
    }
    crate::output::http::serve(
        addr,
        snapshots,
        show,
        crate::output::http::Limits::default(),
    )
    .await
}

/// `gpulse serve`: sample and serve until Ctrl-C or SIGTERM.
pub fn run_serve(
    settings: &crate::config::Settings,
    live: &crate::live::Live,
    addr: SocketAddr,
) -> anyhow::Result<()> {
    let rt = crate::output::runtime()?;
    let show = crate::output::show_filter(settings);
    let rx = live.snapshots.clone();
    let r: anyhow::Result<()> = rt.block_on(async move {
        let (bound, server) = spawn_server_showing(addr, rx, show).await.map_err(|e| {
            anyhow::anyhow!("cannot listen on '{addr}': {e}; pick a free port or another address")
        })?;
        eprintln!("gpulse: serving http://{bound}/metrics");
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        server.abort();
        Ok(())
    });
    live.stop();
    rt.shutdown_timeout(std::time::Duration::from_millis(200));
    r
}

/// An exporter running on its own thread and runtime; dropping it stops the server.
pub struct BackgroundServer {
    pub addr: SocketAddr,
    _stop: tokio::sync::oneshot::Sender<()>,
}

/// Serve `snapshots` on `addr` from a thread of its own, next to any front end (`--serve`).
pub fn serve_in_background(
    addr: SocketAddr,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    show: Arc<dyn Fn(u32) -> bool + Send + Sync>,
) -> Result<BackgroundServer, std::io::Error> {
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (bound_tx, bound_rx) = std::sync::mpsc::channel::<std::io::Result<SocketAddr>>();
    std::thread::Builder::new()
        .name("gpulse-exporter".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = bound_tx.send(Err(e));
                    return;
                }
            };
            rt.block_on(async move {
                match spawn_server_showing(addr, snapshots, show).await {
                    Ok((bound, task)) => {
                        let _ = bound_tx.send(Ok(bound));
                        let _ = stop_rx.await;
                        task.abort();
                    }
                    Err(e) => {
                        let _ = bound_tx.send(Err(e));
                    }
                }
            });
        })?;
    let bound = bound_rx
        .recv()
        .map_err(|_| std::io::Error::other("the exporter thread ended before listening"))?
        .map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("cannot listen on '{addr}': {e}; pick a free port or another address"),
            )
        })?;
    eprintln!("gpulse: serving http://{bound}/metrics");
    Ok(BackgroundServer {
        addr: bound,
        _stop: stop_tx,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Engine, EngineConfig};
    use crate::model::{DeviceInfo, Evidence, Finding, GpuReading, Sample, Severity, SystemInfo};

    fn snapshot() -> Snapshot {
        let system = SystemInfo {
            hostname: "node\"1".into(),
            backend: "test".into(),
            devices: (0..2)
                .map(|i| DeviceInfo {
                    index: i,
                    name: "NVIDIA H200".into(),
                    uuid: Some(format!("GPU-{i}")),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let mut engine = Engine::new(system, EngineConfig::default());
        let full = Metrics {
            util_gpu: Some(87.0),
            mem_used_bytes: Some(3 << 30),
            mem_total_bytes: Some(8 << 30),
            sm_active: Some(62.5),
            pcie_rx_bytes_per_s: Some(1.5e9),
            ..Default::default()
        };
        engine.ingest(Sample {
            t: 1000.0,
            gpus: vec![
                GpuReading {
                    index: 0,
                    metrics: full,
                    ..Default::default()
                },
                // GPU 1 supports nothing but utilization.
                GpuReading {
                    index: 1,
                    metrics: Metrics {
                        util_gpu: Some(5.0),
                        ..Default::default()
                    },
                    ..Default::default()
                },
            ],
            sample_duration_s: Some(0.004),
            ..Default::default()
        });
        let mut s = (*engine.snapshot()).clone();
        s.gpus[0].findings.push(Finding {
            kind: FindingKind::InputStarvation,
            severity: Severity::High,
            gpu: 0,
            start: 990.0,
            end: None,
            detected_at: 995.0,
            evidence: Evidence {
                period_s: Some(1.7),
                lost_fraction: Some(0.64),
                ..Default::default()
            },
            summary: "idle ~1.1 s every 1.7 s".into(),
            advice: "more DataLoader workers".into(),
        });
        s
    }

    fn lines_of<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
        text.lines()
            .filter(|l| l.starts_with(&format!("{name}{{")))
            .collect()
    }

    #[test]
    fn readings_use_dcgm_names_units_and_labels() {
        let text = render(&snapshot(), &|_| true);
        let util = lines_of(&text, "DCGM_FI_DEV_GPU_UTIL");
        assert_eq!(util.len(), 2);
        assert!(util[0].starts_with("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-0\","));
        assert!(util[0]
            .contains("device=\"nvidia0\",modelName=\"NVIDIA H200\",Hostname=\"node\\\"1\"}"));
        assert!(util[0].ends_with(" 87"));
        assert_eq!(
            lines_of(&text, "DCGM_FI_DEV_FB_USED")[0].rsplit(' ').next(),
            Some("3072")
        );
        assert_eq!(
            lines_of(&text, "DCGM_FI_DEV_FB_FREE")[0].rsplit(' ').next(),
            Some("5120")
        );
        assert_eq!(
            lines_of(&text, "DCGM_FI_PROF_SM_ACTIVE")[0]
                .rsplit(' ')
                .next(),
            Some("0.625")
        );
        assert!(text.contains("# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"));
        assert!(text.contains("# TYPE gpulse_samples_total counter\n"));
    }

    #[test]
    fn absent_readings_are_left_out_never_zero() {
        let text = render(&snapshot(), &|_| true);
        // GPU 1 has no memory, SM or PCIe readings: no line for it.
        for name in [
            "DCGM_FI_DEV_FB_USED",
            "DCGM_FI_PROF_SM_ACTIVE",
            "DCGM_FI_PROF_PCIE_RX_BYTES",
        ] {
            let l = lines_of(&text, name);
            assert_eq!(l.len(), 1, "{name}: {l:?}");
            assert!(l[0].contains("gpu=\"0\""));
        }
        // Nobody reads power: no HELP, no TYPE, no sample.
        assert!(!text.contains("DCGM_FI_DEV_POWER_USAGE"));
    }

    #[test]
    fn a_gpu_that_did_not_answer_exports_no_readings() {
        let mut s = snapshot();
        s.gpus[1].status = GpuStatus::Lost {
            reason: "fell off the bus".into(),
        };
        let text = render(&s, &|_| true);
        assert_eq!(lines_of(&text, "DCGM_FI_DEV_GPU_UTIL").len(), 1);
        assert!(text.contains("gpulse_gpu_up{gpu=\"1\","));
        assert!(lines_of(&text, "gpulse_gpu_up")[1].ends_with(" 0"));
    }

    #[test]
    fn findings_verdicts_and_health() {
        let s = snapshot();
        let text = render(&s, &|_| true);
        assert!(text.contains(
            "gpulse_finding_active{gpu=\"0\",kind=\"input_starvation\",severity=\"high\"} 1\n"
        ));
        assert!(text.contains(
            "gpulse_finding_active{gpu=\"1\",kind=\"input_starvation\",severity=\"none\"} 0\n"
        ));
        assert_eq!(
            lines_of(&text, "gpulse_finding_active").len(),
            2 * FindingKind::ALL.len()
        );
        let current: Vec<&str> = lines_of(&text, "gpulse_verdict")
            .into_iter()
            .filter(|l| l.ends_with(" 1"))
            .collect();
        assert_eq!(current.len(), 2, "one current verdict per GPU");
        assert!(text.contains("gpulse_lost_fraction{gpu=\"0\",kind=\"input_starvation\"} 0.64\n"));
        assert!(text.contains(
            "gpulse_starvation_period_seconds{gpu=\"0\",kind=\"input_starvation\"} 1.7\n"
        ));
        assert!(text.contains("gpulse_samples_total{Hostname=\"node\\\"1\"} 1\n"));
        assert!(text.contains("gpulse_sample_duration_seconds{Hostname=\"node\\\"1\"} 0.004\n"));
    }

    #[test]
    fn the_gpu_filter_applies_and_every_name_is_listed() {
        let text = render(&snapshot(), &|i| i == 1);
        assert!(!text.contains("gpu=\"0\""));
        let names = metric_names();
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            let name = l.split('{').next().unwrap_or("");
            assert!(names.contains(&name), "{name} is not in metric_names()");
        }
    }

    #[test]
    fn freshness_follows_the_interval() {
        let s = snapshot();
        assert!(is_fresh(&s, 1001.0));
        assert!(!is_fresh(&s, 1010.0));
    }
}
