//! Finding a GPU process here from the PID the driver reports.
//!
//! NVML reports PIDs of the host's PID namespace. On the host (or in a container sharing the host's
//! PID namespace) they are visible as they are; a process that runs in a container is then found
//! directly, and the last field of its `NSpid` line gives its PID inside the container (shown as
//! `namespace_pid`). Inside a container with its own PID namespace the host PIDs are not visible
//! (its procfs lists container PIDs only, so `NSpid` cannot map them either); then the processes
//! holding `/dev/nvidiaN` open are used: when exactly one such process is left for GPU N with
//! exactly one unresolved PID, they are the same process. Descriptors are read only when something
//! is unresolved, at most [`FD_BUDGET`] per process and [`TOTAL_FD_BUDGET`] per search.
//!
//! What remains is reported unresolved (shown as "pid N (not visible here)"), never dropped.

use std::collections::HashMap;
use std::path::Path;

use super::proc_table::ProcTable;
use super::procfs;

/// Most descriptors read per process when looking for `/dev/nvidia*` holders.
pub const FD_BUDGET: usize = 512;
/// Most descriptors read in one search, over all processes.
pub const TOTAL_FD_BUDGET: usize = 20_000;

/// How a reported PID was found here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// Visible under the same PID.
    Direct,
    /// The only process left holding this GPU's device node open.
    DeviceHolder { local: u32 },
    /// Not found.
    Unresolved,
}

impl Resolution {
    /// The PID to read and signal here, if found.
    pub fn local_pid(self, reported: u32) -> Option<u32> {
        match self {
            Resolution::Direct => Some(reported),
            Resolution::DeviceHolder { local } => Some(local),
            Resolution::Unresolved => None,
        }
    }
}

/// Resolve every `(gpu_index, pid)` the backend reported, against one table scan.
/// `exclude` is a PID never taken as a device holder (the monitor itself holds the devices open).
pub fn resolve_all(
    root: &Path,
    table: &ProcTable,
    wanted: &[(u32, u32)],
    exclude: Option<u32>,
) -> HashMap<u32, Resolution> {
    let mut out: HashMap<u32, Resolution> = HashMap::new();
    let mut pending: Vec<(u32, u32)> = Vec::new();
    for &(gpu, pid) in wanted {
        if table.get(pid).is_some() {
            out.insert(pid, Resolution::Direct);
        } else {
            pending.push((gpu, pid));
        }
    }
    if pending.is_empty() {
        return out;
    }

    // Device holders not already accounted for.
    let taken: Vec<u32> = out
        .iter()
        .filter_map(|(pid, r)| r.local_pid(*pid))
        .collect();
    let mut locals: Vec<u32> = table.entries.keys().copied().collect();
    locals.sort_unstable();
    let mut holders: Vec<(u32, Vec<String>)> = Vec::new();
    let mut fds_left = TOTAL_FD_BUDGET;
    for p in locals
        .into_iter()
        .filter(|p| Some(*p) != exclude && !taken.contains(p))
    {
        if fds_left == 0 {
            break;
        }
        let budget = FD_BUDGET.min(fds_left);
        if let Some((devs, read)) = procfs::holds_nvidia_device(root, p, budget) {
            fds_left -= read.min(fds_left);
            if !devs.is_empty() {
                holders.push((p, devs));
            }
        }
    }
    let mut used: Vec<u32> = Vec::new();
    for &(gpu, pid) in &pending {
        let node = format!("/dev/nvidia{gpu}");
        let same_gpu = pending.iter().filter(|(g, _)| *g == gpu).count();
        let candidates: Vec<u32> = holders
            .iter()
            .filter(|(p, devs)| !used.contains(p) && devs.contains(&node))
            .map(|(p, _)| *p)
            .collect();
        let r = match (same_gpu, candidates.as_slice()) {
            (1, [only]) => {
                used.push(*only);
                Resolution::DeviceHolder { local: *only }
            }
            _ => Resolution::Unresolved,
        };
        out.insert(pid, r);
    }
    out
}
