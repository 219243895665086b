//! The host side: whole-machine CPU, memory and load, and who the GPU processes are.
//!
//! Read from procfs (a root directory that tests can point at a fixture tree). Once per
//! [`HOST_PERIOD_S`] the probe reads `/proc/stat`, `meminfo` and `loadavg` (the ticks between
//! carry those figures). When the backend reports GPU processes,
//! once per [`TREE_INTERVAL_S`] it re-reads the GPU processes and their descendants (DataLoader
//! workers), found through the kernel's `task/TID/children` lists, for their state and CPU rate;
//! every process's `stat` is read only once per [`FULL_SCAN_S`] (to match PIDs the driver reports
//! from another namespace) or when a new GPU process appears. Where the kernel gives no children
//! lists, the full scan runs every [`TREE_INTERVAL_S`] instead.
//!
//! For front ends:
//! - [`process_rows`] with a [`ProcessView`] (sort [`SortKey`], filter text, tree mode) turns the
//!   snapshot's `GpuProcess`es into [`ProcessRow`]s; [`state_name`] and [`format_running`] give words.
//! - [`Signaller`] (built from `SystemInfo::backend` and `Settings::readonly`) answers
//!   `can_signal` for a confirmation dialog and sends [`Signal::Term`] / [`Signal::Kill`] to a
//!   [`ProcessIdentity`] (PID and start time, so a reused PID is never signalled);
//!   [`signal_target`] gives it for a GPU process (its PID here inside a container).
//! - The host panel reads `Snapshot::host` ([`HostReading`]) and `Sample::host_detail`
//!   ([`HostDetail`]: per-core CPU, load 5/15, swap).
//! - [`annotate_finding`] adds DataLoader evidence to input-starvation and erratic-stalls findings
//!   (the engine calls it every tick); [`loader_evidence`] gives the numbers alone.

pub mod evidence;
pub mod jobs;
mod machine;
pub mod proc_table;
pub mod process_identity;
pub mod process_signals;
pub mod procfs;
pub mod resolve;
pub mod rows;
pub mod users;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::model::{GpuProcess, HostDetail, HostProcess, HostReading, Sample};
use machine::CpuTimes;
use proc_table::{CpuRates, ProcTable};
use resolve::Resolution;

pub use evidence::{annotate_finding, loader_evidence, LoaderEvidence, LoaderVerdict};
pub use process_identity::ProcessIdentity;
pub use process_signals::{can_signal, send, signal_target, Signal, SignalError, Signaller};
pub use rows::{format_running, process_rows, state_name, ProcessRow, ProcessView, SortKey};

/// Seconds between readings of the host figures (`/proc/stat`, `meminfo`, `loadavg`); the ticks
/// between carry the last ones. CPU shares come from jiffies (1/100 s on most kernels): over a
/// second a core's share moves in 1% steps, over a 250 ms tick in 4% steps.
pub const HOST_PERIOD_S: f64 = 1.0;
/// A tick this close before a period is due reads already (ticks fall on a grid, give or take
/// the scheduler).
const HOST_SLACK_S: f64 = 0.05;

/// Seconds between readings of the GPU processes' trees (their workers and CPU rates).
pub const TREE_INTERVAL_S: f64 = 1.0;

/// Seconds between full scans of every process, where the kernel gives children lists (without
/// them, every [`TREE_INTERVAL_S`]).
pub const FULL_SCAN_S: f64 = 30.0;

/// A process younger than this may still exec: its command line is read again until it is older.
pub const SETTLE_S: f64 = 1.0;

/// Seconds between attempts to find PIDs that could not be found.
pub const RESOLVE_RETRY_S: f64 = 10.0;

/// Who a process is; does not change while it lives.
#[derive(Debug, Clone, Default)]
struct Identity {
    uid: Option<u32>,
    command: Option<String>,
    /// The kernel's name when the identity was read: a new one means the process exec'd.
    comm: String,
    /// The last `NSpid` field: its PID in its own namespace.
    innermost_pid: Option<u32>,
}

