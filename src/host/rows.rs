//! The process table as rows: sorted by a column, filtered by text, optionally as a tree (each GPU
//! process followed by its descendants). Front ends draw these rows; nothing here draws.

use super::process_identity::ProcessIdentity;
use crate::model::GpuProcess;

/// The column a process table is sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortKey {
    Pid,
    User,
    #[default]
    GpuMemory,
    SmUtil,
    MemUtil,
    Cpu,
    Rss,
    Running,
    /// The pod, container or Slurm job.
    Job,
    Command,
}

impl SortKey {
    pub const ALL: [SortKey; 10] = [
        SortKey::Pid,
        SortKey::User,
        SortKey::GpuMemory,
        SortKey::SmUtil,
        SortKey::MemUtil,
        SortKey::Cpu,
        SortKey::Rss,
        SortKey::Running,
        SortKey::Job,
        SortKey::Command,
    ];

    /// The column heading.
    pub fn title(self) -> &'static str {
        match self {
            SortKey::Pid => "PID",
            SortKey::User => "USER",
            SortKey::GpuMemory => "GPU MEM",
            SortKey::SmUtil => "UTIL%",
            SortKey::MemUtil => "MEMBUSY%",
            SortKey::Cpu => "CPU%",
            SortKey::Rss => "RSS",
            SortKey::Running => "TIME",
            SortKey::Job => "JOB",
            SortKey::Command => "COMMAND",
        }
    }

    /// The next column (for a "sort by next column" key), wrapping around.
    pub fn next(self) -> SortKey {
        let i = SortKey::ALL.iter().position(|k| *k == self).unwrap_or(0);
        SortKey::ALL[(i + 1) % SortKey::ALL.len()]
    }
}

/// How to lay out the table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProcessView {
    pub sort: SortKey,
    /// Largest first (the natural order for numbers); `false` for ascending.
    pub descending: bool,
    /// Case-insensitive text matched against PID, user, job and command; after `job:`, against
    /// the job alone (`job:ml-team`, `job:slurm`). Empty: no filter.
    pub filter: String,
    /// Show each GPU process's descendants under it.
    pub tree: bool,
}

/// One line of the process table. GPU columns are absent on child rows.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessRow {
    pub gpu: u32,
    /// 0 for a GPU process, 1 for its children, 2 for grandchildren, ...
    pub depth: usize,
    /// The PID as reported (NVML's, for GPU processes).
    pub pid: u32,
    /// The process to signal here (its PID here and start time); `None` when the process is not
    /// visible here.
    pub signal_target: Option<ProcessIdentity>,
    pub user: Option<String>,
    pub gpu_memory_bytes: Option<u64>,
    pub sm_util: Option<f64>,
    pub mem_util: Option<f64>,
    pub cpu_percent: Option<f64>,
    pub rss_bytes: Option<u64>,
    pub running_s: Option<f64>,
    /// Kernel state letter, where the host could read it.
    pub state: Option<char>,
    /// The command, or "pid N (not visible here)" for an unresolved process.
    pub command: String,
    pub resolved: bool,
    /// The process's job in words (`pod train-7f9c/ml-team`); a child row has its parent's.
    pub job: Option<String>,
}

/// Words for a kernel state letter: "running", "sleeping", "disk wait", ...
pub fn state_name(state: char) -> &'static str {
    match state {
        'R' => "running",
        'S' => "sleeping",
        'D' => "disk wait",
        'Z' => "zombie",
        'T' | 't' => "stopped",
        'I' => "idle",
        'X' => "dead",
        _ => "other",
    }
}

fn gpu_row(gpu: u32, p: &GpuProcess) -> ProcessRow {
    ProcessRow {
        gpu,
        depth: 0,
        pid: p.pid,
        signal_target: super::signal_target(p).ok(),
        user: p.user.clone(),
        gpu_memory_bytes: p.gpu_memory_bytes,
        sm_util: p.sm_util,
        mem_util: p.mem_util,
        cpu_percent: p.cpu_percent,
        rss_bytes: p.rss_bytes,
        running_s: p.running_s,
        state: p.state,
        command: match (&p.command, p.resolved) {
            (Some(c), _) => c.clone(),
            (None, false) => super::unresolved_label(p.pid),
            (None, true) => String::new(),
        },
        resolved: p.resolved,
        job: p.job.as_ref().map(|j| j.label()),
    }
}

/// The prefix that filters by job alone.
pub const JOB_FILTER: &str = "job:";

fn matches(row: &ProcessRow, needle: &str) -> bool {
    let job = |n: &str| {
        row.job
            .as_deref()
            .is_some_and(|j| j.to_lowercase().contains(n))
    };
    if let Some(n) = needle.strip_prefix(JOB_FILTER) {
        return job(n.trim());
    }
    needle.is_empty()
        || job(needle)
        || row.pid.to_string().contains(needle)
        || row
            .user
            .as_deref()
            .is_some_and(|u| u.to_lowercase().contains(needle))
        || row.command.to_lowercase().contains(needle)
}

fn compare(a: &ProcessRow, b: &ProcessRow, key: SortKey) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    fn opt<T: PartialOrd>(a: Option<T>, b: Option<T>) -> Ordering {
        match (a, b) {
            (Some(x), Some(y)) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
            (Some(_), None) => Ordering::Greater,
            (None, Some(_)) => Ordering::Less,
            (None, None) => Ordering::Equal,
        }
    }
    match key {
        SortKey::Pid => a.pid.cmp(&b.pid),
        SortKey::User => opt(a.user.as_deref(), b.user.as_deref()),
        SortKey::GpuMemory => opt(a.gpu_memory_bytes, b.gpu_memory_bytes),
        SortKey::SmUtil => opt(a.sm_util, b.sm_util),
        SortKey::MemUtil => opt(a.mem_util, b.mem_util),
        SortKey::Cpu => opt(a.cpu_percent, b.cpu_percent),
        SortKey::Rss => opt(a.rss_bytes, b.rss_bytes),
        SortKey::Running => opt(a.running_s, b.running_s),
        SortKey::Job => opt(a.job.as_deref(), b.job.as_deref()),
        SortKey::Command => a.command.cmp(&b.command),
    }
}

