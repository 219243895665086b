//! `gpulse snapshot`: every GPU as a readable block of text, like a plain `nvidia-smi`, plus what
//! the detector says about it. Absent readings print as `-`.

use std::fmt::Write as _;

use crate::clock::rfc3339;
use crate::engine::{GpuSnapshot, Snapshot};
use crate::model::{throttle, GpuStatus, Metrics};
use crate::output::json::status_name;

const GIB: f64 = (1u64 << 30) as f64;

fn opt<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map(f).unwrap_or_else(|| "-".to_string())
}

fn pct(v: Option<f64>) -> String {
    opt(v, |x| format!("{x:.0}%"))
}

fn gib(v: Option<u64>) -> String {
    opt(v, |x| format!("{:.1}", x as f64 / GIB))
}

/// Bytes per second in the largest unit that keeps the number readable.
pub fn rate(v: Option<f64>) -> String {
    opt(v, |x| {
        if x >= 1e9 {
            format!("{:.2} GB/s", x / 1e9)
        } else if x >= 1e6 {
            format!("{:.1} MB/s", x / 1e6)
        } else {
            format!("{:.0} kB/s", x / 1e3)
        }
    })
}

/// One GPU's block: heading, readings, findings and processes. A GPU that did not answer this
/// tick prints its status and `-` for every reading rather than its last values.
fn gpu_block(out: &mut String, g: &GpuSnapshot, now: f64) {
    let ok = g.status == GpuStatus::Ok;
    let m = if ok { g.current } else { Default::default() };
    heading(out, g, now);
    let _ = writeln!(
        out,
        "  verdict   {}",
        if ok || g.last_ok.is_some() {
            g.verdict.title()
        } else {
            status_name(&g.status)
        }
    );
    readings(out, g, &m);
    if let Some(line) = g.health_line() {
        let _ = writeln!(out, "  health    {line}");
    }
    for f in &g.findings {
        let job = f
            .evidence
            .job
            .as_deref()
            .map_or_else(String::new, |j| format!("{j}: "));
        let _ = writeln!(
            out,
            "  finding   [{}] {job}{}: {} -> {}",
            f.severity.as_str(),
            f.kind.title(),
            f.summary,
            f.advice
        );
    }
    if ok {
        mig_instances(out, g);
        processes(out, g);
    }
}

/// A MIG GPU's instances, one line each: IDs, profile, SM activity, memory, job and verdict.
fn mig_instances(out: &mut String, g: &GpuSnapshot) {
    for m in &g.mig {
        let r = &m.reading;
        let job = crate::host::jobs::dominant_job(&m.processes).map(|j| j.label());
        let _ = writeln!(
            out,
            "  mig       {}/{} {}  SM {}  mem {}/{} GiB  {}  {}",
            r.gpu_instance_id,
            r.compute_instance_id,
            r.profile.as_deref().unwrap_or("-"),
            pct(r.sm_active),
            gib(r.memory_used_bytes),
            gib(r.memory_total_bytes),
            job.as_deref().unwrap_or("-"),
            m.verdict.map_or("no signal", |v| v.title()),
        );
    }
}

/// The GPU's identity line, and its status line when it did not answer this tick.
fn heading(out: &mut String, g: &GpuSnapshot, now: f64) {
    let _ = writeln!(
        out,
        "GPU {}  {}  {}  {}",
        g.info.index,
        g.info.name,
        g.info.uuid.as_deref().unwrap_or("-"),
        g.info.bus_id.as_deref().unwrap_or("-"),
    );
    match &g.status {
        GpuStatus::Ok => {}
        GpuStatus::Stale { .. } => {
            let _ = writeln!(
                out,
                "  status: stale (no answer this tick; last answer {} ago)",
                opt(g.age(now), |a| format!("{a:.1} s"))
            );
        }
        GpuStatus::Lost { reason } => {
            let _ = writeln!(out, "  status: lost ({reason})");
        }
    }
}

