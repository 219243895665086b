//! The JSON documents of `gpulse snapshot --json` and `gpulse stream`, built from a [`Snapshot`].
//!
//! The shape is versioned (`schema_version`) and published as JSON Schema in
//! `assets/snapshot.schema.json`; docs/OUTPUTS.md describes every field. A reading the hardware or
//! the source does not give is `null`, never 0.

use serde::Serialize;

use super::json_jobs::{job_doc, mig_doc, JobDoc, MigDoc};
use crate::clock::rfc3339;
use crate::engine::{GpuSnapshot, Snapshot};
use crate::model::{throttle, Finding, GpuProcess, GpuStatus, UnixTime, Watch};
use crate::output::health_doc::{health_doc, throttle_held_doc, HealthDoc};

/// Bumped whenever a field changes meaning or is removed (adding fields keeps the version).
pub const SCHEMA_VERSION: u32 = 1;

/// One document: the state of the machine at one instant.
#[derive(Debug, Serialize)]
pub struct SnapshotDoc<'a> {
    pub schema_version: u32,
    /// RFC 3339 time of the newest sample (UTC).
    pub time: String,
    /// The same instant as Unix seconds.
    pub timestamp: UnixTime,
    /// Increases by one with every sample (lets a reader of a stream see skipped ticks).
    pub seq: u64,
    pub host: HostDoc<'a>,
    pub gpus: Vec<GpuDoc<'a>>,
    /// Every active finding on every GPU.
    pub findings: Vec<&'a Finding>,
}

#[derive(Debug, Serialize)]
pub struct HostDoc<'a> {
    pub hostname: &'a str,
    pub backend: &'a str,
    pub driver_version: Option<&'a str>,
    pub cuda_version: Option<&'a str>,
    pub cpu: CpuDoc,
    pub memory: MemoryDoc,
    pub load: LoadDoc,
}

#[derive(Debug, Serialize)]
pub struct CpuDoc {
    pub percent: Option<f64>,
    pub count: Option<u32>,
    pub iowait_percent: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct MemoryDoc {
    pub used_bytes: Option<u64>,
    pub total_bytes: Option<u64>,
}

#[derive(Debug, Serialize)]
pub struct LoadDoc {
    /// One-minute load average.
    pub one: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct ThrottleDoc {
    /// NVML's clock event reasons bitmask.
    pub bits: u64,
    /// The set reasons in words.
    pub reasons: Vec<&'static str>,
}

#[derive(Debug, Serialize)]
pub struct GpuDoc<'a> {
    pub index: u32,
    pub name: &'a str,
    pub uuid: Option<&'a str>,
    pub bus_id: Option<&'a str>,
    /// `ok`, `stale` or `lost`.
    pub status: &'static str,
    /// Seconds since the GPU last answered.
    pub age_s: Option<f64>,
    pub utilization_gpu: Option<f64>,
    pub utilization_memory: Option<f64>,
    pub memory_used_bytes: Option<u64>,
    pub memory_total_bytes: Option<u64>,
    pub power_watts: Option<f64>,
    pub power_limit_watts: Option<f64>,
    pub temperature_c: Option<f64>,
    pub sm_clock_mhz: Option<u32>,
    pub mem_clock_mhz: Option<u32>,
    pub fan_percent: Option<u32>,
    pub pstate: Option<u32>,
    pub pcie_link_gen: Option<u32>,
    pub pcie_link_width: Option<u32>,
    pub pcie_link_gen_max: Option<u32>,
    pub pcie_link_width_max: Option<u32>,
    pub pcie_rx_bytes_per_s: Option<f64>,
    pub pcie_tx_bytes_per_s: Option<f64>,
    /// Percent of time SMs had a warp resident (GPM).
    pub sm_active: Option<f64>,
    pub sm_occupancy: Option<f64>,
    pub tensor_active: Option<f64>,
    pub dram_active: Option<f64>,
    /// The GPU's energy counter, joules (only differences mean anything).
    pub energy_joules: Option<f64>,
    pub throttle: Option<ThrottleDoc>,
    /// Share of the newest tick each clock event reason held the clocks, from the driver's
    /// counters (by reason; empty where the driver keeps none).
    pub throttle_held: std::collections::BTreeMap<&'static str, f32>,
    /// Faults, memory and link errors (null where nothing about them is known).
    pub health: Option<HealthDoc<'a>>,
    /// The detector's verdict (`healthy`, `idle`, `input_starvation`, ...).
    pub verdict: &'static str,
    pub findings: Vec<&'a Finding>,
    /// Stalls seen on a GPU without a finding, not yet one.
    pub watch: Option<Watch>,
    pub processes: Vec<ProcessDoc<'a>>,
    /// The GPU's MIG instances (MIG mode only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mig: Vec<MigDoc<'a>>,
}

#[derive(Debug, Serialize)]
pub struct ProcessDoc<'a> {
    pub pid: u32,
    /// `compute` or `graphics`.
    pub kind: &'static str,
    pub user: Option<&'a str>,
    pub gpu_memory_bytes: Option<u64>,
    pub sm_util: Option<f64>,
    pub cpu_percent: Option<f64>,
    pub rss_bytes: Option<u64>,
    pub command: Option<&'a str>,
    /// The pod, container or Slurm job the process belongs to; null where none is known.
    pub job: Option<JobDoc<'a>>,
    /// What can be said where the job cannot be read (a process outside this container).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_note: Option<&'a str>,
    /// The MIG instance the process runs in (MIG mode only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_instance_id: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_instance_id: Option<u32>,
}

