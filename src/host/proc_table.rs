//! One scan of every process: a parent map for finding a GPU process's descendants, and CPU rates
//! from the change in each process's CPU time between readings.

use std::collections::HashMap;
use std::path::Path;

use super::procfs::{self, ProcStat};

/// Most processes one subtree refresh reads.
const MAX_SUBTREE: usize = 4096;

/// A process as of the latest reading, with its CPU rate when a previous reading exists.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcEntry {
    pub stat: ProcStat,
    /// Percent of one core since the previous reading of this process (100 = one core busy).
    pub cpu_percent: Option<f64>,
}

/// Every process visible under a procfs root, keyed by PID, with children by parent.
#[derive(Debug, Clone, Default)]
pub struct ProcTable {
    pub entries: HashMap<u32, ProcEntry>,
    pub children: HashMap<u32, Vec<u32>>,
}

/// CPU time of each process at its last reading, to turn the next reading into a rate.
#[derive(Debug, Default)]
pub struct CpuRates {
    /// pid -> (starttime, cpu ticks, monotonic seconds). A changed starttime means a reused PID.
    last: HashMap<u32, (u64, u64, f64)>,
    clock_ticks_per_s: f64,
}

impl CpuRates {
    pub fn new(clock_ticks_per_s: f64) -> Self {
        CpuRates {
            last: HashMap::new(),
            clock_ticks_per_s: clock_ticks_per_s.max(1.0),
        }
    }

    /// Record a reading at `now` (monotonic seconds) and return the rate since the previous one.
    pub fn observe(&mut self, stat: &ProcStat, now: f64) -> Option<f64> {
        let prev = self
            .last
            .insert(stat.pid, (stat.starttime, stat.cpu_ticks, now));
        let (start, ticks, t) = prev?;
        let dt = now - t;
        if start != stat.starttime || dt <= 0.0 || stat.cpu_ticks < ticks {
            return None;
        }
        Some((stat.cpu_ticks - ticks) as f64 / self.clock_ticks_per_s / dt * 100.0)
    }

    /// Forget processes that are gone.
    pub fn retain(&mut self, alive: impl Fn(u32) -> bool) {
        self.last.retain(|pid, _| alive(*pid));
    }
}

impl ProcTable {
    /// Read `stat` of every process under `root` (one file per process).
    pub fn scan(root: &Path, rates: &mut CpuRates, now: f64) -> ProcTable {
        let mut table = ProcTable::default();
        for pid in procfs::list_pids(root) {
            // A process can exit between the listing and the read; it is simply not in the table.
            if let Some(stat) = procfs::read_stat(root, pid) {
                table.insert(stat, rates, now);
            }
        }
        rates.retain(|pid| table.entries.contains_key(&pid));
        table
    }

    fn insert(&mut self, stat: ProcStat, rates: &mut CpuRates, now: f64) {
        let cpu_percent = rates.observe(&stat, now);
        self.children.entry(stat.ppid).or_default().push(stat.pid);
        self.entries
            .insert(stat.pid, ProcEntry { stat, cpu_percent });
    }

