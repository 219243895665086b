//! The processes on a GPU: the driver's compute and graphics lists merged, and their
//! utilization from the driver's per-process sample buffer.

use std::time::Instant;

use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::struct_wrappers::device::{ProcessInfo, ProcessUtilizationSample};

use super::device::{PROCESS_PERIOD_S, PROCESS_UTIL_PERIOD_S, SLOW_SLACK_S};
use crate::model::{GpuProcess, ProcessKind};

/// One read of the driver's per-process utilization.
#[derive(Debug, Clone)]
pub struct ProcessUtil {
    pub at: Instant,
    /// `(pid, sm %, memory %)` of the processes the driver named; `None` when it had no samples.
    pub newest: Option<Vec<(u32, f64, f64)>>,
    /// The processes on the GPU at the read: those the driver did not name ran no kernels.
    pub listed: Vec<u32>,
}

impl ProcessUtil {
    /// Whether to read the driver's per-process utilization now: every
    /// [`PROCESS_UTIL_PERIOD_S`], and at the next process list (after [`PROCESS_PERIOD_S`]) when
    /// a process appeared since the last read, so a new process is not left without figures for
    /// the whole period.
    pub fn read_due(last: Option<&ProcessUtil>, procs: &[GpuProcess], now: Instant) -> bool {
        let Some(u) = last else {
            return true;
        };
        let age = now.saturating_duration_since(u.at).as_secs_f64();
        age >= PROCESS_UTIL_PERIOD_S - SLOW_SLACK_S
            || (age >= PROCESS_PERIOD_S - SLOW_SLACK_S
                && procs.iter().any(|p| !u.listed.contains(&p.pid)))
    }

    /// Set each process's utilization from this read: its sample, 0 % for a process listed then
    /// but not named, absent for one that appeared since or when the read had no samples.
    pub fn apply(&self, procs: &mut [GpuProcess]) {
        for p in procs {
            let util = self.newest.as_ref().and_then(|newest| {
                match newest.iter().find(|u| u.0 == p.pid) {
                    Some(u) => Some((u.1, u.2)),
                    None => self.listed.contains(&p.pid).then_some((0.0, 0.0)),
                }
            });
            p.sm_util = util.map(|u| u.0);
            p.mem_util = util.map(|u| u.1);
        }
    }
}

/// Each process's newest utilization sample: `(pid, sm %, memory %)`.
pub fn newest_per_process(stats: &[ProcessUtilizationSample]) -> Vec<(u32, f64, f64)> {
    let mut out: Vec<(u32, u64, f64, f64)> = Vec::new();
    for s in stats {
        let row = (
            s.pid,
            s.timestamp,
            f64::from(s.sm_util),
            f64::from(s.mem_util),
        );
        match out.iter_mut().find(|o| o.0 == s.pid) {
            Some(o) if o.1 < s.timestamp => *o = row,
            Some(_) => {}
            None => out.push(row),
        }
    }
    out.into_iter()
        .map(|(pid, _, sm, mem)| (pid, sm, mem))
        .collect()
}