/// The short name of a GPU's sampling state.
pub fn status_name(s: &GpuStatus) -> &'static str {
    match s {
        GpuStatus::Ok => "ok",
        GpuStatus::Stale { .. } => "stale",
        GpuStatus::Lost { .. } => "lost",
    }
}

fn process_doc(p: &GpuProcess) -> ProcessDoc<'_> {
    ProcessDoc {
        pid: p.pid,
        kind: match p.kind {
            crate::model::ProcessKind::Compute => "compute",
            crate::model::ProcessKind::Graphics => "graphics",
        },
        user: p.user.as_deref(),
        gpu_memory_bytes: p.gpu_memory_bytes,
        sm_util: p.sm_util,
        cpu_percent: p.cpu_percent,
        rss_bytes: p.rss_bytes,
        command: p.command.as_deref(),
        job: p.job.as_ref().map(job_doc),
        job_note: p.job_note.as_deref(),
        gpu_instance_id: p.gpu_instance_id,
        compute_instance_id: p.compute_instance_id,
    }
}

/// One GPU's document. Readings are those of the newest tick; a GPU that did not answer this
/// tick (stale or lost) has every reading `null` and its `status` says why.
pub fn gpu_doc(g: &GpuSnapshot, now: UnixTime) -> GpuDoc<'_> {
    let ok = g.status == GpuStatus::Ok;
    let m = if ok { g.current } else { Default::default() };
    GpuDoc {
        index: g.info.index,
        name: &g.info.name,
        uuid: g.info.uuid.as_deref(),
        bus_id: g.info.bus_id.as_deref(),
        status: status_name(&g.status),
        age_s: g.age(now),
        utilization_gpu: m.util_gpu,
        utilization_memory: m.util_mem,
        memory_used_bytes: m.mem_used_bytes,
        memory_total_bytes: m.mem_total_bytes.or(g.info.memory_total_bytes),
        power_watts: m.power_w,
        power_limit_watts: m.power_limit_w.or(g.info.power_limit_watts),
        temperature_c: m.temp_c,
        sm_clock_mhz: m.sm_clock_mhz,
        mem_clock_mhz: m.mem_clock_mhz,
        fan_percent: m.fan_pct,
        pstate: m.pstate,
        pcie_link_gen: m.pcie_gen,
        pcie_link_width: m.pcie_width,
        pcie_link_gen_max: g.info.pcie_gen_max,
        pcie_link_width_max: g.info.pcie_width_max,
        pcie_rx_bytes_per_s: m.pcie_rx_bytes_per_s,
        pcie_tx_bytes_per_s: m.pcie_tx_bytes_per_s,
        sm_active: m.sm_active,
        sm_occupancy: m.sm_occupancy,
        tensor_active: m.tensor_active,
        dram_active: m.dram_active,
        energy_joules: m.energy_j,
        throttle: m.throttle.map(|bits| ThrottleDoc {
            bits,
            reasons: throttle::words(bits),
        }),
        throttle_held: throttle_held_doc(&m.throttle_held),
        health: health_doc(g),
        verdict: g.verdict.as_str(),
        findings: g.findings.iter().collect(),
        watch: g.watch,
        processes: if ok {
            g.processes.iter().map(process_doc).collect()
        } else {
            Vec::new()
        },
        mig: if ok {
            g.mig.iter().map(mig_doc).collect()
        } else {
            Vec::new()
        },
    }
}

