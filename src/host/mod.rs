//! The host side: whole-machine CPU, memory and load, and who the GPU processes are.
//!
//! Read from procfs (a root directory that tests can point at a fixture tree).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::model::{GpuProcess, HostReading, Sample};

/// CPU jiffies from `/proc/stat`'s first line.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct CpuTimes {
    busy: u64,
    iowait: u64,
    total: u64,
}

/// Reads host figures each tick and fills in what the GPU backend cannot know about processes.
#[derive(Debug)]
pub struct HostProbe {
    root: Option<PathBuf>,
    last_cpu: Option<CpuTimes>,
    users: HashMap<u32, String>,
}

impl HostProbe {
    /// Read the real `/proc`.
    pub fn new() -> Self {
        Self::with_root("/proc")
    }

    /// Read a procfs tree at `root` (tests use fixture trees).
    pub fn with_root(root: impl Into<PathBuf>) -> Self {
        HostProbe {
            root: Some(root.into()),
            last_cpu: None,
            users: HashMap::new(),
        }
    }

    /// Read nothing (host figures absent).
    pub fn disabled() -> Self {
        HostProbe {
            root: None,
            last_cpu: None,
            users: HashMap::new(),
        }
    }

    /// Fill the host section and the processes' missing fields.
    pub fn fill(&mut self, sample: &mut Sample) {
        let Some(root) = self.root.clone() else {
            return;
        };
        sample.host = self.read_host(&root);
        for gpu in &mut sample.gpus {
            for p in &mut gpu.processes {
                self.enrich(&root, p);
            }
        }
    }

    fn read_host(&mut self, root: &Path) -> HostReading {
        let mut h = HostReading::default();
        if let Ok(stat) = std::fs::read_to_string(root.join("stat")) {
            if let Some(now) = parse_cpu_line(&stat) {
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
            h.cpu_count = Some(
                stat.lines()
                    .filter(|l| {
                        l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit)
                    })
                    .count() as u32,
            )
            .filter(|n| *n > 0);
        }
        if let Ok(mem) = std::fs::read_to_string(root.join("meminfo")) {
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
        }
        if let Ok(load) = std::fs::read_to_string(root.join("loadavg")) {
            h.load1 = load.split_whitespace().next().and_then(|v| v.parse().ok());
        }
        h
    }

    fn enrich(&mut self, root: &Path, p: &mut GpuProcess) {
        let dir = root.join(p.pid.to_string());
        let Ok(status) = std::fs::read_to_string(dir.join("status")) else {
            if p.command.is_none() {
                p.resolved = false;
            }
            return;
        };
        if p.user.is_none() {
            let uid = status
                .lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u32>().ok());
            if let Some(uid) = uid {
                p.user = Some(self.user_name(uid));
            }
        }
        if p.command.is_none() {
            if let Ok(cmd) = std::fs::read(dir.join("cmdline")) {
                let s: Vec<String> = cmd
                    .split(|b| *b == 0)
                    .filter(|a| !a.is_empty())
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect();
                if !s.is_empty() {
                    p.command = Some(s.join(" "));
                }
            }
        }
    }

    fn user_name(&mut self, uid: u32) -> String {
        if let Some(n) = self.users.get(&uid) {
            return n.clone();
        }
        let name = std::fs::read_to_string("/etc/passwd")
            .ok()
            .and_then(|pw| {
                pw.lines().find_map(|l| {
                    let f: Vec<&str> = l.split(':').collect();
                    (f.len() > 2 && f[2] == uid.to_string()).then(|| f[0].to_string())
                })
            })
            .unwrap_or_else(|| uid.to_string());
        self.users.insert(uid, name.clone());
        name
    }
}

impl Default for HostProbe {
    fn default() -> Self {
        Self::new()
    }
}

fn parse_cpu_line(stat: &str) -> Option<CpuTimes> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_percent_from_two_readings_of_a_fixture_tree() {
        let dir = tempfile::tempdir().expect("tempdir");
        let w =
            |name: &str, body: &str| std::fs::write(dir.path().join(name), body).expect("write");
        w("stat", "cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 50 0 50 350 50 0 0 0\ncpu1 50 0 50 350 50 0 0 0\n");
        w(
            "meminfo",
            "MemTotal:       1000 kB\nMemFree:         100 kB\nMemAvailable:    400 kB\n",
        );
        w("loadavg", "1.50 1.00 0.50 2/300 1234\n");
        let mut probe = HostProbe::with_root(dir.path());
        let mut s = Sample::default();
        probe.fill(&mut s);
        assert_eq!(s.host.cpu_percent, None, "one reading gives no rate");
        assert_eq!(s.host.cpu_count, Some(2));
        assert_eq!(s.host.memory_total_bytes, Some(1_024_000));
        assert_eq!(s.host.memory_used_bytes, Some(614_400));
        assert_eq!(s.host.load1, Some(1.5));
        w("stat", "cpu  150 0 150 750 150 0 0 0 0 0\n");
        probe.fill(&mut s);
        // 200 jiffies passed: 100 busy, 50 idle, 50 iowait.
        assert_eq!(s.host.cpu_percent, Some(50.0));
        assert_eq!(s.host.iowait_percent, Some(25.0));
    }
}
