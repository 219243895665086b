//! The writer of one GPU's ledger: the engine calls [`LedgerBook::tick`] once per sample, after
//! the detector.

use std::sync::Arc;

use super::backfill::RecentShares;
use super::energy::{EnergyMeter, Joules, Settle};
use super::health_book::{HealthBook, ThrottleStep};
use super::jobs::job_slot;
use super::share::{lost_share, process_weights, shortfall, HELD_BYTES};
use super::{GpuLedger, ProcessLedger, UserLedger, VerdictCost};
use crate::model::{Finding, FindingKind, GpuProcess, Metrics, UnixTime, XidEvent};

/// Two ticks further apart than this, and than [`GAP_POLLS`] of the source's own interval, leave
/// the time between them unbooked: the sampler stopped, or a replay jumped.
pub const MAX_GAP_S: f64 = 10.0;

/// A gap is a missing poll, not a long one: an interval counts as a gap only past this many of
/// the source's own interval (the shortest seen), so a log written every 10 or 60 s is booked.
pub const GAP_POLLS: f64 = 1.5;

/// Processes kept per GPU. Past it, the process seen longest ago among those with the least
/// GPU time gives its place (its time stays in the GPU's and its user's totals).
pub const MAX_PROCESSES: usize = 256;

/// Users kept per GPU; processes of further users count in the GPU's totals only.
pub const MAX_USERS: usize = 256;

/// What one GPU shows at one tick.
#[derive(Debug, Clone, Copy)]
pub struct TickInput<'a> {
    pub t: UnixTime,
    /// The GPU's index (to pick its findings).
    pub gpu: u32,
    /// False once the GPU stopped answering for good (lost): no time is booked from there.
    pub answering: bool,
    pub metrics: &'a Metrics,
    pub processes: &'a [GpuProcess],
    /// The verdict the snapshot shows from this tick on.
    pub verdict: FindingKind,
    /// The level the detector measures this GPU's lost time against (its full level), when it
    /// has analysed some activity.
    pub full_level: Option<f64>,
    /// The detector's active findings, of every GPU.
    pub findings: &'a [Finding],
    /// The XIDs that arrived since the previous tick.
    pub xids: &'a [XidEvent],
    /// The GPU's highest SM clock (what throttling gives up is measured against it).
    pub sm_clock_max_mhz: Option<u32>,
}

/// The state shown from one tick to the next.
#[derive(Debug, Clone, Copy)]
struct Shown {
    t: UnixTime,
    verdict: FindingKind,
    share: f64,
    kind: Option<FindingKind>,
    util: Option<f64>,
    power_w: Option<f64>,
    throttle: ThrottleStep,
}

/// One GPU's ledger writer: what the view does not show.
#[derive(Debug, Clone)]
pub struct LedgerBook {
    shown: Option<Shown>,
    meter: EnergyMeter,
    recent: RecentShares,
    /// The processes of the newest tick: their slots in the view's table and their weights.
    slots: Vec<Option<usize>>,
    weights: Vec<f64>,
    /// The slots of the tick before (a buffer kept between ticks).
    previous_slots: Vec<Option<usize>>,
    /// Process, user and job slots holding pending energy.
    dirty_processes: Vec<usize>,
    dirty_users: Vec<usize>,
    /// Throttling and faults.
    health: HealthBook,
    /// The source's own interval: the shortest time between two ticks so far.
    interval_s: Option<f64>,
    dirty_jobs: Vec<usize>,
}

impl LedgerBook {
    /// `backfill_s`: how far back a newly raised finding may book its lost time (the detector's
    /// window: no finding's evidence begins earlier).
    pub fn new(backfill_s: f64) -> Self {
        LedgerBook {
            shown: None,
            meter: EnergyMeter::default(),
            recent: RecentShares::new(backfill_s),
            slots: Vec::new(),
            weights: Vec::new(),
            previous_slots: Vec::new(),
            dirty_processes: Vec::new(),
            dirty_users: Vec::new(),
            health: HealthBook::default(),
            interval_s: None,
            dirty_jobs: Vec::new(),
        }
    }