/// The whole document of a snapshot, keeping only the GPUs `show` accepts.
pub fn snapshot_doc<'a>(s: &'a Snapshot, show: &dyn Fn(u32) -> bool) -> SnapshotDoc<'a> {
    let gpus: Vec<GpuDoc<'a>> = s
        .gpus
        .iter()
        .filter(|g| show(g.info.index))
        .map(|g| gpu_doc(g, s.t))
        .collect();
    let findings = s
        .gpus
        .iter()
        .filter(|g| show(g.info.index))
        .flat_map(|g| g.findings.iter())
        .collect();
    SnapshotDoc {
        schema_version: SCHEMA_VERSION,
        time: rfc3339(s.t),
        timestamp: s.t,
        seq: s.seq,
        host: HostDoc {
            hostname: &s.system.hostname,
            backend: &s.system.backend,
            driver_version: s.system.driver_version.as_deref(),
            cuda_version: s.system.cuda_version.as_deref(),
            cpu: CpuDoc {
                percent: s.host.cpu_percent,
                count: s.host.cpu_count,
                iowait_percent: s.host.iowait_percent,
            },
            memory: MemoryDoc {
                used_bytes: s.host.memory_used_bytes,
                total_bytes: s.host.memory_total_bytes,
            },
            load: LoadDoc { one: s.host.load1 },
        },
        gpus,
        findings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::engine::{Engine, EngineConfig};
    use crate::model::{DeviceInfo, GpuReading, Metrics, Sample, SystemInfo};

    #[test]
    fn a_gpu_that_did_not_answer_has_null_readings_and_says_why() {
        let system = SystemInfo {
            hostname: "h".into(),
            devices: vec![DeviceInfo {
                index: 0,
                name: "GPU".into(),
                memory_total_bytes: Some(80 << 30),
                ..Default::default()
            }],
            ..Default::default()
        };
        let mut engine = Engine::new(system, EngineConfig::default());
        let reading = |t: f64, status: GpuStatus| Sample {
            t,
            gpus: vec![GpuReading {
                index: 0,
                status,
                metrics: Metrics {
                    util_gpu: Some(50.0),
                    ..Default::default()
                },
                ..Default::default()
            }],
            ..Default::default()
        };
        engine.ingest(reading(10.0, GpuStatus::Ok));
        let s = engine.snapshot();
        let v = serde_json::to_value(snapshot_doc(&s, &|_| true)).expect("JSON");
        assert_eq!(v["gpus"][0]["utilization_gpu"], 50.0);
        assert!(v["gpus"][0]["power_watts"].is_null(), "unsupported is null");
        engine.ingest(reading(10.25, GpuStatus::Stale { since: 10.0 }));
        let s = engine.snapshot();
        let v = serde_json::to_value(snapshot_doc(&s, &|_| true)).expect("JSON");
        let g = &v["gpus"][0];
        assert_eq!(g["status"], "stale");
        assert!(g["utilization_gpu"].is_null());
        assert_eq!(g["age_s"], 0.25);
        assert_eq!(g["memory_total_bytes"], 80u64 << 30);
        assert_eq!(v["seq"], 2);
        assert!(snapshot_doc(&s, &|i| i != 0).gpus.is_empty());
    }
}
