//! What the ledger view lists, in order: each GPU's totals and the kinds it lost time to, then
//! the processes of every GPU, the users and (where processes had some) the pods, containers and
//! Slurm jobs, most lost first. Built from a snapshot only while
//! the view is open; the rows borrow the snapshot's ledgers, and only those on screen are put
//! into words ([`crate::tui::widgets::ledger`]).

use std::sync::Arc;

use crate::engine::{GpuSnapshot, Snapshot};
use crate::ledger::ProcessLedger;
use crate::model::FindingKind;

/// One user's share of every GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct UserTotal {
    /// `None`: processes whose owner could not be read.
    pub user: Option<Arc<str>>,
    pub gpu_seconds: f64,
    pub lost_gpu_seconds: f64,
    /// Absent while none of the user's GPUs gave a power or energy reading.
    pub energy_joules: Option<f64>,
}

/// One job's share of every GPU (a pod, container or Slurm job).
#[derive(Debug, Clone, PartialEq)]
pub struct JobTotal {
    /// The job in words (`pod train-7f9c/ml-team`).
    pub label: String,
    pub gpu_seconds: f64,
    pub lost_gpu_seconds: f64,
    pub energy_joules: Option<f64>,
}

/// One line of the view.
#[derive(Debug, Clone)]
pub enum LedgerRow<'a> {
    /// A section's title (`GPUs`, `Processes, most lost first`, `Users, most lost first`).
    Title(&'static str),
    /// The column titles of the GPU, process or user rows below.
    GpuHeader,
    ProcessHeader,
    UserHeader,
    JobHeader,
    /// A GPU's totals.
    Gpu(&'a GpuSnapshot),
    /// Time a GPU lost to one kind.
    LostTo {
        kind: FindingKind,
        seconds: f64,
        /// The GPU's booked time.
        span_s: f64,
    },
    Process {
        gpu: u32,
        /// Whether the process's GPU reads power or energy (its energy is known).
        metered: bool,
        process: &'a ProcessLedger,
    },
    /// Processes a GPU's full table no longer holds (their time is in the totals).
    Dropped {
        gpu: u32,
        count: u64,
    },
    User(UserTotal),
    Job(JobTotal),
    /// Nothing of a section booked yet.
    Empty(&'static str),
    Blank,
}

/// Every line of the ledger view of `snapshot`.
pub fn ledger_rows(snapshot: &Snapshot) -> Vec<LedgerRow<'_>> {
    let mut rows = vec![LedgerRow::Title("GPUs"), LedgerRow::GpuHeader];
    for g in &snapshot.gpus {
        rows.push(LedgerRow::Gpu(g));
        let l = &g.ledger;
        let mut kinds: Vec<(FindingKind, f64)> = l.lost_by_kind.iter().collect();
        kinds.sort_by(|a, b| b.1.total_cmp(&a.1));
        rows.extend(kinds.into_iter().map(|(kind, seconds)| LedgerRow::LostTo {
            kind,
            seconds,
            span_s: l.span_s,
        }));
    }
    if snapshot.gpus.is_empty() {
        rows.push(LedgerRow::Empty("no GPU"));
    }
    rows.push(LedgerRow::Blank);
    rows.push(LedgerRow::Title("Processes, most lost first"));
    rows.extend(process_rows(snapshot));
    rows.push(LedgerRow::Blank);
    rows.push(LedgerRow::Title("Users, most lost first"));
    let users = user_totals(snapshot);
    if users.is_empty() {
        rows.push(LedgerRow::Empty("no process seen on a GPU yet"));
    } else {
        rows.push(LedgerRow::UserHeader);
        rows.extend(users.into_iter().map(LedgerRow::User));
    }
    let jobs = job_totals(snapshot);
    if !jobs.is_empty() {
        rows.push(LedgerRow::Blank);
        rows.push(LedgerRow::Title("Jobs, most lost first"));
        rows.push(LedgerRow::JobHeader);
        rows.extend(jobs.into_iter().map(LedgerRow::Job));
    }
    rows
}

/// Each job's shares summed over the GPUs, most lost GPU time first, then most GPU time.
pub fn job_totals(snapshot: &Snapshot) -> Vec<JobTotal> {
    let mut totals: Vec<(crate::model::JobKind, String, JobTotal)> = Vec::new();
    for g in &snapshot.gpus {
        let metered = g.ledger.energy.is_some();
        for j in &g.ledger.jobs {
            let (kind, id) = j.job.key();
            let i = match totals.iter().position(|t| t.0 == kind && t.1 == id) {
                Some(i) => i,
                None => {
                    totals.push((
                        kind,
                        id.to_string(),
                        JobTotal {
                            label: j.job.label(),
                            gpu_seconds: 0.0,
                            lost_gpu_seconds: 0.0,
                            energy_joules: None,
                        },
                    ));
                    totals.len() - 1
                }
            };
            let t = &mut totals[i].2;
            t.gpu_seconds += j.gpu_seconds;
            t.lost_gpu_seconds += j.lost_gpu_seconds;
            if metered {
                *t.energy_joules.get_or_insert(0.0) += j.energy.total();
            }
        }
    }
    let mut out: Vec<JobTotal> = totals.into_iter().map(|t| t.2).collect();
    out.sort_by(|a, b| {
        b.lost_gpu_seconds
            .total_cmp(&a.lost_gpu_seconds)
            .then_with(|| b.gpu_seconds.total_cmp(&a.gpu_seconds))
            .then_with(|| a.label.cmp(&b.label))
    });
    out
}

/// The processes of every GPU, most lost GPU time first, then most GPU time; then what each
/// GPU's table dropped.
fn process_rows(snapshot: &Snapshot) -> Vec<LedgerRow<'_>> {
    let mut procs: Vec<(u32, bool, &ProcessLedger)> = snapshot
        .gpus
        .iter()
        .flat_map(|g| {
            let metered = g.ledger.energy.is_some();
            g.ledger
                .processes
                .iter()
                .map(move |p| (g.info.index, metered, p))
        })
        .collect();
    if procs.is_empty() {
        return vec![LedgerRow::Empty("no process seen on a GPU yet")];
    }
    procs.sort_by(|a, b| {
        b.2.lost_gpu_seconds
            .total_cmp(&a.2.lost_gpu_seconds)
            .then_with(|| b.2.gpu_seconds.total_cmp(&a.2.gpu_seconds))
            .then_with(|| (a.0, a.2.pid).cmp(&(b.0, b.2.pid)))
    });
    let mut rows = vec![LedgerRow::ProcessHeader];
    rows.extend(
        procs
            .into_iter()
            .map(|(gpu, metered, process)| LedgerRow::Process {
                gpu,
                metered,
                process,
            }),
    );
    rows.extend(
        snapshot
            .gpus
            .iter()
            .filter(|g| g.ledger.processes_dropped > 0)
            .map(|g| LedgerRow::Dropped {
                gpu: g.info.index,
                count: g.ledger.processes_dropped,
            }),
    );
    rows
}

