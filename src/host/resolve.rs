//! Finding a GPU process here from the PID the driver reports.
//!
//! NVML reports PIDs of the host's PID namespace. On the host they are visible as they are. Inside a
//! container with its own PID namespace they are not, and three ways are tried in order:
//! 1. the PID itself is visible (on the host, or a container sharing the host's PID namespace);
//! 2. a visible process lists the PID in its `NSpid` line (a procfs of an outer namespace);
//! 3. the processes holding `/dev/nvidia*` open: when exactly one such process is left for a GPU
//!    with exactly one unresolved PID, they are the same process. Descriptors are read only when
//!    steps 1 and 2 leave something unresolved, and at most [`FD_BUDGET`] per process.
//!
//! What remains is reported unresolved (shown as "pid N (not visible here)"), never dropped.

use std::collections::HashMap;
use std::path::Path;

use super::procfs;
use super::table::ProcTable;

/// Most descriptors read per process when looking for `/dev/nvidia*` holders.
pub const FD_BUDGET: usize = 512;
/// Most processes whose descriptors are read in one search.
pub const PROCESS_BUDGET: usize = 4096;

/// How a reported PID was found here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// Visible under the same PID.
    Direct,
    /// Listed in the `NSpid` line of the visible process `local`.
    Namespace { local: u32 },
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
            Resolution::Namespace { local } | Resolution::DeviceHolder { local } => Some(local),
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

    // NSpid: the outer-namespace PIDs of each visible process.
    let mut by_nspid: HashMap<u32, u32> = HashMap::new();
    for &local in table.entries.keys() {
        if let Some(st) = procfs::read_status(root, local) {
            for &ns in st.nspid.iter().filter(|&&ns| ns != local) {
                by_nspid.insert(ns, local);
            }
        }
    }
    pending.retain(|&(_, pid)| match by_nspid.get(&pid) {
        Some(&local) => {
            out.insert(pid, Resolution::Namespace { local });
            false
        }
        None => true,
    });
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
    let holders: Vec<(u32, Vec<String>)> = locals
        .into_iter()
        .filter(|p| Some(*p) != exclude && !taken.contains(p))
        .take(PROCESS_BUDGET)
        .filter_map(|p| {
            let devs = procfs::holds_nvidia_device(root, p, FD_BUDGET)?;
            (!devs.is_empty()).then_some((p, devs))
        })
        .collect();
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