    /// The longest interval booked: [`MAX_GAP_S`], or [`GAP_POLLS`] of the source's interval
    /// when that is longer.
    fn gap_limit(&mut self, dt: f64) -> f64 {
        if dt > 0.0 {
            self.interval_s = Some(self.interval_s.map_or(dt, |i| i.min(dt)));
        }
        MAX_GAP_S.max(GAP_POLLS * self.interval_s.unwrap_or(0.0))
    }

    /// Book the time since the previous tick under what was shown then, and take this tick's
    /// state.
    pub fn tick(&mut self, view: &mut Arc<GpuLedger>, input: &TickInput) {
        let view = Arc::make_mut(view);
        self.book_interval(view, input);
        self.settle(view, input.metrics.energy_j);
        let weights = self.slots.iter().zip(&self.weights);
        self.health.tick(
            view,
            input.t,
            input.xids,
            held(input),
            input.answering,
            weights.filter_map(|(s, w)| s.map(|s| (s, *w))),
        );
        if !input.answering {
            self.gap();
            return;
        }
        self.register_processes(view, input);
        self.show(view, input);
        self.backfill(view, input);
    }

    fn gap(&mut self) {
        self.shown = None;
        self.meter.gap();
        self.recent.clear();
    }

    fn book_interval(&mut self, view: &mut GpuLedger, input: &TickInput) {
        let Some(prev) = self.shown.take() else {
            return;
        };
        let dt = input.t - prev.t;
        if !(dt > 0.0 && dt <= self.gap_limit(dt)) {
            if dt != 0.0 {
                self.gap();
            }
            return;
        }
        let joules = EnergyMeter::integrate(prev.power_w, input.metrics.power_w, dt);
        let lost = prev.share * dt;
        view.span_s += dt;
        view.seconds_by_verdict.add(prev.verdict, dt);
        view.lost_gpu_seconds += lost;
        if let Some(kind) = prev.kind {
            view.lost_by_kind.add(kind, lost);
        }
        if let Some(j) = joules {
            view.energy.get_or_insert_default().add_pending(j);
            view.lost_energy.add_pending(j * prev.share);
        }
        if let Some(c) = view.current.as_mut() {
            c.seconds += dt;
            c.lost_gpu_seconds += lost;
            if let Some(j) = joules {
                c.energy.add_pending(j);
            }
        }
        self.credit_processes(view, dt, lost, joules.unwrap_or(0.0));
        self.health.book(view, &prev.throttle, dt, prev.share);
        self.recent
            .push(prev.t, input.t, prev.share, prev.util, joules);
    }

    /// Give each process of the previous tick its weight of an interval.
    fn credit_processes(&mut self, view: &mut GpuLedger, dt: f64, lost: f64, joules: f64) {
        for (slot, w) in self.slots.iter().zip(&self.weights) {
            let Some(p) = slot.and_then(|s| view.processes.get_mut(s)) else {
                continue;
            };
            p.gpu_seconds += w * dt;
            p.lost_gpu_seconds += w * lost;
            if joules > 0.0 {
                if p.energy.pending() == 0.0 {
                    self.dirty_processes.extend(*slot);
                }
                p.energy.add_pending(w * joules);
            }
            if let Some(j) = p.job_slot.and_then(|j| view.jobs.get_mut(j)) {
                j.gpu_seconds += w * dt;
                j.lost_gpu_seconds += w * lost;
                if joules > 0.0 {
                    if j.energy.pending() == 0.0 {
                        self.dirty_jobs.extend(p.job_slot);
                    }
                    j.energy.add_pending(w * joules);
                }
            }
            let Some(u) = p.user_slot.and_then(|u| view.users.get_mut(u)) else {
                continue;
            };
            u.gpu_seconds += w * dt;
            u.lost_gpu_seconds += w * lost;
            if joules > 0.0 {
                if u.energy.pending() == 0.0 {
                    self.dirty_users.extend(p.user_slot);
                }
                u.energy.add_pending(w * joules);
            }
        }
    }

