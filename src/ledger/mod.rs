//! The waste ledger: where each GPU's time and energy went, what its bottlenecks cost, and who
//! was on the GPU while they did.
//!
//! The engine owns one [`LedgerBook`] per GPU and feeds it every tick after the detector: the
//! verdict the snapshot shows, the active findings' lost shares, the processes, the power and the
//! energy counter. Each interval between two ticks is booked under the state shown during it
//! (the verdict and shares of the tick that began it). Every front end reads the same
//! [`GpuLedger`] through the snapshot; `gpulse analyze` runs the same engine. How each figure is
//! computed, and its error, is in `docs/LEDGER.md`.

mod backfill;
mod book;
mod energy;
mod health_book;
pub mod jobs;
pub mod report;
mod share;

use std::sync::Arc;

use crate::model::{FindingKind, UnixTime};

pub use book::{LedgerBook, TickInput};
pub use energy::Joules;
pub use health_book::{FaultLoss, HealthLedger, FAULT_END_GRACE_S};
pub use jobs::JobLedger;
pub use report::{Cost, LedgerReport, Prices};
pub use share::{lost_share, process_weights, HELD_BYTES};

/// Seconds per kind (verdicts, or the kinds time was lost to), one slot per [`FindingKind`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct KindSeconds([f64; FindingKind::ALL.len()]);

impl KindSeconds {
    fn slot(kind: FindingKind) -> usize {
        FindingKind::ALL
            .iter()
            .position(|k| *k == kind)
            .unwrap_or_default()
    }

    pub fn add(&mut self, kind: FindingKind, seconds: f64) {
        self.0[Self::slot(kind)] += seconds;
    }

    pub fn get(&self, kind: FindingKind) -> f64 {
        self.0[Self::slot(kind)]
    }

    /// The kinds with time booked, in [`FindingKind::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (FindingKind, f64)> + '_ {
        FindingKind::ALL
            .iter()
            .zip(self.0.iter())
            .filter(|(_, s)| **s > 0.0)
            .map(|(k, s)| (*k, *s))
    }

    /// The kind with the most time, if any has some.
    pub fn largest(&self) -> Option<(FindingKind, f64)> {
        self.iter().fold(None, |best, (k, s)| match best {
            Some((_, b)) if b >= s => best,
            _ => Some((k, s)),
        })
    }
}

/// One process's share of a GPU since it was first seen there.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessLedger {
    pub pid: u32,
    pub user: Option<Arc<str>>,
    pub command: Option<Arc<str>>,
    pub first_seen: UnixTime,
    pub last_seen: UnixTime,
    /// Its share of the GPU's booked time.
    pub gpu_seconds: f64,
    /// Its share of the GPU's lost time.
    pub lost_gpu_seconds: f64,
    /// Its share of the GPU's energy (absent while the GPU has no power or energy reading).
    pub energy: Joules,
    /// Position of its user in [`GpuLedger::users`] (none when that table is full).
    pub(crate) user_slot: Option<usize>,
    /// Position of its job in [`GpuLedger::jobs`] (none without a job, or when that table is
    /// full).
    pub(crate) job_slot: Option<usize>,
}

/// One user's share of a GPU: the sum of their processes', kept also for processes the process
/// table no longer holds.
#[derive(Debug, Clone, PartialEq)]
pub struct UserLedger {
    /// `None` for processes whose owner could not be read (another PID namespace).
    pub user: Option<Arc<str>>,
    pub gpu_seconds: f64,
    pub lost_gpu_seconds: f64,
    pub energy: Joules,
}

/// What the verdict shown now has cost since it began (since the start of its finding's evidence
/// when the finding was raised later than that).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VerdictCost {
    pub verdict: FindingKind,
    pub since: UnixTime,
    pub seconds: f64,
    pub lost_gpu_seconds: f64,
    pub energy: Joules,
}