/// Each user's shares summed over the GPUs, most lost GPU time first, then most GPU time.
pub fn user_totals(snapshot: &Snapshot) -> Vec<UserTotal> {
    let mut totals: Vec<UserTotal> = Vec::new();
    for g in &snapshot.gpus {
        let metered = g.ledger.energy.is_some();
        for u in &g.ledger.users {
            let i = match totals.iter().position(|t| t.user == u.user) {
                Some(i) => i,
                None => {
                    totals.push(UserTotal {
                        user: u.user.clone(),
                        gpu_seconds: 0.0,
                        lost_gpu_seconds: 0.0,
                        energy_joules: None,
                    });
                    totals.len() - 1
                }
            };
            let t = &mut totals[i];
            t.gpu_seconds += u.gpu_seconds;
            t.lost_gpu_seconds += u.lost_gpu_seconds;
            if metered {
                *t.energy_joules.get_or_insert(0.0) += u.energy.total();
            }
        }
    }
    totals.sort_by(|a, b| {
        b.lost_gpu_seconds
            .total_cmp(&a.lost_gpu_seconds)
            .then_with(|| b.gpu_seconds.total_cmp(&a.gpu_seconds))
            .then_with(|| a.user.cmp(&b.user))
    });
    totals
}

/// Rows a page key scrolls when the screen's height is not known.
const DEFAULT_PAGE: usize = 10;