    /// Take the energy counter's value; settle the pending amounts when it closes a stretch.
    /// Without a counter, each interval settles as integrated.
    fn settle(&mut self, view: &mut GpuLedger, counter: Option<f64>) {
        let pending = view.energy.map_or(0.0, |e| e.pending());
        let settle = match (counter, self.meter.seen()) {
            (None, false) => Settle::Scale(1.0),
            _ => match self.meter.read(counter, pending) {
                Some(s) => s,
                None => return,
            },
        };
        let scale = match settle {
            Settle::Scale(s) => s,
            Settle::Unspread(j) => {
                view.energy.get_or_insert_default().add_settled(j);
                return;
            }
        };
        if counter.is_some() {
            view.energy.get_or_insert_default();
        }
        let all = |j: &mut Joules| j.settle(scale);
        if let Some(e) = view.energy.as_mut() {
            all(e);
        }
        all(&mut view.lost_energy);
        if let Some(c) = view.current.as_mut() {
            all(&mut c.energy);
        }
        for s in self.dirty_processes.drain(..) {
            if let Some(p) = view.processes.get_mut(s) {
                all(&mut p.energy);
            }
        }
        for s in self.dirty_users.drain(..) {
            if let Some(u) = view.users.get_mut(s) {
                all(&mut u.energy);
            }
        }
        for s in self.dirty_jobs.drain(..) {
            if let Some(j) = view.jobs.get_mut(s) {
                all(&mut j.energy);
            }
        }
    }

    /// Find or add each process of this tick in the view's table, with its weight.
    fn register_processes(&mut self, view: &mut GpuLedger, input: &TickInput) {
        process_weights(input.processes, &mut self.weights);
        std::mem::swap(&mut self.slots, &mut self.previous_slots);
        self.slots.clear();
        for p in input.processes {
            let same = |e: &ProcessLedger| {
                e.pid == p.pid
                    && (e.command.is_none()
                        || p.command.is_none()
                        || e.command.as_deref() == p.command.as_deref())
            };
            let known = self
                .previous_slots
                .iter()
                .flatten()
                .copied()
                .find(|&s| view.processes.get(s).is_some_and(same))
                .or_else(|| view.processes.iter().rposition(same));
            let slot = match known {
                Some(s) => Some(s),
                None => add_process(view, p, input.t),
            };
            if let Some(e) = slot.and_then(|s| view.processes.get_mut(s)) {
                e.last_seen = input.t;
                if e.command.is_none() {
                    e.command = p.command.as_deref().map(Arc::from);
                }
                if e.user.is_none() && p.user.is_some() {
                    e.user = p.user.as_deref().map(Arc::from);
                    e.user_slot = user_slot(&mut view.users, e.user.clone());
                }
                // A job may be named after the process was first seen (its lookup runs apart).
                if e.job_slot.is_none() && p.job.is_some() {
                    e.job_slot = job_slot(&mut view.jobs, p.job.as_ref());
                }
            }
            self.slots.push(slot);
        }
    }

    /// Take this tick's verdict and lost share; start the verdict's cost when it changed.
    fn show(&mut self, view: &mut GpuLedger, input: &TickInput) {
        let own = input.findings.iter().filter(|f| f.gpu == input.gpu);
        let util = input.metrics.util_gpu;
        let (mut share, mut kind) =
            lost_share(own, input.verdict, held(input), util, input.full_level);
        // Throttling costs what the held clocks give up; overlapping causes count once.
        let throttle = ThrottleStep::of(input.metrics, input.sm_clock_max_mhz);
        if throttle.lost_share > share {
            (share, kind) = (throttle.lost_share, Some(FindingKind::Throttled));
        }
        if view.current.is_none_or(|c| c.verdict != input.verdict) {
            view.current = Some(VerdictCost {
                verdict: input.verdict,
                since: input.t,
                seconds: 0.0,
                lost_gpu_seconds: 0.0,
                energy: Joules::default(),
            });
        }
        view.since.get_or_insert(input.t);
        view.until = Some(input.t);
        self.shown = Some(Shown {
            t: input.t,
            verdict: input.verdict,
            share,
            kind,
            util,
            power_w: input.metrics.power_w,
            throttle,
        });
    }