/// One GPU's ledger since the engine started: a read-only view, shared by the snapshot.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GpuLedger {
    /// The first and the newest tick booked.
    pub since: Option<UnixTime>,
    pub until: Option<UnixTime>,
    /// Seconds booked: the time between ticks, without gaps longer than [`book::MAX_GAP_S`].
    pub span_s: f64,
    pub seconds_by_verdict: KindSeconds,
    /// GPU-seconds lost: at each moment the largest lost share of what applied then.
    pub lost_gpu_seconds: f64,
    /// The same, by the kind that set the share.
    pub lost_by_kind: KindSeconds,
    /// Energy drawn; `None` until the GPU gives a power or an energy reading.
    pub energy: Option<Joules>,
    /// Energy drawn in lost time (each interval's energy times its lost share).
    pub lost_energy: Joules,
    /// Processes seen on the GPU, in order of first appearance (bounded: see
    /// [`book::MAX_PROCESSES`]).
    pub processes: Vec<ProcessLedger>,
    pub users: Vec<UserLedger>,
    /// Pods, containers and Slurm jobs seen on the GPU (bounded: see [`jobs::MAX_JOBS`]).
    pub jobs: Vec<JobLedger>,
    /// Processes dropped from the full process table (their time stays in the GPU's and their
    /// user's totals).
    pub processes_dropped: u64,
    /// The current verdict's cost so far.
    pub current: Option<VerdictCost>,
    /// Time the clock event reasons held the clocks, and what throttling and faults lost.
    pub health: HealthLedger,
}

impl GpuLedger {
    /// Energy drawn, joules (power integrated between counter reads included).
    pub fn energy_joules(&self) -> Option<f64> {
        self.energy.map(|e| e.total())
    }

    /// Share of the booked time lost (none before any time is booked).
    pub fn lost_share(&self) -> Option<f64> {
        (self.span_s > 0.0).then(|| self.lost_gpu_seconds / self.span_s)
    }

    /// Processes, most lost GPU-seconds first, then most GPU-seconds.
    pub fn processes_worst_first(&self) -> Vec<&ProcessLedger> {
        let mut v: Vec<&ProcessLedger> = self.processes.iter().collect();
        v.sort_by(|a, b| {
            b.lost_gpu_seconds
                .total_cmp(&a.lost_gpu_seconds)
                .then_with(|| b.gpu_seconds.total_cmp(&a.gpu_seconds))
                .then_with(|| a.pid.cmp(&b.pid))
        });
        v
    }

    /// Jobs, most lost GPU-seconds first, then most GPU-seconds.
    pub fn jobs_worst_first(&self) -> Vec<&JobLedger> {
        let mut v: Vec<&JobLedger> = self.jobs.iter().collect();
        v.sort_by(|a, b| {
            b.lost_gpu_seconds
                .total_cmp(&a.lost_gpu_seconds)
                .then_with(|| b.gpu_seconds.total_cmp(&a.gpu_seconds))
                .then_with(|| a.job.key().cmp(&b.job.key()))
        });
        v
    }

    /// Users, most lost GPU-seconds first, then most GPU-seconds.
    pub fn users_worst_first(&self) -> Vec<&UserLedger> {
        let mut v: Vec<&UserLedger> = self.users.iter().collect();
        v.sort_by(|a, b| {
            b.lost_gpu_seconds
                .total_cmp(&a.lost_gpu_seconds)
                .then_with(|| b.gpu_seconds.total_cmp(&a.gpu_seconds))
                .then_with(|| a.user.cmp(&b.user))
        });
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_seconds_add_up_per_kind_and_name_the_largest() {
        let mut k = KindSeconds::default();
        assert_eq!(k.largest(), None);
        k.add(FindingKind::InputStarvation, 2.0);
        k.add(FindingKind::Idle, 3.0);
        k.add(FindingKind::InputStarvation, 1.5);
        assert_eq!(k.get(FindingKind::InputStarvation), 3.5);
        assert_eq!(k.largest(), Some((FindingKind::InputStarvation, 3.5)));
        let kinds: Vec<FindingKind> = k.iter().map(|(k, _)| k).collect();
        assert_eq!(kinds, [FindingKind::Idle, FindingKind::InputStarvation]);
    }
}
