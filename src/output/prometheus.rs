//! The Prometheus exposition of a [`Snapshot`] (text format 0.0.4), and the exporter that serves it.
//!
//! Device metrics use dcgm-exporter's names, units and labels (`gpu`, `UUID`, `device`,
//! `modelName`, `Hostname`), so dashboards built for it keep working: memory in MiB, `PROF` activity
//! as a 0–1 ratio. gpulse's own series (`gpulse_*`) carry findings, verdicts and the monitor's
//! health. A reading that is absent (unsupported, or the GPU did not answer this tick) is left out,
//! never written as 0.

use std::fmt::Write as _;

use crate::engine::{GpuSnapshot, Snapshot};
use crate::model::{Evidence, FindingKind, GpuStatus, Metrics};

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
        .chain(super::prometheus_ledger::LEDGER_METRICS.iter().copied())
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
/// One gauge per active finding that carries the evidence number `pick` reads, labelled by GPU
/// and kind; nothing (not even the header) when no finding carries it.
fn evidence_gauge(
    out: &mut String,
    gpus: &[(&GpuSnapshot, String)],
    name: &str,
    help: &str,
    pick: fn(&Evidence) -> Option<f64>,
) {
    let values: Vec<(u32, &str, f64)> = gpus
        .iter()
        .flat_map(|(g, _)| {
            g.findings
                .iter()
                .filter_map(|f| pick(&f.evidence).map(|v| (g.info.index, f.kind.as_str(), v)))
        })
        .collect();
    if values.is_empty() {
        return;
    }
    header(out, name, "gauge", help);
    for (gpu, kind, v) in values {
        let _ = writeln!(out, "{name}{{gpu=\"{gpu}\",kind=\"{kind}\"}} {}", num(v));
    }
}

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

    evidence_gauge(
        &mut out,
        &gpus,
        "gpulse_lost_fraction",
        "Share of GPU time an active finding estimates is lost (0-1).",
        |e| e.lost_fraction,
    );
    evidence_gauge(
        &mut out,
        &gpus,
        "gpulse_starvation_period_seconds",
        "Period of the stall cycle an active finding measured (seconds).",
        |e| e.period_s,
    );
    let shown: Vec<&GpuSnapshot> = gpus.iter().map(|(g, _)| *g).collect();
    super::prometheus_ledger::render(&mut out, &shown);

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

#[cfg(test)]
#[path = "prometheus_tests.rs"]
mod tests;