/// Where the ledger view is scrolled to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LedgerScroll {
    /// Rows scrolled past.
    pub first: usize,
}

impl LedgerScroll {
    /// Rows of the view on a screen `screen_rows` high (0: not known): all but the header, the
    /// footer and the view's border.
    pub fn visible(screen_rows: u16) -> Option<usize> {
        (screen_rows > 4).then(|| usize::from(screen_rows) - 4)
    }

    /// Scroll by `lines` (positive: down) in a view of `rows` rows, no further than its last
    /// page shows.
    pub fn by(&mut self, lines: i64, rows: usize, screen_rows: u16) {
        let last = rows.saturating_sub(Self::visible(screen_rows).unwrap_or(1));
        let to = (self.first as i64).saturating_add(lines).max(0) as usize;
        self.first = to.min(last);
    }

    /// Scroll by `pages` pages (a page: the rows on screen, less one kept for context).
    pub fn page(&mut self, pages: i64, rows: usize, screen_rows: u16) {
        let page = Self::visible(screen_rows).map_or(DEFAULT_PAGE, |v| v.saturating_sub(1).max(1));
        self.by(pages.saturating_mul(page as i64), rows, screen_rows);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::sim::Scenario;
    use crate::tui::fixture::SimRun;

    #[test]
    fn processes_and_users_come_worst_first_across_gpus() {
        let mut run = SimRun::new(Scenario::Mixed, 8);
        run.advance(60.0);
        let s = run.snapshot();
        let rows = ledger_rows(&s);
        let lost: Vec<f64> = rows
            .iter()
            .filter_map(|r| match r {
                LedgerRow::Process { process, .. } => Some(process.lost_gpu_seconds),
                _ => None,
            })
            .collect();
        assert!(lost.len() >= 4, "{rows:?}");
        assert!(lost.windows(2).all(|w| w[0] >= w[1]), "{lost:?}");
        assert!(lost[0] > 0.0, "a starving job lost time: {lost:?}");
        let gpus = rows
            .iter()
            .filter(|r| matches!(r, LedgerRow::Gpu(_)))
            .count();
        assert_eq!(gpus, 8);
        // The users' sums are the GPUs' processes' sums.
        let users = user_totals(&s);
        let by_users: f64 = users.iter().map(|u| u.gpu_seconds).sum();
        let by_gpus: f64 = s
            .gpus
            .iter()
            .flat_map(|g| g.ledger.users.iter())
            .map(|u| u.gpu_seconds)
            .sum();
        assert!((by_users - by_gpus).abs() < 1e-6);
        assert!(users
            .windows(2)
            .all(|w| w[0].lost_gpu_seconds >= w[1].lost_gpu_seconds));
    }

    #[test]
    fn scrolling_stops_at_the_last_page() {
        let mut s = LedgerScroll::default();
        s.by(-3, 40, 24);
        assert_eq!(s.first, 0);
        s.page(1, 40, 24);
        assert_eq!(s.first, 19, "a page of 20 rows, one kept");
        s.page(5, 40, 24);
        assert_eq!(s.first, 20, "the last page shows rows 21 to 40");
        s.by(-1, 40, 24);
        assert_eq!(s.first, 19);
        // Screen height unknown: pages of 10, down to the last row.
        let mut s = LedgerScroll::default();
        s.page(9, 40, 0);
        assert_eq!(s.first, 39);
    }
}
