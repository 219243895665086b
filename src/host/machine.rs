//! The whole machine's figures: CPU shares from `/proc/stat`, memory and swap from `meminfo`,
//! load from `loadavg`.

use std::path::Path;

use super::{procfs, HostProbe};
use crate::model::{HostDetail, HostReading};

/// CPU jiffies from one `/proc/stat` cpu line.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct CpuTimes {
    busy: u64,
    iowait: u64,
    total: u64,
}

impl HostProbe {
    /// Read the host figures under `root`; each file that cannot be read leaves its figures absent.
    pub(super) fn read_host(&mut self, root: &Path) -> (HostReading, HostDetail) {
        let mut h = HostReading::default();
        let mut d = HostDetail::default();
        if let Ok(stat) = procfs::read_text(&root.join("stat")) {
            self.read_cpu(&stat, &mut h, &mut d);
        }
        if let Ok(mem) = procfs::read_text(&root.join("meminfo")) {
            read_memory(&mem, &mut h, &mut d);
        }
        if let Ok(load) = procfs::read_text(&root.join("loadavg")) {
            read_load(&load, &mut h, &mut d);
        }
        (h, d)
    }

    /// CPU and iowait shares of the whole machine, and of each core, since the last reading of
    /// `/proc/stat` (absent on the first); the core count.
    fn read_cpu(&mut self, stat: &str, h: &mut HostReading, d: &mut HostDetail) {
        if let Some(now) = parse_cpu_line(stat) {
            if let Some(prev) = self.last_cpu {
                let dt = now.total.saturating_sub(prev.total);
                if dt > 0 {
                    h.cpu_percent =
                        Some(now.busy.saturating_sub(prev.busy) as f64 * 100.0 / dt as f64);
                    h.iowait_percent =
                        Some(now.iowait.saturating_sub(prev.iowait) as f64 * 100.0 / dt as f64);
                }
            }
            self.last_cpu = Some(now);
        }
        let cores: Vec<CpuTimes> = stat
            .lines()
            .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
            .filter_map(parse_cpu_fields)
            .collect();
        h.cpu_count = Some(cores.len() as u32).filter(|n| *n > 0);
        if self.last_cores.len() == cores.len() {
            d.per_core_percent = cores
                .iter()
                .zip(&self.last_cores)
                .map(|(now, prev)| {
                    let dt = now.total.saturating_sub(prev.total);
                    if dt == 0 {
                        0.0
                    } else {
                        now.busy.saturating_sub(prev.busy) as f64 * 100.0 / dt as f64
                    }
                })
                .collect();
        }
        self.last_cores = cores;
    }
}

/// Memory in use (total less available) and swap in use, from `meminfo`'s text.
fn read_memory(mem: &str, h: &mut HostReading, d: &mut HostDetail) {
    let field = |name: &str| {
        mem.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .map(|kib| kib * 1024)
    };
    h.memory_total_bytes = field("MemTotal:");
    if let (Some(t), Some(a)) = (h.memory_total_bytes, field("MemAvailable:")) {
        h.memory_used_bytes = Some(t.saturating_sub(a));
    }
    d.swap_total_bytes = field("SwapTotal:");
    if let (Some(t), Some(f)) = (d.swap_total_bytes, field("SwapFree:")) {
        d.swap_used_bytes = Some(t.saturating_sub(f));
    }
}

/// The 1, 5 and 15 minute load averages, from `loadavg`'s text.
fn read_load(load: &str, h: &mut HostReading, d: &mut HostDetail) {
    let mut f = load.split_whitespace().map(|v| v.parse::<f64>().ok());
    h.load1 = f.next().flatten();
    d.load5 = f.next().flatten();
    d.load15 = f.next().flatten();
}

/// The machine's total line (`cpu `) of `/proc/stat`.
fn parse_cpu_line(stat: &str) -> Option<CpuTimes> {
    parse_cpu_fields(stat.lines().find(|l| l.starts_with("cpu "))?)
}

/// Busy, iowait and total jiffies of one `/proc/stat` cpu line.
fn parse_cpu_fields(line: &str) -> Option<CpuTimes> {
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    if v.len() < 5 {
        return None;
    }
    let idle = v[3];
    let iowait = v[4];
    // guest and guest_nice are already counted in user and nice.
    let total: u64 = v.iter().take(8).sum();
    Some(CpuTimes {
        busy: total.saturating_sub(idle + iowait),
        iowait,
        total,
    })
}
