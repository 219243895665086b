//! A simulated GPU in MIG mode: three instances, each running a job of its own, read as NVML reads
//! them: no utilization for the GPU or any instance, GPM activity per GPU instance once per
//! second (averaged over that second), memory per instance, and each process with its GPU and
//! compute instance IDs.

use super::job::Job as Activity;
use super::shared::{docker, pod, slurm};
use super::{Scenario, GIB};
use crate::model::{GpuProcess, Job, MigReading, ProcessKind, Runtime};

/// Compute slices of an H200 in MIG mode.
const SLICES: f64 = 7.0;

/// One instance and the job in it.
struct Instance {
    gpu_instance_id: u32,
    profile: &'static str,
    slices: u32,
    memory_total: u64,
    activity: Activity,
    owner: Job,
    user: &'static str,
    command: &'static str,
    pid: u32,
    memory_used: u64,
}

/// What the GPU reads at one tick.
pub(super) struct MigTick {
    pub mig: Vec<MigReading>,
    pub processes: Vec<GpuProcess>,
    /// The power-weighted activity of the last second over the whole GPU (0–1).
    pub power_avg: f64,
    /// GPM over the whole GPU, percent (absent before the first second).
    pub sm_active: Option<f64>,
    pub tensor_active: Option<f64>,
    pub dram_active: Option<f64>,
    pub memory_used: u64,
}

/// One instance's GPM reading: SM, tensor and DRAM activity, percent.
type Gpm = (f64, f64, f64);

/// The instances of the simulated MIG GPU.
pub(super) struct MigSim {
    instances: Vec<Instance>,
    /// Each instance's GPM reading (SM, tensor, DRAM %) and the second it was read in.
    gpm: Option<(i64, Vec<Gpm>)>,
}

impl MigSim {
    pub(super) fn new(seed: u64, index: u32, pid: u32) -> Self {
        let instance = |gi: u32, profile, slices, gib: u64, kind, owner, user, command| {
            let activity = Activity::new(kind, seed, index * 10 + gi);
            let memory_total = gib * GIB;
            let memory_used = activity.mem_bytes.min(memory_total / 100 * 88);
            Instance {
                gpu_instance_id: gi,
                profile,
                slices,
                memory_total,
                activity,
                owner,
                user,
                command,
                pid: pid + 100 * gi,
                memory_used,
            }
        };
        MigSim {
            instances: vec![
                instance(
                    1,
                    "3g.71gb",
                    3,
                    71,
                    Scenario::Checkpoint,
                    pod(
                        "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d",
                        "eval-5",
                        "ml-team",
                        "eval",
                        Runtime::Containerd,
                    ),
                    "ana",
                    "python eval.py --every 2000",
                ),
                instance(
                    2,
                    "2g.35gb",
                    2,
                    35,
                    Scenario::Healthy,
                    slurm("4243", "tune-lr", "0"),
                    "eve",
                    "python tune.py --lr-sweep",
                ),
                instance(
                    3,
                    "1g.18gb",
                    1,
                    18,
                    Scenario::MemoryIdle,
                    docker("notebook"),
                    "bo",
                    "jupyter lab",
                ),
            ],
            gpm: None,
        }
    }

    /// The GPM readings at `rel` seconds: read at each whole second over the second before it,
    /// carried until the next; none before the first second (GPM needs two samples).
    fn gpm(&mut self, rel: f64) -> Option<&[Gpm]> {
        let second = rel.floor() as i64;
        if second < 1 {
            return None;
        }
        if self.gpm.as_ref().is_none_or(|(s, _)| *s != second) {
            let (a, b) = (second as f64 - 1.0, second as f64);
            let read = self
                .instances
                .iter_mut()
                .map(|i| {
                    let sm = i.activity.mean(a, b, |s| s.level * s.sm_eff) * 100.0;
                    let dram = i.activity.mean(a, b, |s| s.level) * 35.0;
                    let round = |v: f64| (v * 10.0).round() / 10.0;
                    (round(sm), round(sm * 0.45), round(dram))
                })
                .collect();
            self.gpm = Some((second, read));
        }
        self.gpm.as_ref().map(|(_, r)| r.as_slice())
    }

    /// Everything the GPU and its instances read at `rel` seconds since the start.
    pub(super) fn tick(&mut self, rel: f64) -> MigTick {
        for i in &mut self.instances {
            i.activity.extend(rel + 1.0);
        }
        let gpm = self.gpm(rel).map(<[_]>::to_vec);
        let power_avg = self
            .instances
            .iter_mut()
            .map(|i| {
                let share = f64::from(i.slices) / SLICES;
                share
                    * i.activity.mean((rel - 1.0).max(0.0), rel.max(0.001), |s| {
                        s.level * s.sm_eff.max(0.15)
                    })
            })
            .sum();
        let whole = |pick: fn(&Gpm) -> f64| {
            gpm.as_ref().map(|g| {
                let sum: f64 = self
                    .instances
                    .iter()
                    .zip(g)
                    .map(|(i, r)| f64::from(i.slices) / SLICES * pick(r))
                    .sum();
                (sum * 10.0).round() / 10.0
            })
        };
        let tick = MigTick {
            sm_active: whole(|r| r.0),
            tensor_active: whole(|r| r.1),
            dram_active: whole(|r| r.2),
            mig: self.readings(gpm.as_deref()),
            processes: self.processes(rel),
            power_avg,
            memory_used: self.instances.iter().map(|i| i.memory_used).sum(),
        };
        for i in &mut self.instances {
            i.activity.trim(rel - 5.0);
        }
        tick
    }

    fn readings(&self, gpm: Option<&[Gpm]>) -> Vec<MigReading> {
        self.instances
            .iter()
            .enumerate()
            .map(|(k, i)| {
                let read = gpm.and_then(|g| g.get(k));
                MigReading {
                    gpu_instance_id: i.gpu_instance_id,
                    compute_instance_id: 0,
                    profile: Some(i.profile.to_string()),
                    uuid: Some(format!(
                        "MIG-5e1a0000-0000-4000-8000-{:012x}",
                        u64::from(i.gpu_instance_id)
                    )),
                    memory_used_bytes: Some(i.memory_used),
                    memory_total_bytes: Some(i.memory_total),
                    sm_active: read.map(|r| r.0),
                    tensor_active: read.map(|r| r.1),
                    dram_active: read.map(|r| r.2),
                    pids: vec![i.pid],
                }
            })
            .collect()
    }

    /// One process per instance. The driver reports no per-process utilization in MIG mode.
    fn processes(&self, rel: f64) -> Vec<GpuProcess> {
        self.instances
            .iter()
            .map(|i| GpuProcess {
                pid: i.pid,
                kind: ProcessKind::Compute,
                user: Some(i.user.to_string()),
                gpu_memory_bytes: Some(i.memory_used.saturating_sub(256 << 20)),
                cpu_percent: Some(if i.activity.kind == Scenario::MemoryIdle {
                    0.3
                } else {
                    98.0
                }),
                rss_bytes: Some(4 * GIB),
                running_s: Some(rel + 1800.0),
                command: Some(i.command.to_string()),
                state: Some(if i.activity.kind == Scenario::MemoryIdle {
                    'S'
                } else {
                    'R'
                }),
                resolved: true,
                job: Some(i.owner.clone()),
                gpu_instance_id: Some(i.gpu_instance_id),
                compute_instance_id: Some(0),
                ..Default::default()
            })
            .collect()
    }
}