    /// A finding raised at this tick books its lost share over the time since its evidence
    /// began, on top of what that time was booked at: each interval its own shortfall against
    /// the finding's level (memory held idle: all of it). The processes on the GPU now get it
    /// (a pattern belongs to the job that shows it).
    fn backfill(&mut self, view: &mut GpuLedger, input: &TickInput) {
        let raised = input
            .findings
            .iter()
            .filter(|f| f.gpu == input.gpu && f.detected_at == input.t);
        for f in raised {
            let up = if f.kind == FindingKind::MemoryIdle {
                self.recent.top_up(f.start, |_| 1.0)
            } else if let Some(l) = f.evidence.lost_fraction.filter(|l| l.is_finite()) {
                let level = input.full_level.unwrap_or(100.0);
                self.recent.top_up(f.start, |u| {
                    shortfall(u, level).unwrap_or(l.clamp(0.0, 1.0))
                })
            } else {
                continue;
            };
            if up.lost_s <= 0.0 {
                continue;
            }
            view.lost_gpu_seconds += up.lost_s;
            view.lost_by_kind.add(f.kind, up.lost_s);
            view.lost_energy.add_pending(up.joules);
            if let Some(c) = view.current.as_mut().filter(|c| c.verdict == f.kind) {
                c.lost_gpu_seconds += up.lost_s;
                c.since = c.since.min(f.start);
            }
            for (slot, w) in self.slots.iter().zip(&self.weights) {
                let Some(p) = slot.and_then(|s| view.processes.get_mut(s)) else {
                    continue;
                };
                p.lost_gpu_seconds += w * up.lost_s;
                if let Some(u) = p.user_slot.and_then(|u| view.users.get_mut(u)) {
                    u.lost_gpu_seconds += w * up.lost_s;
                }
                if let Some(j) = p.job_slot.and_then(|j| view.jobs.get_mut(j)) {
                    j.lost_gpu_seconds += w * up.lost_s;
                }
            }
        }
    }
}

/// Whether a job holds the GPU: a process is listed, or (from a source without process lists)
/// memory is in use.
fn held(input: &TickInput) -> bool {
    !input.processes.is_empty()
        || input
            .metrics
            .mem_used_bytes
            .is_some_and(|m| m >= HELD_BYTES)
}

/// Add a process to the table (taking the place of the least used absent one when it is full).
fn add_process(view: &mut GpuLedger, p: &GpuProcess, now: UnixTime) -> Option<usize> {
    let user: Option<Arc<str>> = p.user.as_deref().map(Arc::from);
    let entry = ProcessLedger {
        pid: p.pid,
        user_slot: user_slot(&mut view.users, user.clone()),
        job_slot: job_slot(&mut view.jobs, p.job.as_ref()),
        user,
        command: p.command.as_deref().map(Arc::from),
        first_seen: now,
        last_seen: now,
        gpu_seconds: 0.0,
        lost_gpu_seconds: 0.0,
        energy: Joules::default(),
    };
    if view.processes.len() < MAX_PROCESSES {
        view.processes.push(entry);
        return Some(view.processes.len() - 1);
    }
    let evict = view
        .processes
        .iter()
        .enumerate()
        .filter(|(_, e)| e.last_seen < now)
        .min_by(|a, b| {
            a.1.gpu_seconds
                .total_cmp(&b.1.gpu_seconds)
                .then_with(|| a.1.last_seen.total_cmp(&b.1.last_seen))
        })
        .map(|(i, _)| i)?;
    view.processes[evict] = entry;
    view.processes_dropped += 1;
    Some(evict)
}