/// Compute and graphics processes, one entry per PID (compute first).
pub fn merge_processes(compute: &[ProcessInfo], graphics: &[ProcessInfo]) -> Vec<GpuProcess> {
    let mut out: Vec<GpuProcess> = Vec::new();
    let tagged = compute
        .iter()
        .map(|p| (p, ProcessKind::Compute))
        .chain(graphics.iter().map(|p| (p, ProcessKind::Graphics)));
    for (p, kind) in tagged {
        if out.iter().any(|o| o.pid == p.pid) {
            continue;
        }
        out.push(GpuProcess {
            pid: p.pid,
            kind,
            gpu_memory_bytes: match p.used_gpu_memory {
                UsedGpuMemory::Used(b) => Some(b),
                UsedGpuMemory::Unavailable => None,
            },
            gpu_instance_id: p.gpu_instance_id,
            compute_instance_id: p.compute_instance_id,
            ..Default::default()
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn processes_in_both_lists_appear_once_and_unavailable_memory_is_absent() {
        let c = vec![ProcessInfo {
            pid: 10,
            used_gpu_memory: UsedGpuMemory::Used(5 << 30),
            gpu_instance_id: None,
            compute_instance_id: None,
        }];
        let g = vec![
            ProcessInfo {
                pid: 10,
                used_gpu_memory: UsedGpuMemory::Used(1),
                gpu_instance_id: None,
                compute_instance_id: None,
            },
            ProcessInfo {
                pid: 11,
                used_gpu_memory: UsedGpuMemory::Unavailable,
                gpu_instance_id: None,
                compute_instance_id: None,
            },
        ];
        let p = merge_processes(&c, &g);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].kind, ProcessKind::Compute);
        assert_eq!(p[0].gpu_memory_bytes, Some(5 << 30));
        assert_eq!(p[1].kind, ProcessKind::Graphics);
        assert_eq!(p[1].gpu_memory_bytes, None);
    }

    #[test]
    fn process_utilization_takes_each_pids_newest_sample_and_zero_for_the_unnamed() {
        let sample = |pid, timestamp, sm_util, mem_util| ProcessUtilizationSample {
            pid,
            timestamp,
            sm_util,
            mem_util,
            enc_util: 0,
            dec_util: 0,
        };
        let newest = newest_per_process(&[
            sample(10, 5, 40, 7),
            sample(10, 9, 88, 30),
            sample(11, 3, 5, 1),
        ]);
        assert_eq!(newest, vec![(10, 88.0, 30.0), (11, 5.0, 1.0)]);
        let read = ProcessUtil {
            at: Instant::now(),
            newest: Some(newest),
            listed: vec![10, 11, 12],
        };
        let proc = |pid| GpuProcess {
            pid,
            ..Default::default()
        };
        // 12 was listed but ran no kernels; 13 started after the read: not known yet.
        let mut procs = vec![proc(10), proc(12), proc(13)];
        read.apply(&mut procs);
        let util: Vec<_> = procs.iter().map(|p| (p.sm_util, p.mem_util)).collect();
        assert_eq!(
            util,
            vec![
                (Some(88.0), Some(30.0)),
                (Some(0.0), Some(0.0)),
                (None, None)
            ]
        );
        // A read without samples tells nothing.
        let empty = ProcessUtil {
            newest: None,
            ..read
        };
        empty.apply(&mut procs);
        assert!(procs
            .iter()
            .all(|p| p.sm_util.is_none() && p.mem_util.is_none()));
    }

    #[test]
    fn per_process_utilization_is_read_on_its_period_or_soon_after_a_new_process() {
        let t0 = Instant::now();
        let at = |s: f64| t0 + Duration::from_secs_f64(s);
        let proc = |pid| GpuProcess {
            pid,
            ..Default::default()
        };
        let read = ProcessUtil {
            at: t0,
            newest: Some(vec![(10, 50.0, 5.0)]),
            listed: vec![10],
        };
        let same = [proc(10)];
        let grown = [proc(10), proc(11)];
        assert!(ProcessUtil::read_due(None, &same, t0));
        // The same processes: only once the period has passed.
        assert!(!ProcessUtil::read_due(
            Some(&read),
            &same,
            at(PROCESS_PERIOD_S)
        ));
        assert!(!ProcessUtil::read_due(
            Some(&read),
            &same,
            at(PROCESS_UTIL_PERIOD_S - 0.5)
        ));
        assert!(ProcessUtil::read_due(
            Some(&read),
            &same,
            at(PROCESS_UTIL_PERIOD_S)
        ));
        // A new process: at the next process list, not at once.
        assert!(!ProcessUtil::read_due(Some(&read), &grown, at(0.25)));
        assert!(ProcessUtil::read_due(
            Some(&read),
            &grown,
            at(PROCESS_PERIOD_S)
        ));
        // One that left needs no read.
        assert!(!ProcessUtil::read_due(
            Some(&read),
            &[],
            at(PROCESS_PERIOD_S)
        ));
    }
}