/// Reads host figures (once per [`HOST_PERIOD_S`]) and fills in what the GPU backend cannot know
/// about processes.
#[derive(Debug)]
pub struct HostProbe {
    root: Option<PathBuf>,
    /// Whether GPU processes are looked up here (not for simulated or replayed PIDs).
    enrich_processes: bool,
    last_cpu: Option<CpuTimes>,
    last_cores: Vec<CpuTimes>,
    /// The last host figures read and when: carried by the ticks within [`HOST_PERIOD_S`].
    host_read: Option<(f64, HostReading, HostDetail)>,
    users: users::UserNames,
    /// (pid, starttime) -> who it is: read once per process lifetime.
    identities: HashMap<(u32, u64), Identity>,
    table: ProcTable,
    rates: CpuRates,
    last_full_scan: Option<f64>,
    /// When the GPU processes' trees were last read (by a full scan or through children lists).
    last_tree: Option<f64>,
    /// Whether the kernel gives `task/TID/children` lists (unknown until first tried).
    children_lists: Option<bool>,
    /// When PIDs were last resolved (unresolved ones are retried every [`RESOLVE_RETRY_S`]).
    last_resolve: Option<f64>,
    resolutions: HashMap<u32, Resolution>,
    /// Whose work each GPU process is (pods, containers, Slurm jobs).
    jobs: jobs::JobProbe,
    /// Each GPU's UUID by index (to ask the kubelet which pod holds it).
    device_uuids: HashMap<u32, String>,
    clock_ticks_per_s: f64,
    page_size: u64,
    epoch: Instant,
}

impl HostProbe {
    /// Read the real `/proc`, and look GPU processes and their jobs up in it and in the node's
    /// files.
    pub fn new() -> Self {
        let mut p = Self::with_root("/proc");
        p.jobs = jobs::JobProbe::new(jobs::JobSources::system());
        p
    }

    /// The probe for a backend by its name (`SystemInfo::backend`): host figures always; process
    /// details only for live backends (`nvml`, `rocm`), whose PIDs are this machine's. Simulated
    /// and replayed processes carry their own details and their PIDs mean nothing here.
    pub fn for_backend(backend: &str) -> Self {
        let mut p = Self::new();
        p.enrich_processes = matches!(backend, "nvml" | "rocm");
        p
    }