/// The slot of `user` in the table, added when new and the table has room.
fn user_slot(users: &mut Vec<UserLedger>, user: Option<Arc<str>>) -> Option<usize> {
    if let Some(i) = users.iter().position(|u| u.user == user) {
        return Some(i);
    }
    if users.len() >= MAX_USERS {
        return None;
    }
    users.push(UserLedger {
        user,
        gpu_seconds: 0.0,
        lost_gpu_seconds: 0.0,
        energy: Joules::default(),
    });
    Some(users.len() - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Evidence, Severity};

    /// Ticks every 250 ms from `from` to `to` (inclusive) with the same state.
    struct Run<'a> {
        metrics: Metrics,
        processes: &'a [GpuProcess],
        verdict: FindingKind,
        findings: &'a [Finding],
    }

    fn run(book: &mut LedgerBook, view: &mut Arc<GpuLedger>, from: f64, to: f64, r: &Run) {
        let mut t = from;
        while t <= to + 1e-9 {
            book.tick(
                view,
                &TickInput {
                    t,
                    gpu: 0,
                    answering: true,
                    metrics: &r.metrics,
                    processes: r.processes,
                    verdict: r.verdict,
                    full_level: None,
                    findings: r.findings,
                    xids: &[],
                    sm_clock_max_mhz: None,
                },
            );
            t += 0.25;
        }
    }

    fn watts(w: f64) -> Metrics {
        Metrics {
            power_w: Some(w),
            ..Default::default()
        }
    }

    fn starvation(start: f64, detected_at: f64, lost: f64) -> Finding {
        Finding {
            kind: FindingKind::InputStarvation,
            severity: Severity::High,
            gpu: 0,
            start,
            end: None,
            detected_at,
            evidence: Evidence {
                lost_fraction: Some(lost),
                ..Default::default()
            },
            summary: String::new(),
            advice: String::new(),
        }
    }

    fn process(pid: u32, user: &str, sm: f64) -> GpuProcess {
        GpuProcess {
            pid,
            user: Some(user.into()),
            command: Some(format!("job{pid}")),
            sm_util: Some(sm),
            ..Default::default()
        }
    }

    #[test]
    fn time_and_energy_are_booked_under_the_verdict_shown() {
        let mut book = LedgerBook::new(110.0);
        let mut view = Arc::default();
        let healthy = Run {
            metrics: watts(100.0),
            processes: &[],
            verdict: FindingKind::Healthy,
            findings: &[],
        };
        run(&mut book, &mut view, 0.0, 10.0, &healthy);
        let idle = Run {
            verdict: FindingKind::Idle,
            ..healthy
        };
        run(&mut book, &mut view, 10.25, 12.0, &idle);
        assert!((view.span_s - 12.0).abs() < 1e-9);
        // The interval up to 10.25 s was shown healthy.
        assert!((view.seconds_by_verdict.get(FindingKind::Healthy) - 10.25).abs() < 1e-9);
        assert!((view.seconds_by_verdict.get(FindingKind::Idle) - 1.75).abs() < 1e-9);
        // Idle with no job on the GPU loses nothing.
        assert_eq!(view.lost_gpu_seconds, 0.0);
        let e = view.energy.expect("power was read");
        assert!((e.total() - 1200.0).abs() < 1e-6 && e.settled() == e.total());
        let current = view.current.expect("a verdict");
        assert_eq!(current.verdict, FindingKind::Idle);
        assert_eq!(current.since, 10.25);
    }

    #[test]
    fn the_energy_counter_sets_the_total_and_power_the_split() {
        let mut book = LedgerBook::new(110.0);
        let mut view = Arc::default();
        // Power reads 100 W; the counter, read every 5 s, says 120 W.
        for k in 0..=40 {
            let t = k as f64 * 0.25;
            let counter = 1e6 + 120.0 * (t / 5.0).floor() * 5.0;
            let metrics = Metrics {
                energy_j: Some(counter),
                ..watts(100.0)
            };
            let procs = [process(1, "ana", 30.0), process(2, "bo", 10.0)];
            book.tick(
                &mut view,
                &TickInput {
                    t,
                    gpu: 0,
                    answering: true,
                    metrics: &metrics,
                    processes: &procs,
                    verdict: FindingKind::Healthy,
                    full_level: None,
                    findings: &[],
                    xids: &[],
                    sm_clock_max_mhz: None,
                },
            );
        }
        let e = view.energy.expect("counted");
        assert!((e.settled() - 1200.0).abs() < 1e-6, "{e:?}");
        let p: Vec<f64> = view.processes.iter().map(|p| p.energy.total()).collect();
        assert!(
            (p[0] - 900.0).abs() < 1e-6 && (p[1] - 300.0).abs() < 1e-6,
            "{p:?}"
        );
        let u: Vec<f64> = view.users.iter().map(|u| u.gpu_seconds).collect();
        assert!(
            (u[0] - 7.5).abs() < 1e-9 && (u[1] - 2.5).abs() < 1e-9,
            "{u:?}"
        );
    }

    #[test]
    fn a_raised_finding_books_its_share_from_where_its_evidence_began() {
        let mut book = LedgerBook::new(110.0);
        let mut view = Arc::default();
        let procs = [process(7, "ana", 40.0)];
        let before = Run {
            metrics: watts(200.0),
            processes: &procs,
            verdict: FindingKind::Healthy,
            findings: &[],
        };
        run(&mut book, &mut view, 0.0, 4.75, &before);
        let raised = [starvation(2.0, 5.0, 0.6)];
        let starving = Run {
            verdict: FindingKind::InputStarvation,
            findings: &raised,
            ..before
        };
        run(&mut book, &mut view, 5.0, 10.0, &starving);
        let want = 0.6 * 8.0;
        assert!((view.lost_gpu_seconds - want).abs() < 1e-9, "{view:?}");
        assert!((view.lost_by_kind.get(FindingKind::InputStarvation) - want).abs() < 1e-9);
        assert!((view.lost_energy.total() - want * 200.0).abs() < 1e-6);
        assert!((view.processes[0].lost_gpu_seconds - want).abs() < 1e-9);
        let current = view.current.expect("a verdict");
        assert_eq!(current.since, 2.0);
        assert!((current.lost_gpu_seconds - want).abs() < 1e-9);
        // Time before the evidence began keeps its verdict: healthy until the raise.
        assert!((view.seconds_by_verdict.get(FindingKind::Healthy) - 5.0).abs() < 1e-9);
    }

    #[test]
    fn a_held_idle_gpu_loses_all_its_time_and_a_gap_is_not_booked() {
        let mut book = LedgerBook::new(110.0);
        let mut view = Arc::default();
        let procs = [process(7, "ana", 0.0)];
        let idle = Run {
            metrics: watts(80.0),
            processes: &procs,
            verdict: FindingKind::Idle,
            findings: &[],
        };
        run(&mut book, &mut view, 0.0, 5.0, &idle);
        run(&mut book, &mut view, 60.0, 62.0, &idle);
        assert!((view.span_s - 7.0).abs() < 1e-9);
        assert!((view.lost_gpu_seconds - 7.0).abs() < 1e-9);
        assert!((view.lost_by_kind.get(FindingKind::Idle) - 7.0).abs() < 1e-9);
        assert!((view.energy_joules().unwrap_or_default() - 560.0).abs() < 1e-6);
        assert_eq!(view.processes.len(), 1);
        assert_eq!(view.processes[0].user.as_deref(), Some("ana"));
    }

    #[test]
    fn a_coarse_source_is_booked_and_only_a_missing_poll_is_a_gap() {
        let mut book = LedgerBook::new(110.0);
        let mut view = Arc::default();
        let procs = [process(7, "ana", 0.0)];
        let metrics = watts(80.0);
        let mut tick = |t: f64| {
            let input = TickInput {
                t,
                gpu: 0,
                answering: true,
                metrics: &metrics,
                processes: &procs,
                verdict: FindingKind::Idle,
                full_level: None,
                findings: &[],
                xids: &[],
                sm_clock_max_mhz: None,
            };
            book.tick(&mut view, &input);
        };
        // `nvidia-smi -l 10`: rows 10.002 s apart, then one poll missing.
        for k in 0..=6 {
            tick(k as f64 * 10.002);
        }
        tick(8.0 * 10.002);
        tick(9.0 * 10.002);
        let want = 7.0 * 10.002;
        assert!((view.span_s - want).abs() < 1e-9, "{}", view.span_s);
        assert!((view.lost_gpu_seconds - want).abs() < 1e-9);
    }

    #[test]
    fn a_full_process_table_drops_the_least_used_absent_process() {
        let mut book = LedgerBook::new(110.0);
        let mut view = Arc::default();
        let mut t = 0.0;
        for pid in 0..(MAX_PROCESSES as u32 + 3) {
            let procs = [process(pid, "ana", 10.0)];
            let r = Run {
                metrics: watts(100.0),
                processes: &procs,
                verdict: FindingKind::Healthy,
                findings: &[],
            };
            run(&mut book, &mut view, t, t + 0.25, &r);
            t += 0.5;
        }
        assert_eq!(view.processes.len(), MAX_PROCESSES);
        assert_eq!(view.processes_dropped, 3);
        assert_eq!(view.users.len(), 1);
        // Every booked second is the user's, dropped processes included.
        assert!((view.users[0].gpu_seconds - view.span_s).abs() < 1e-6);
    }

    #[test]
    fn jobs_get_their_processes_shares_even_when_named_late() {
        let mut book = LedgerBook::new(110.0);
        let mut view = Arc::default();
        let pod = |container: &str| {
            let mut j = crate::model::Job::new(crate::model::JobKind::Pod, "uid-1");
            j.container = Some(container.into());
            j
        };
        // Two containers of one pod and a Slurm job, at 30/10/40 % SM; the Slurm job is named
        // only from the second second on.
        let mut procs = [
            process(1, "ana", 30.0),
            process(2, "ana", 10.0),
            process(3, "bo", 40.0),
        ];
        procs[0].job = Some(pod("trainer"));
        procs[1].job = Some(pod("sidecar"));
        fn r(procs: &[GpuProcess]) -> Run<'_> {
            Run {
                metrics: watts(100.0),
                processes: procs,
                verdict: FindingKind::Healthy,
                findings: &[],
            }
        }
        run(&mut book, &mut view, 0.0, 0.75, &r(&procs));
        procs[2].job = Some(crate::model::Job::new(crate::model::JobKind::Slurm, "42"));
        run(&mut book, &mut view, 1.0, 8.0, &r(&procs));
        assert_eq!(view.jobs.len(), 2);
        let pod_row = &view.jobs[0];
        assert_eq!(pod_row.job.container, None);
        // The pod holds half the GPU (40 of 80 % SM) for all 8 s.
        assert!((pod_row.gpu_seconds - 4.0).abs() < 1e-9, "{pod_row:?}");
        assert!((pod_row.energy.total() - 400.0).abs() < 1e-6);
        // The Slurm job's seconds count from the tick its name arrived.
        let slurm = &view.jobs[1];
        assert!((slurm.gpu_seconds - 3.5).abs() < 1e-9, "{slurm:?}");
        assert_eq!(view.jobs_worst_first()[0].job.id, "uid-1");
    }
}
