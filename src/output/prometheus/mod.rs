//! The Prometheus exposition of a [`Snapshot`] (text format 0.0.4), and the exporter that serves it.
//!
//! Device metrics use dcgm-exporter's names, units and labels (`gpu`, `UUID`, `device`,
//! `modelName`, `Hostname`), so dashboards built for it keep working: memory in MiB, `PROF` activity
//! as a 0–1 ratio. gpulse's own series (`gpulse_*`) carry findings, verdicts and the monitor's
//! health. A reading that is absent (unsupported, or the GPU did not answer this tick) is left out,
//! never written as 0.

use std::fmt::Write as _;

use crate::engine::{GpuSnapshot, Snapshot};
use crate::model::{Evidence, FindingKind, GpuStatus};

mod dcgm;
mod dcgm_current;
mod health;
mod jobs;
mod naming;

use dcgm::DEVICE_METRICS;
use dcgm_current::DEVICE_METRICS_CURRENT;
pub use naming::DcgmNames;

/// The exposition's content type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// gpulse's own series, in the order they are written.
pub const GPULSE_METRICS: &[&str] = &[
    "gpulse_gpu_up",
    "gpulse_verdict",
    "gpulse_mig_verdict",
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

/// Every metric name the exporter can write, under either naming.
pub fn metric_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = DEVICE_METRICS
        .iter()
        .chain(DEVICE_METRICS_CURRENT)
        .map(|m| m.name)
        .chain(health::health_metric_names())
        .chain(GPULSE_METRICS.iter().copied())
        .chain(super::prometheus_ledger::LEDGER_METRICS.iter().copied())
        .collect();
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(*n));
    names
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

/// The labels of one GPU's device series, as dcgm-exporter writes them.
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

/// The `# HELP` and `# TYPE` lines of one metric.
fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

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

/// The exposition of one snapshot under dcgm-exporter's legacy names, keeping only the GPUs
/// `show` accepts.
pub fn render(s: &Snapshot, show: &dyn Fn(u32) -> bool) -> String {
    render_named(s, show, DcgmNames::Legacy)
}

/// The exposition of one snapshot under `names`, keeping only the GPUs `show` accepts.
pub fn render_named(s: &Snapshot, show: &dyn Fn(u32) -> bool, names: DcgmNames) -> String {
    let mut out = String::with_capacity(8 * 1024);
    let host = s.system.hostname.as_str();
    let gpus: Vec<(&GpuSnapshot, String)> = s
        .gpus
        .iter()
        .filter(|g| show(g.info.index))
        .map(|g| (g, gpu_labels(g, host)))
        .collect();
    device_gauges(&mut out, &gpus, names);
    health::render(&mut out, &gpus, names);
    gpu_up(&mut out, &gpus);
    verdicts(&mut out, &gpus);
    jobs::mig_verdicts(&mut out, &gpus);
    findings_active(&mut out, &gpus);
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
    host_gauges(&mut out, s, &hl);
    monitor_health(&mut out, s, &hl);
    out
}

/// Whether the GPU answered the newest tick; only then are its readings written.
fn answered(g: &GpuSnapshot) -> bool {
    g.status == GpuStatus::Ok
}

/// One gauge per device metric, a value per answering GPU that reported it (once per job on it,
/// and one per MIG instance: see [`jobs`]); a metric no GPU reported is left out entirely,
/// header included.
fn device_gauges(out: &mut String, gpus: &[(&GpuSnapshot, String)], names: DcgmNames) {
    let table = match names {
        DcgmNames::Legacy => DEVICE_METRICS,
        DcgmNames::Current => DEVICE_METRICS_CURRENT,
    };
    for m in table {
        let mut values: Vec<(String, f64)> = gpus
            .iter()
            .filter(|(g, _)| answered(g))
            .filter_map(|(g, l)| (m.read)(&g.current).map(|v| (g, l, v)))
            .flat_map(|(g, l, v)| {
                jobs::device_label_sets(g)
                    .into_iter()
                    .map(move |set| (format!("{l}{set}"), v))
            })
            .collect();
        values.extend(jobs::instance_values(m.name, gpus));
        if values.is_empty() {
            continue;
        }
        header(out, m.name, "gauge", m.help);
        for (l, v) in values {
            let _ = writeln!(out, "{}{{{l}}} {}", m.name, num(v));
        }
    }
}

/// `gpulse_gpu_up`: 1 for each GPU that answered the newest tick, 0 for the others.
fn gpu_up(out: &mut String, gpus: &[(&GpuSnapshot, String)]) {
    header(
        out,
        "gpulse_gpu_up",
        "gauge",
        "1 when the GPU answered the newest tick, 0 when it is stale or lost.",
    );
    for (g, l) in gpus {
        let _ = writeln!(out, "gpulse_gpu_up{{{l}}} {}", u8::from(answered(g)));
    }
}

/// `gpulse_verdict`: one series per GPU and finding kind, 1 for the GPU's current verdict.
fn verdicts(out: &mut String, gpus: &[(&GpuSnapshot, String)]) {
    header(
        out,
        "gpulse_verdict",
        "gauge",
        "The detector's current verdict of each GPU (1 for the current one, 0 for the others).",
    );
    for (g, _) in gpus {
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
}

/// `gpulse_finding_active`: one series per GPU and finding kind, labelled with the highest
/// severity among the active findings of that kind.
fn findings_active(out: &mut String, gpus: &[(&GpuSnapshot, String)]) {
    header(
        out,
        "gpulse_finding_active",
        "gauge",
        "1 while a finding of this kind is active on the GPU (severity \"none\" when it is not).",
    );
    for (g, _) in gpus {
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
}

/// The host's gauges (CPU, memory, load, I/O wait), each left out when the host did not report it.
fn host_gauges(out: &mut String, s: &Snapshot, hl: &str) {
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
            header(out, name, "gauge", help);
            let _ = writeln!(out, "{name}{{{hl}}} {}", num(v));
        }
    }
}

/// The monitor's own health: tick duration, tick and error counters, the interval, and the time
/// of the newest sample (left out before the first one).
fn monitor_health(out: &mut String, s: &Snapshot, hl: &str) {
    let st = &s.stats;
    if let Some(d) = st.sample_duration_s {
        header(
            out,
            "gpulse_sample_duration_seconds",
            "gauge",
            "Wall time the newest tick took to read every GPU.",
        );
        let _ = writeln!(out, "gpulse_sample_duration_seconds{{{hl}}} {}", num(d));
    }
    header(
        out,
        "gpulse_samples_total",
        "counter",
        "Ticks sampled since the monitor started.",
    );
    let _ = writeln!(out, "gpulse_samples_total{{{hl}}} {}", st.samples_total);
    header(
        out,
        "gpulse_errors_total",
        "counter",
        "GPU readings that failed (stale, lost or error) since the monitor started.",
    );
    let _ = writeln!(out, "gpulse_errors_total{{{hl}}} {}", st.errors_total);
    header(
        out,
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
            out,
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
}

/// Whether the newest snapshot is fresh at `now`: taken within a few intervals.
pub fn is_fresh(s: &Snapshot, now: f64) -> bool {
    let allowed = (s.stats.interval_s * 5.0).max(2.0);
    s.seq > 0 && (now - s.t) <= allowed
}

#[cfg(test)]
mod tests;