/// The reading lines: activity, memory, power, clocks, PCIe and throttle reasons. A limit the
/// tick did not read falls back to the one the device reported at start.
fn readings(out: &mut String, g: &GpuSnapshot, m: &Metrics) {
    let mem_share = match (m.mem_used_bytes, m.mem_total_bytes) {
        (Some(u), Some(t)) if t > 0 => format!(" ({:.0}%)", u as f64 * 100.0 / t as f64),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "  util      {}   SM active {}   SM occupancy {}   tensor {}   DRAM {}   mem bw {}",
        pct(m.util_gpu),
        pct(m.sm_active),
        pct(m.sm_occupancy),
        pct(m.tensor_active),
        pct(m.dram_active),
        pct(m.util_mem),
    );
    let _ = writeln!(
        out,
        "  memory    {} / {} GiB{}",
        gib(m.mem_used_bytes),
        gib(m.mem_total_bytes.or(g.info.memory_total_bytes)),
        mem_share
    );
    let _ = writeln!(
        out,
        "  power     {} / {} W   temp {}   fan {}   P-state {}",
        opt(m.power_w, |x| format!("{x:.0}")),
        opt(m.power_limit_w.or(g.info.power_limit_watts), |x| format!(
            "{x:.0}"
        )),
        opt(m.temp_c, |x| format!("{x:.0} °C")),
        opt(m.fan_pct, |x| format!("{x}%")),
        opt(m.pstate, |x| format!("P{x}")),
    );
    let _ = writeln!(
        out,
        "  clocks    SM {} MHz   memory {} MHz",
        opt(m.sm_clock_mhz, |x| x.to_string()),
        opt(m.mem_clock_mhz, |x| x.to_string()),
    );
    let _ = writeln!(
        out,
        "  PCIe      Gen{} x{} (max Gen{} x{})   rx {}   tx {}",
        opt(m.pcie_gen, |x| x.to_string()),
        opt(m.pcie_width, |x| x.to_string()),
        opt(g.info.pcie_gen_max, |x| x.to_string()),
        opt(g.info.pcie_width_max, |x| x.to_string()),
        rate(m.pcie_rx_bytes_per_s),
        rate(m.pcie_tx_bytes_per_s),
    );
    let _ = writeln!(
        out,
        "  throttle  {}",
        opt(m.throttle, |bits| {
            let w = throttle::words(bits);
            if w.is_empty() {
                "none".to_string()
            } else {
                w.join(", ")
            }
        })
    );
}

/// The processes on the GPU as a small table, or `processes none`.
fn processes(out: &mut String, g: &GpuSnapshot) {
    if g.processes.is_empty() {
        let _ = writeln!(out, "  processes none");
        return;
    }
    let _ = writeln!(
        out,
        "  {:>8}  {:<10} {:>9} {:>6}  COMMAND",
        "PID", "USER", "GPU MEM", "CPU%"
    );
    for p in &g.processes {
        let _ = writeln!(
            out,
            "  {:>8}  {:<10} {:>9} {:>6}  {}",
            p.pid,
            p.user.as_deref().unwrap_or("-"),
            opt(p.gpu_memory_bytes, |x| format!("{:.1}G", x as f64 / GIB)),
            opt(p.cpu_percent, |x| format!("{x:.0}")),
            p.command.as_deref().unwrap_or("-"),
        );
        if let Some(j) = &p.job {
            let _ = writeln!(out, "  {:>8}  job {}", "", j.label());
        } else if let Some(note) = &p.job_note {
            let _ = writeln!(out, "  {:>8}  job - ({note})", "");
        }
    }
}

/// The whole table of a snapshot, keeping only the GPUs `show` accepts.
pub fn render(s: &Snapshot, show: &dyn Fn(u32) -> bool) -> String {
    let mut out = String::new();
    let sys = &s.system;
    let _ = writeln!(
        out,
        "{}  {}  backend {}  driver {}  CUDA {}",
        sys.hostname,
        rfc3339(s.t),
        sys.backend,
        sys.driver_version.as_deref().unwrap_or("-"),
        sys.cuda_version.as_deref().unwrap_or("-"),
    );
    let h = &s.host;
    let _ = writeln!(
        out,
        "host  CPU {} of {} cores   memory {} / {} GiB   load {}",
        pct(h.cpu_percent),
        opt(h.cpu_count, |x| x.to_string()),
        gib(h.memory_used_bytes),
        gib(h.memory_total_bytes),
        opt(h.load1, |x| format!("{x:.2}")),
    );
    let mut shown = 0;
    for g in s.gpus.iter().filter(|g| show(g.info.index)) {
        out.push('\n');
        gpu_block(&mut out, g, s.t);
        shown += 1;
    }
    if shown == 0 {
        out.push_str("\nno GPU to show (check the `gpus` list of the config file)\n");
    }
    out
}