    /// Read a procfs tree at `root` (tests use fixture trees); jobs come from its cgroups alone
    /// (see [`Self::with_node_root`]).
    pub fn with_root(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        // SAFETY: sysconf only reads a system constant.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        // SAFETY: as above.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        HostProbe {
            jobs: jobs::JobProbe::new(jobs::JobSources::procfs_only(&root)),
            device_uuids: HashMap::new(),
            root: Some(root),
            enrich_processes: true,
            last_cpu: None,
            last_cores: Vec::new(),
            host_read: None,
            users: users::UserNames::name_service(),
            identities: HashMap::new(),
            table: ProcTable::default(),
            rates: CpuRates::new(if hz > 0 { hz as f64 } else { 100.0 }),
            last_full_scan: None,
            last_tree: None,
            children_lists: None,
            last_resolve: None,
            resolutions: HashMap::new(),
            clock_ticks_per_s: if hz > 0 { hz as f64 } else { 100.0 },
            page_size: if page > 0 { page as u64 } else { 4096 },
            epoch: Instant::now(),
        }
    }

    /// Read nothing (host figures absent).
    pub fn disabled() -> Self {
        let mut p = Self::with_root("/proc");
        p.root = None;
        p
    }

    /// Map uids to names with this `passwd` file instead of the system's name service.
    pub fn with_passwd(mut self, path: impl Into<PathBuf>) -> Self {
        self.users = users::UserNames::passwd_file(path);
        self
    }

    /// Name jobs from the node's files under `root` (the kubelet's, the runtimes', the
    /// container's own) besides procfs: a fixture tree in tests.
    pub fn with_node_root(mut self, root: impl Into<PathBuf>) -> Self {
        let proc_root = self.root.clone().unwrap_or_else(|| PathBuf::from("/proc"));
        let mut sources = jobs::JobSources::procfs_only(proc_root);
        sources.root = Some(root.into());
        self.jobs = jobs::JobProbe::new(sources);
        self
    }

    /// The GPUs' UUIDs, to ask which pod holds each (see [`jobs::JobProbe::outside`]).
    pub fn with_devices(mut self, devices: &[crate::model::DeviceInfo]) -> Self {
        self.device_uuids = devices
            .iter()
            .filter_map(|d| Some((d.index, d.uuid.clone()?)))
            .collect();
        self
    }

    /// Wait until the job lookups asked so far are answered, at most `timeout` (tests and tools;
    /// a tick never waits for them).
    pub fn settle_jobs(&mut self, timeout: std::time::Duration) {
        self.jobs.settle(timeout);
    }

    /// Whether GPU processes are looked up in procfs.
    pub fn enriches_processes(&self) -> bool {
        self.enrich_processes
    }

    /// Whether the kernel's children lists are used to follow the GPU processes' trees (`None`
    /// until first tried; for tools and benchmarks).
    pub fn follows_children_lists(&self) -> Option<bool> {
        self.children_lists
    }

    /// The latest full process table (for tools and benchmarks).
    pub fn table(&self) -> &ProcTable {
        &self.table
    }

    /// Fill the host section and the processes' missing fields.
    pub fn fill(&mut self, sample: &mut Sample) {
        let now = self.epoch.elapsed().as_secs_f64();
        self.fill_at(sample, now);
    }

    /// [`fill`](Self::fill) with the monotonic time given (seconds; tests drive it).
    pub fn fill_at(&mut self, sample: &mut Sample, now: f64) {
        let Some(root) = self.root.clone() else {
            return;
        };
        match &self.host_read {
            Some((at, host, detail)) if now - at < HOST_PERIOD_S - HOST_SLACK_S => {
                sample.host = *host;
                sample.host_detail = detail.clone();
            }
            _ => {
                let (host, detail) = self.read_host(&root);
                self.host_read = Some((now, host, detail.clone()));
                sample.host = host;
                sample.host_detail = detail;
            }
        }
        if !self.enrich_processes {
            return;
        }
        let wanted: Vec<(u32, u32)> = sample
            .gpus
            .iter()
            .flat_map(|g| g.processes.iter().map(move |p| (g.index, p.pid)))
            .collect();
        if wanted.is_empty() {
            return;
        }
        self.update_table(&root, &wanted, now);
        let uptime = read_uptime(&root);
        for gpu in &mut sample.gpus {
            for p in &mut gpu.processes {
                self.enrich(&root, p, uptime);
            }
            let uuid = self.device_uuids.get(&gpu.index).map(String::as_str);
            self.jobs.attribute(gpu, uuid);
        }
    }

    fn update_table(&mut self, root: &Path, wanted: &[(u32, u32)], now: f64) {
        let elapsed = |t: Option<f64>, period: f64| t.is_none_or(|t| now - t >= period - 1e-9);
        let tree_due = elapsed(self.last_tree, TREE_INTERVAL_S);
        // Until the children lists are known to be missing, they are tried.
        let full_period = if self.children_lists == Some(false) {
            TREE_INTERVAL_S
        } else {
            FULL_SCAN_S
        };
        let mut due = elapsed(self.last_full_scan, full_period);
        let new_pid = wanted
            .iter()
            .any(|(_, pid)| !self.resolutions.contains_key(pid));
        if tree_due && !due && !new_pid {
            let roots: Vec<u32> = self
                .resolutions
                .iter()
                .filter_map(|(pid, r)| r.local_pid(*pid))
                .collect();
            if roots.is_empty() {
                // Nothing found here to follow; the next full scan looks again.
                self.last_tree = Some(now);
                return;
            }
            let refreshed = self
                .table
                .refresh_subtrees(root, &roots, &mut self.rates, now);
            self.children_lists = Some(refreshed);
            if refreshed {
                self.last_tree = Some(now);
                return;
            }
            due = true;
        }
        if due || new_pid {
            self.table = ProcTable::scan(root, &mut self.rates, now);
            self.last_full_scan = Some(now);
            let table = &self.table;
            let vanished = self
                .resolutions
                .iter()
                .any(|(pid, r)| r.local_pid(*pid).is_some_and(|l| table.get(l).is_none()));
            let retry_unresolved = self.last_resolve.is_none_or(|t| now - t >= RESOLVE_RETRY_S)
                && self
                    .resolutions
                    .values()
                    .any(|r| *r == Resolution::Unresolved);
            let mut unique: Vec<u32> = wanted.iter().map(|(_, p)| *p).collect();
            unique.sort_unstable();
            unique.dedup();
            if new_pid || vanished || retry_unresolved || self.resolutions.len() != unique.len() {
                self.resolutions =
                    resolve::resolve_all(root, &self.table, wanted, Some(std::process::id()));
                self.last_resolve = Some(now);
            }
            let table = &self.table;
            let alive = |(pid, start): &(u32, u64)| {
                table.get(*pid).is_some_and(|e| e.stat.starttime == *start)
            };
            self.identities.retain(|key, _| alive(key));
            self.jobs.retain(alive);
            self.last_tree = Some(now);
        }
        // Between tree readings the table's last reading stands.
    }

    /// Who process `pid` (started at `starttime`, named `comm` now) is. Read once per process
    /// lifetime, except around an exec, which changes the command line but not the PID: an
    /// identity is read again when the kernel's name has changed, and is not kept while the
    /// process is younger than [`SETTLE_S`] (a child just forked may exec any moment; it would
    /// otherwise keep its parent's command line for good).
    fn identity(&mut self, root: &Path, entry: &procfs::ProcStat, uptime: Option<f64>) -> Identity {
        let key = (entry.pid, entry.starttime);
        if let Some(id) = self.identities.get(&key).filter(|id| id.comm == entry.comm) {
            return id.clone();
        }
        let status = procfs::read_status(root, entry.pid).unwrap_or_default();
        let id = Identity {
            uid: status.uid,
            command: procfs::read_cmdline(root, entry.pid),
            comm: entry.comm.clone(),
            innermost_pid: status.nspid.last().copied(),
        };
        let age = uptime.map(|up| up - entry.starttime as f64 / self.clock_ticks_per_s);
        if age.is_none_or(|a| a >= SETTLE_S) {
            self.identities.insert(key, id.clone());
        } else {
            self.identities.remove(&key);
        }
        id
    }

    fn enrich(&mut self, root: &Path, p: &mut GpuProcess, uptime: Option<f64>) {
        let resolution = self
            .resolutions
            .get(&p.pid)
            .copied()
            .unwrap_or(Resolution::Unresolved);
        let local = resolution.local_pid(p.pid);
        let Some(entry) = local.and_then(|l| self.table.get(l)).cloned() else {
            p.resolved = false;
            return;
        };
        p.resolved = true;
        p.start_ticks = Some(entry.stat.starttime);
        let local = entry.stat.pid;
        if local != p.pid {
            p.local_pid = Some(local);
        }
        let id = self.identity(root, &entry.stat, uptime);
        if p.user.is_none() {
            p.user = id.uid.map(|u| self.user_name(u));
        }
        if p.command.is_none() {
            p.command = id
                .command
                .or_else(|| Some(format!("[{}]", entry.stat.comm)));
        }
        if p.namespace_pid.is_none() {
            p.namespace_pid = id.innermost_pid.filter(|ns| *ns != p.pid && *ns != local);
        }
        p.cpu_percent = p.cpu_percent.or(entry.cpu_percent);
        p.state = p.state.or(Some(entry.stat.state));
        p.rss_bytes = p.rss_bytes.or(Some(entry.stat.rss_pages * self.page_size));
        p.running_s = p.running_s.or_else(|| {
            uptime.map(|up| (up - entry.stat.starttime as f64 / self.clock_ticks_per_s).max(0.0))
        });
        let kids: Vec<proc_table::ProcEntry> =
            self.table.descendants(local).into_iter().cloned().collect();
        p.children = kids
            .into_iter()
            .map(|k| {
                let cmd = self.identity(root, &k.stat, uptime).command;
                HostProcess {
                    pid: k.stat.pid,
                    ppid: Some(k.stat.ppid),
                    cpu_percent: k.cpu_percent,
                    state: Some(k.stat.state),
                    rss_bytes: Some(k.stat.rss_pages * self.page_size),
                    command: cmd.or_else(|| Some(format!("[{}]", k.stat.comm))),
                    start_ticks: Some(k.stat.starttime),
                }
            })
            .collect();
    }

    fn user_name(&mut self, uid: u32) -> String {
        self.users.name(uid)
    }
}

