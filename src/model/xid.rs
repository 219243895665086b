//! What an XID means and what to do about it, after NVIDIA's XID catalogue
//! (docs.nvidia.com/deploy/xid-errors): the XIDs a data-centre GPU reports in practice.

use super::Severity;

/// What to do after an XID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XidAction {
    /// The application caused it: fix the application; the GPU is healthy.
    FixApplication,
    /// Reset the GPU to apply a pending repair (a remapped row), when it is idle.
    ResetGpu,
    /// Take the node out of the scheduler, reset the GPU, run a diagnostic; RMA if it recurs.
    DrainAndReset,
    /// The GPU stopped answering: drain the node, check power and seating, reboot.
    DrainAndReboot,
    /// The GPU ran out of spare memory rows: replace it.
    Rma,
    /// Nothing failed yet: watch the rate, reset at the next maintenance.
    Watch,
    /// Not in gpulse's catalogue.
    LookUp,
}

impl XidAction {
    /// The fix in words.
    pub fn text(self) -> &'static str {
        match self {
            XidAction::FixApplication => "fix the application: run it under compute-sanitizer to find the bad access; the GPU itself is fine unless other jobs hit the same XID",
            XidAction::ResetGpu => "reset the GPU to apply pending remaps (nvidia-smi -r -i GPU while it is idle, or reboot)",
            XidAction::DrainAndReset => "drain the node, reset the GPU (nvidia-smi -r) and run dcgmi diag -r 2; if the XID comes back, RMA the GPU",
            XidAction::DrainAndReboot => "drain the node, check the GPU's power cables, seating and PCIe riser, and reboot; if it falls off the bus again, RMA the GPU",
            XidAction::Rma => "drain the node and RMA the GPU: it has no spare memory rows left",
            XidAction::Watch => "watch the corrected-error rate; reset the GPU at the next maintenance, and RMA it if the rate stays high",
            XidAction::LookUp => "look the XID up in NVIDIA's XID catalogue (docs.nvidia.com/deploy/xid-errors) for the action",
        }
    }
}

/// One XID's entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XidInfo {
    pub xid: u64,
    pub meaning: &'static str,
    pub action: XidAction,
    /// How bad for the finding that reports it.
    pub severity: Severity,
}

impl XidInfo {
    /// The application's own fault (the GPU is not at fault).
    pub fn application(&self) -> bool {
        self.action == XidAction::FixApplication
    }
}

const CATALOGUE: &[(u64, &str, XidAction, Severity)] = &[
    (
        13,
        "graphics engine exception: a kernel ran an illegal instruction or accessed memory out of range",
        XidAction::FixApplication,
        Severity::High,
    ),
    (
        31,
        "GPU memory page fault: the application accessed an address it had not mapped",
        XidAction::FixApplication,
        Severity::High,
    ),
    (
        43,
        "GPU stopped processing: the application hit a fault and its work was stopped",
        XidAction::FixApplication,
        Severity::High,
    ),
    (
        45,
        "preemptive cleanup: the driver stopped the application after an earlier error",
        XidAction::FixApplication,
        Severity::High,
    ),
    (
        48,
        "double-bit ECC error: an uncorrectable memory error stopped the applications on the GPU",
        XidAction::DrainAndReset,
        Severity::High,
    ),
    (
        61,
        "internal micro-controller breakpoint",
        XidAction::DrainAndReset,
        Severity::High,
    ),
    (
        62,
        "internal micro-controller halt",
        XidAction::DrainAndReset,
        Severity::High,
    ),
    (
        63,
        "row remapping recorded: a memory row is marked for remapping at the next reset",
        XidAction::ResetGpu,
        Severity::Warn,
    ),
    (
        64,
        "row remapping failed: a memory row could not be remapped",
        XidAction::Rma,
        Severity::High,
    ),
    (
        74,
        "NVLink error: a link failed (training, CRC or a fatal link error)",
        XidAction::DrainAndReset,
        Severity::High,
    ),
    (
        79,
        "GPU has fallen off the bus: it stopped answering on PCIe",
        XidAction::DrainAndReboot,
        Severity::High,
    ),
    (
        92,
        "high single-bit ECC error rate: memory errors are being corrected often",
        XidAction::Watch,
        Severity::Warn,
    ),
    (
        94,
        "contained ECC error: an uncorrectable memory error stopped the application that hit it",
        XidAction::DrainAndReset,
        Severity::High,
    ),
    (
        95,
        "uncontained ECC error: an uncorrectable memory error stopped every application on the GPU",
        XidAction::DrainAndReset,
        Severity::High,
    ),
    (
        119,
        "GSP RPC timeout: the GPU's system processor stopped answering the driver",
        XidAction::DrainAndReset,
        Severity::High,
    ),
    (
        120,
        "GSP error: the GPU's system processor reported an error",
        XidAction::DrainAndReset,
        Severity::High,
    ),
];

/// The catalogue entry of `xid` (a generic one for XIDs the catalogue does not hold).
pub fn xid_info(xid: u64) -> XidInfo {
    CATALOGUE
        .iter()
        .find(|(x, ..)| *x == xid)
        .map(|&(xid, meaning, action, severity)| XidInfo {
            xid,
            meaning,
            action,
            severity,
        })
        .unwrap_or(XidInfo {
            xid,
            meaning: if xid == 999 {
                "an XID the driver could not name"
            } else {
                "an XID gpulse has no description of"
            },
            action: XidAction::LookUp,
            severity: Severity::High,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_common_xids_have_their_meaning_and_action() {
        let off_bus = xid_info(79);
        assert!(off_bus.meaning.contains("fallen off the bus"));
        assert_eq!(off_bus.action, XidAction::DrainAndReboot);
        assert!(xid_info(13).application() && xid_info(31).application());
        assert!(!xid_info(48).application());
        assert_eq!(xid_info(63).severity, Severity::Warn);
        assert!(xid_info(63)
            .action
            .text()
            .contains("reset the GPU to apply pending remaps"));
        assert_eq!(xid_info(74).action, XidAction::DrainAndReset);
        let unknown = xid_info(4242);
        assert_eq!(unknown.action, XidAction::LookUp);
        assert!(unknown.action.text().contains("XID catalogue"));
    }

    #[test]
    fn every_entry_is_listed_once() {
        let mut xids: Vec<u64> = CATALOGUE.iter().map(|e| e.0).collect();
        let n = xids.len();
        xids.sort_unstable();
        xids.dedup();
        assert_eq!(xids.len(), n);
    }
}