/// Rows for the processes of every GPU, as `(gpu index, process)` pairs. Sorting orders the GPU
/// processes (absent values last either way; ties by GPU, then PID); in tree mode each is followed by
/// its descendants, in tree order. A filter keeps a GPU process when it or a descendant matches, and
/// in tree mode shows all its descendants when it matches itself, else only the matching ones.
pub fn process_rows<'a>(
    procs: impl IntoIterator<Item = (u32, &'a GpuProcess)>,
    view: &ProcessView,
) -> Vec<ProcessRow> {
    let needle = view.filter.trim().to_lowercase();
    let mut groups: Vec<(ProcessRow, Vec<ProcessRow>)> = Vec::new();
    for (gpu, p) in procs {
        let head = gpu_row(gpu, p);
        let own = p.local_pid.unwrap_or(p.pid);
        let kids: Vec<ProcessRow> = tree_order(own, &p.children)
            .into_iter()
            .map(|c| ProcessRow {
                gpu,
                depth: depth_of(c.ppid, own, &p.children),
                pid: c.pid,
                signal_target: p.resolved.then_some(ProcessIdentity {
                    pid: c.pid,
                    start_ticks: c.start_ticks,
                }),
                user: p.user.clone(),
                gpu_memory_bytes: None,
                sm_util: None,
                mem_util: None,
                cpu_percent: c.cpu_percent,
                rss_bytes: c.rss_bytes,
                running_s: None,
                state: c.state,
                command: c.command.clone().unwrap_or_default(),
                resolved: p.resolved,
                job: head.job.clone(),
            })
            .collect();
        let head_matches = matches(&head, &needle);
        let kids: Vec<ProcessRow> = if head_matches {
            kids
        } else {
            kids.into_iter().filter(|k| matches(k, &needle)).collect()
        };
        if head_matches || !kids.is_empty() {
            groups.push((head, kids));
        }
    }
    groups.sort_by(|(a, _), (b, _)| {
        let o = compare(a, b, view.sort);
        let absent_last = match (is_absent(a, view.sort), is_absent(b, view.sort)) {
            (false, true) => std::cmp::Ordering::Less,
            (true, false) => std::cmp::Ordering::Greater,
            _ => std::cmp::Ordering::Equal,
        };
        absent_last
            .then(if view.descending { o.reverse() } else { o })
            .then(a.gpu.cmp(&b.gpu))
            .then(a.pid.cmp(&b.pid))
    });
    let mut rows = Vec::new();
    for (head, kids) in groups {
        rows.push(head);
        if view.tree {
            rows.extend(kids);
        }
    }
    rows
}

fn is_absent(r: &ProcessRow, key: SortKey) -> bool {
    match key {
        SortKey::Pid | SortKey::Command => false,
        SortKey::User => r.user.is_none(),
        SortKey::GpuMemory => r.gpu_memory_bytes.is_none(),
        SortKey::SmUtil => r.sm_util.is_none(),
        SortKey::MemUtil => r.mem_util.is_none(),
        SortKey::Cpu => r.cpu_percent.is_none(),
        SortKey::Rss => r.rss_bytes.is_none(),
        SortKey::Running => r.running_s.is_none(),
        SortKey::Job => r.job.is_none(),
    }
}

/// `all` in tree order below `own`: each process followed by its own descendants, siblings by PID.
/// Processes whose parent is not in `all` are placed directly under `own`.
fn tree_order(own: u32, all: &[crate::model::HostProcess]) -> Vec<&crate::model::HostProcess> {
    let known = |pid: Option<u32>| pid.is_some_and(|pp| all.iter().any(|c| c.pid == pp));
    let mut tops: Vec<&crate::model::HostProcess> = all
        .iter()
        .filter(|c| c.ppid == Some(own) || !known(c.ppid))
        .collect();
    tops.sort_by_key(|c| std::cmp::Reverse(c.pid));
    let mut stack = tops;
    let mut out = Vec::new();
    while let Some(c) = stack.pop() {
        if out.len() >= all.len() {
            break;
        }
        out.push(c);
        let mut kids: Vec<&crate::model::HostProcess> = all
            .iter()
            .filter(|k| k.ppid == Some(c.pid) && k.pid != own)
            .collect();
        kids.sort_by_key(|k| std::cmp::Reverse(k.pid));
        stack.extend(kids);
    }
    out
}

/// Depth of a descendant below the GPU process `own`, following `ppid` links through `all`.
fn depth_of(ppid: Option<u32>, own: u32, all: &[crate::model::HostProcess]) -> usize {
    let mut depth = 1;
    let mut parent = ppid;
    while let Some(pp) = parent {
        if pp == own || depth > all.len() {
            break;
        }
        parent = all.iter().find(|c| c.pid == pp).and_then(|c| c.ppid);
        depth += 1;
    }
    depth
}

/// A running time as people read it: `45s`, `12m03s`, `3h07m`, `2d04h`.
pub fn format_running(seconds: f64) -> String {
    let s = seconds.max(0.0) as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        3600..86400 => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d{:02}h", s / 86400, (s % 86400) / 3600),
    }
}