impl Default for HostProbe {
    fn default() -> Self {
        Self::new()
    }
}

/// Seconds since boot, from `ROOT/uptime`.
fn read_uptime(root: &Path) -> Option<f64> {
    procfs::read_text(&root.join("uptime"))
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// How a process that cannot be found here is shown: "pid 12345 (not visible here)".
pub fn unresolved_label(pid: u32) -> String {
    format!("pid {pid} (not visible here)")
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
        probe.fill_at(&mut s, 0.0);
        assert_eq!(s.host.cpu_percent, None, "one reading gives no rate");
        assert_eq!(s.host.cpu_count, Some(2));
        assert_eq!(s.host.memory_total_bytes, Some(1_024_000));
        assert_eq!(s.host.memory_used_bytes, Some(614_400));
        assert_eq!(s.host.load1, Some(1.5));
        w("stat", "cpu  150 0 150 750 150 0 0 0 0 0\n");
        // Within the host period the figures are carried, not read again.
        probe.fill_at(&mut s, HOST_PERIOD_S / 2.0);
        assert_eq!(s.host.cpu_percent, None);
        assert_eq!(s.host.load1, Some(1.5));
        probe.fill_at(&mut s, HOST_PERIOD_S);
        // 200 jiffies passed: 100 busy, 50 idle, 50 iowait.
        assert_eq!(s.host.cpu_percent, Some(50.0));
        assert_eq!(s.host.iowait_percent, Some(25.0));
    }

    /// A procfs tree with children lists: `procs` are (pid, ppid, cpu ticks, thread ids).
    fn write_tree(root: &Path, procs: &[(u32, u32, u64, &[u32])]) {
        std::fs::write(
            root.join("stat"),
            "cpu  1 0 1 7 1 0 0 0 0 0\ncpu0 1 0 1 7 1 0 0 0\n",
        )
        .expect("stat");
        std::fs::write(root.join("uptime"), "1000.0 900.0\n").expect("uptime");
        for &(pid, ppid, ticks, threads) in procs {
            let dir = root.join(pid.to_string());
            std::fs::create_dir_all(&dir).expect("dir");
            std::fs::write(
                dir.join("stat"),
                format!("{pid} (p{pid}) S {ppid} 1 1 0 -1 0 0 0 0 0 {ticks} 0 0 0 20 0 1 0 5000 1000 100 0\n"),
            )
            .expect("stat");
            std::fs::write(dir.join("cmdline"), format!("p{pid}\0")).expect("cmdline");
            for (i, tid) in threads.iter().enumerate() {
                let task = dir.join("task").join(tid.to_string());
                std::fs::create_dir_all(&task).expect("task");
                // Children are listed by the thread that forked them: here the last thread
                // forked every child, the others none.
                let kids: Vec<String> = procs
                    .iter()
                    .filter(|p| p.1 == pid && i + 1 == threads.len())
                    .map(|p| p.0.to_string())
                    .collect();
                std::fs::write(task.join("children"), kids.join(" ")).expect("children");
            }
        }
    }

    fn gpu_sample(pid: u32) -> Sample {
        Sample {
            gpus: vec![crate::model::GpuReading {
                processes: vec![GpuProcess {
                    pid,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn workers_are_followed_through_children_lists_without_reading_other_processes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        // 100 trains with workers 101 and 102 (forked by its second thread); 7 is unrelated.
        write_tree(
            root,
            &[
                (100, 1, 0, &[100, 150]),
                (101, 100, 0, &[101]),
                (102, 100, 0, &[102]),
                (7, 1, 0, &[7]),
            ],
        );
        let mut probe = HostProbe::with_root(root);
        let mut s = gpu_sample(100);
        probe.fill_at(&mut s, 10.0);
        let kids = |s: &Sample| -> Vec<u32> {
            s.gpus[0].processes[0]
                .children
                .iter()
                .map(|c| c.pid)
                .collect()
        };
        assert_eq!(kids(&s), vec![101, 102]);
        assert!(
            probe.table().get(7).is_some(),
            "the first reading scans everything"
        );

        // A second later: worker 102 exited, 103 started (a grandchild 104 under it), 101 burned
        // 50 ticks, and an unrelated process 8 started.
        std::fs::remove_dir_all(root.join("102")).expect("rm");
        write_tree(
            root,
            &[
                (100, 1, 0, &[100, 150]),
                (101, 100, 50, &[101]),
                (103, 100, 0, &[103]),
                (104, 103, 0, &[104]),
                (7, 1, 0, &[7]),
                (8, 1, 0, &[8]),
            ],
        );
        let mut s = gpu_sample(100);
        probe.fill_at(&mut s, 11.0);
        assert_eq!(probe.children_lists, Some(true));
        assert_eq!(kids(&s), vec![101, 103, 104]);
        let w101 = &s.gpus[0].processes[0].children[0];
        assert_eq!(
            w101.cpu_percent,
            Some(50.0 / probe.clock_ticks_per_s * 100.0)
        );
        assert!(probe.table().get(8).is_none(), "no full scan between");
        assert!(probe.table().get(102).is_none());

        // Within the second: nothing is read again.
        std::fs::remove_dir_all(root.join("103")).expect("rm");
        let mut s = gpu_sample(100);
        probe.fill_at(&mut s, 11.5);
        assert_eq!(kids(&s), vec![101, 103, 104]);

        // The full scan comes FULL_SCAN_S after the last one.
        let mut s = gpu_sample(100);
        probe.fill_at(&mut s, 10.0 + FULL_SCAN_S);
        assert!(probe.table().get(8).is_some());
        assert_eq!(
            kids(&s),
            vec![101],
            "103 gone; its child 104 no longer under 100"
        );
    }

    #[test]
    fn a_child_that_execs_is_shown_with_its_new_command() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        write_tree(root, &[(100, 1, 0, &[100]), (101, 100, 0, &[101])]);
        let mut probe = HostProbe::with_root(root);
        let hz = probe.clock_ticks_per_s;
        // Worker 101 started 0.2 s before uptime 1000 s.
        let set = |uptime: f64, comm: &str, cmdline: &str| {
            std::fs::write(root.join("uptime"), format!("{uptime} 0\n")).expect("uptime");
            let start = (999.8 * hz) as u64;
            std::fs::write(
                root.join("101").join("stat"),
                format!(
                    "101 ({comm}) S 100 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 {start} 1000 100 0\n"
                ),
            )
            .expect("stat");
            std::fs::write(root.join("101").join("cmdline"), format!("{cmdline}\0"))
                .expect("cmdline");
        };
        let command = |probe: &mut HostProbe, at: f64| {
            let mut s = gpu_sample(100);
            probe.fill_at(&mut s, at);
            s.gpus[0].processes[0].children[0].command.clone()
        };
        // Just forked: still its parent's command line.
        set(1000.0, "p100", "p100");
        assert_eq!(command(&mut probe, 10.0).as_deref(), Some("p100"));
        // Still young when it exec'd (same name): read again.
        set(1000.5, "p100", "python worker.py");
        assert_eq!(
            command(&mut probe, 11.0).as_deref(),
            Some("python worker.py")
        );
        // Settled, then an exec under a new name: read again.
        set(1010.0, "cat", "cat");
        assert_eq!(command(&mut probe, 12.0).as_deref(), Some("cat"));
        // Settled and the same name: kept (the command line is not read again).
        set(1011.0, "cat", "rewritten");
        assert_eq!(command(&mut probe, 13.0).as_deref(), Some("cat"));
    }

    #[test]
    fn without_children_lists_the_whole_tree_is_scanned_every_interval() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        write_tree(root, &[(100, 1, 0, &[]), (101, 100, 0, &[])]);
        let mut probe = HostProbe::with_root(root);
        let mut s = gpu_sample(100);
        probe.fill_at(&mut s, 10.0);
        write_tree(
            root,
            &[
                (100, 1, 0, &[]),
                (101, 100, 0, &[]),
                (105, 100, 0, &[]),
                (8, 1, 0, &[]),
            ],
        );
        let mut s = gpu_sample(100);
        probe.fill_at(&mut s, 11.0);
        assert_eq!(probe.children_lists, Some(false));
        assert!(probe.table().get(8).is_some(), "scanned again");
        let kids: Vec<u32> = s.gpus[0].processes[0]
            .children
            .iter()
            .map(|c| c.pid)
            .collect();
        assert_eq!(kids, vec![101, 105]);
    }
}
