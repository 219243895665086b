//! Worst first: the order in which the fleet view lists GPUs and hosts.
//!
//! 1. a sick GPU (an XID, uncorrectable memory errors, a failed or pending row remap) and a GPU
//!    losing most of its time for a known reason: input starvation, erratic stalls, throttling,
//!    memory held idle;
//! 2. any other warning (host bound, periodic stalls, PCIe degraded, ...);
//! 3. a GPU whose data stopped arriving, that has no verdict at all, or whose verdict is still
//!    pending (too little data);
//! 4. healthy, and busy with its tensor cores idle (lost speed, not lost time);
//! 5. idle.
//!
//! Within a class: sick first (faults before warnings), higher severity, then more time lost,
//! then host name and GPU index. Hosts are ordered by their worst GPU, then by how many GPUs
//! share that class (a host with a sick GPU first).

use std::cmp::{Ordering, Reverse};
use std::collections::BTreeMap;

use super::model::{FleetGpu, FleetHost};
use crate::model::{FindingKind, Severity};

/// The verdicts that head the list.
pub const TOP: [FindingKind; 5] = [
    FindingKind::GpuFault,
    FindingKind::InputStarvation,
    FindingKind::ErraticStalls,
    FindingKind::Throttled,
    FindingKind::MemoryIdle,
];

/// 0 (worst) to 4 (idle); see the module doc.
pub fn class(g: &FleetGpu) -> u8 {
    if g.sickness() > 0 {
        return 0;
    }
    let kinds = g
        .verdict
        .into_iter()
        .chain(g.findings.iter().map(|f| f.kind));
    let mut class = 9;
    for k in kinds {
        let c = if TOP.contains(&k) {
            0
        } else if k == FindingKind::Pending {
            2
        } else if k == FindingKind::Healthy || k == FindingKind::TensorCoresIdle {
            3
        } else if k == FindingKind::Idle {
            4
        } else {
            1
        };
        class = class.min(c);
    }
    if g.is_stale() && class > 1 {
        return 2;
    }
    if class == 9 {
        return 2;
    }
    // A finding the exporter rates only as information does not lift a healthy GPU.
    if class == 1
        && g.verdict
            .is_some_and(|v| v == FindingKind::Healthy || v == FindingKind::Idle)
        && g.findings
            .iter()
            .filter(|f| !TOP.contains(&f.kind))
            .all(|f| f.severity == Severity::Info)
    {
        return if g.verdict == Some(FindingKind::Idle) {
            4
        } else {
            3
        };
    }
    class
}

/// Compare two GPUs, worst first.
pub fn compare(a: &FleetGpu, b: &FleetGpu) -> Ordering {
    let key = |g: &FleetGpu| {
        (
            class(g),
            Reverse(g.sickness()),
            Reverse(g.worst_severity()),
            Reverse(OrdF64(g.lost_fraction.unwrap_or(0.0))),
        )
    };
    key(a)
        .cmp(&key(b))
        .then_with(|| a.hostname.cmp(&b.hostname))
        .then_with(|| a.instance.cmp(&b.instance))
        .then_with(|| a.gpu_number().cmp(&b.gpu_number()))
        .then_with(|| a.gpu.cmp(&b.gpu))
}

/// Group GPUs by host and order hosts and GPUs worst first.
pub fn group(gpus: Vec<FleetGpu>) -> Vec<FleetHost> {
    let mut by_host: BTreeMap<String, Vec<FleetGpu>> = BTreeMap::new();
    for g in gpus {
        by_host.entry(g.hostname.clone()).or_default().push(g);
    }
    let mut hosts: Vec<FleetHost> = by_host
        .into_iter()
        .map(|(name, mut gpus)| {
            gpus.sort_by(compare);
            FleetHost { name, gpus }
        })
        .collect();
    hosts.sort_by(|a, b| {
        let worst = |h: &FleetHost| h.gpus.first().map(class).unwrap_or(9);
        let (wa, wb) = (worst(a), worst(b));
        let count = |h: &FleetHost, c: u8| h.gpus.iter().filter(|g| class(g) == c).count();
        let sick = |h: &FleetHost| h.gpus.first().map_or(0, FleetGpu::sickness);
        wa.cmp(&wb)
            .then_with(|| sick(b).cmp(&sick(a)))
            .then_with(|| count(b, wb).cmp(&count(a, wa)))
            .then_with(|| match (a.gpus.first(), b.gpus.first()) {
                (Some(x), Some(y)) => compare(x, y),
                _ => Ordering::Equal,
            })
            .then_with(|| a.name.cmp(&b.name))
    });
    hosts
}

/// A total order on floats for sort keys (NaN sorts as equal to everything and last in practice).
#[derive(Debug, Clone, Copy, PartialEq)]
struct OrdF64(f64);

impl Eq for OrdF64 {}

impl PartialOrd for OrdF64 {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OrdF64 {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}