    /// Re-read the subtrees under `roots` from the kernel's children lists, without reading any
    /// other process: new descendants are added, those gone (exited or moved elsewhere) removed,
    /// and every process in them gets a fresh reading. Returns false, with the table unchanged,
    /// when the kernel gives no children lists (then only a full [`scan`](Self::scan) finds new
    /// processes).
    pub fn refresh_subtrees(
        &mut self,
        root: &Path,
        roots: &[u32],
        rates: &mut CpuRates,
        now: f64,
    ) -> bool {
        let mut found: Vec<ProcStat> = Vec::new();
        let mut queue: Vec<u32> = roots.to_vec();
        let mut seen: std::collections::HashSet<u32> = std::collections::HashSet::new();
        while let Some(pid) = queue.pop() {
            // The bound guards against a cycle in a racing tree.
            if !seen.insert(pid) || seen.len() > MAX_SUBTREE {
                continue;
            }
            // A process that exited since it was listed is simply left out.
            let Some(stat) = procfs::read_stat(root, pid) else {
                continue;
            };
            match procfs::read_children(root, pid) {
                Some(kids) => queue.extend(kids),
                // A root that is there but has no children lists: the kernel does not give them.
                None if roots.contains(&pid) => return false,
                None => {}
            }
            found.push(stat);
        }
        let alive: std::collections::HashSet<u32> = found.iter().map(|s| s.pid).collect();
        let before: Vec<u32> = roots
            .iter()
            .flat_map(|r| {
                let mut v = vec![*r];
                v.extend(self.descendants(*r).iter().map(|e| e.stat.pid));
                v
            })
            .collect();
        for pid in before {
            if !alive.contains(&pid) {
                self.remove(pid);
            }
        }
        for stat in found {
            if self.entries.get(&stat.pid).map(|e| e.stat.ppid) != Some(stat.ppid) {
                self.remove(stat.pid);
                self.children.entry(stat.ppid).or_default().push(stat.pid);
            }
            let cpu_percent = rates.observe(&stat, now);
            self.entries
                .insert(stat.pid, ProcEntry { stat, cpu_percent });
        }
        true
    }

    /// Drop one process and its place in its parent's list.
    fn remove(&mut self, pid: u32) {
        if let Some(e) = self.entries.remove(&pid) {
            if let Some(kids) = self.children.get_mut(&e.stat.ppid) {
                kids.retain(|k| *k != pid);
            }
        }
    }

    pub fn get(&self, pid: u32) -> Option<&ProcEntry> {
        self.entries.get(&pid)
    }

    /// Every descendant of `pid` still in the table, in tree order (each process followed by its
    /// own descendants; siblings by PID).
    pub fn descendants(&self, pid: u32) -> Vec<&ProcEntry> {
        let mut out = Vec::new();
        let mut stack = vec![pid];
        while let Some(p) = stack.pop() {
            if p != pid {
                match self.entries.get(&p) {
                    Some(e) => out.push(e),
                    None => continue,
                }
            }
            // The bound guards against a cycle in a corrupt or racing tree.
            if out.len() > self.entries.len() {
                break;
            }
            if let Some(kids) = self.children.get(&p) {
                let mut kids: Vec<u32> = kids.iter().copied().filter(|k| *k != pid).collect();
                kids.sort_unstable_by(|a, b| b.cmp(a));
                stack.extend(kids);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(pid: u32, ppid: u32, ticks: u64, start: u64) -> ProcStat {
        ProcStat {
            pid,
            comm: "x".into(),
            state: 'R',
            ppid,
            cpu_ticks: ticks,
            starttime: start,
            rss_pages: 1,
        }
    }

    #[test]
    fn rate_is_ticks_over_elapsed_time_and_resets_on_pid_reuse() {
        let mut r = CpuRates::new(100.0);
        assert_eq!(r.observe(&stat(5, 1, 1000, 7), 10.0), None);
        // 50 ticks in 0.5 s at 100 Hz = one full core.
        assert_eq!(r.observe(&stat(5, 1, 1050, 7), 10.5), Some(100.0));
        // Same PID, new process: no rate from the old one's counters.
        assert_eq!(r.observe(&stat(5, 1, 3, 99), 11.0), None);
        assert_eq!(r.observe(&stat(5, 1, 28, 99), 12.0), Some(25.0));
    }

    #[test]
    fn descendants_walk_the_whole_subtree() {
        let mut rates = CpuRates::new(100.0);
        let mut t = ProcTable::default();
        for (pid, ppid) in [(1, 0), (10, 1), (11, 10), (12, 10), (13, 11), (20, 1)] {
            t.insert(stat(pid, ppid, 0, 0), &mut rates, 0.0);
        }
        let d: Vec<u32> = t.descendants(10).iter().map(|e| e.stat.pid).collect();
        assert_eq!(d, vec![11, 13, 12], "tree order: 13 under 11, then 12");
        assert!(t.descendants(20).is_empty());
    }
}
