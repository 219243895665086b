//! What a GPU lost to its hardware: the time each clock event reason held the clocks down and
//! the GPU time that cost, and the jobs an XID ended.
//!
//! - **Throttling.** Each interval books, per reason, the time the reason held the clocks (the
//!   share the driver's counter measured, else the whole interval while its bit was set). The
//!   time it cost is that time × the share of the clock given up (1 − SM clock / maximum) × the
//!   share of the interval a kernel ran (utilization): a slowed GPU still works, at the clock
//!   it is held to. The power cap is where a busy GPU normally runs: its time is counted, its
//!   cost is not.
//! - **Faults.** A job that ends (its processes gone, or the GPU lost) within
//!   [`FAULT_END_GRACE_S`] of an XID was ended by it: its whole time on the GPU since it began,
//!   less what was already booked lost, is lost to `gpu_fault` (its work since its last
//!   checkpoint is gone, and gpulse cannot see checkpoints).

use super::GpuLedger;
use crate::model::{FindingKind, Metrics, ThrottleReason, UnixTime, XidEvent};

/// How soon after an XID a job must end for the XID to have ended it.
pub const FAULT_END_GRACE_S: f64 = 60.0;
/// Jobs ended by an XID kept per GPU (the newest).
pub const MAX_FAULTS: usize = 16;

/// A job an XID ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FaultLoss {
    pub xid: u64,
    /// When the XID arrived.
    pub t: UnixTime,
    /// When the job began on the GPU.
    pub job_since: UnixTime,
    /// GPU-seconds of the job booked lost to the fault.
    pub lost_s: f64,
}

/// The hardware's share of a GPU's ledger.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HealthLedger {
    /// Per reason ([`ThrottleReason::ALL`] order): seconds it held the clocks; absent for a
    /// reason never measured.
    pub throttled_s: [Option<f64>; 5],
    /// Per reason: GPU-seconds it cost (see the module doc).
    pub throttle_lost_s: [f64; 5],
    /// GPU-seconds of jobs an XID ended.
    pub fault_lost_s: f64,
    /// Those jobs, oldest first (the newest [`MAX_FAULTS`]).
    pub faults: Vec<FaultLoss>,
}

impl HealthLedger {
    pub fn throttled(&self, r: ThrottleReason) -> Option<f64> {
        self.throttled_s[r as usize]
    }

    pub fn throttle_lost(&self, r: ThrottleReason) -> f64 {
        self.throttle_lost_s[r as usize]
    }
}

/// Per reason, the share of the next interval it holds the clocks and the share of GPU time
/// that costs; and the largest cost of a serious reason (overlapping reasons count once).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ThrottleStep {
    held: [Option<f64>; 5],
    lost: [f64; 5],
    pub lost_share: f64,
}

impl ThrottleStep {
    /// The step a tick's readings set, for a GPU whose SM clock tops out at `sm_max`.
    pub fn of(m: &Metrics, sm_max: Option<u32>) -> Self {
        let mut step = ThrottleStep::default();
        // No counter, and bits that say no reason held the clocks (most ticks): each at 0.
        if m.throttle_held.is_empty() {
            match m.throttle {
                None => return step,
                Some(b) if b & ThrottleReason::ALL_BITS == 0 => {
                    step.held = [Some(0.0); 5];
                    return step;
                }
                Some(_) => {}
            }
        }
        // The share of the clock given up, and of the interval a kernel ran.
        let slowdown = match (m.sm_clock_mhz, sm_max) {
            (Some(c), Some(max)) if max > 0 => {
                Some((1.0 - f64::from(c) / f64::from(max)).clamp(0.0, 1.0))
            }
            _ => None,
        };
        let busy = m.util_gpu.map(|u| (u / 100.0).clamp(0.0, 1.0));
        for r in ThrottleReason::ALL {
            let held = m.throttle_held.share(r, m.throttle);
            step.held[r as usize] = held;
            if let (true, Some(h), Some(s), Some(b)) = (r.serious(), held, slowdown, busy) {
                let lost = h * s * b;
                step.lost[r as usize] = lost;
                step.lost_share = step.lost_share.max(lost);
            }
        }
        step
    }
}

/// The writer of a GPU's [`HealthLedger`]: the current job and an XID waiting to see whether it
/// ends the job.
#[derive(Debug, Clone, Default)]
pub struct HealthBook {
    /// The current job: when it began, its GPU-seconds booked and those booked lost since.
    job: Option<(UnixTime, f64, f64)>,
    /// The job's processes' slots and weights (in the GPU's process table) when the XID came.
    job_weights: Vec<(usize, f64)>,
    /// An XID that came while a job held the GPU.
    pending: Option<XidEvent>,
}

impl HealthBook {
    /// Book an interval of `dt` seconds under `step`, lost at `lost_share` overall.
    pub fn book(&mut self, view: &mut GpuLedger, step: &ThrottleStep, dt: f64, lost_share: f64) {
        let h = &mut view.health;
        for (i, held) in step.held.iter().enumerate() {
            if let Some(held) = held {
                *h.throttled_s[i].get_or_insert(0.0) += held * dt;
            }
            h.throttle_lost_s[i] += step.lost[i] * dt;
        }
        if let Some(job) = self.job.as_mut() {
            job.1 += dt;
            job.2 += lost_share * dt;
        }
    }

    /// Take this tick's XIDs and job state; book the job an XID ended. `held`: a job holds the
    /// GPU now; `answering`: the GPU answers (a lost one ends its job); `weights`: the slots and
    /// weights of the processes on the GPU until now.
    pub fn tick(
        &mut self,
        view: &mut GpuLedger,
        t: UnixTime,
        xids: &[XidEvent],
        held: bool,
        answering: bool,
        weights: impl Iterator<Item = (usize, f64)>,
    ) {
        if let (Some(x), Some(_)) = (xids.last(), self.job) {
            self.pending = Some(*x);
            self.job_weights = weights.collect();
        }
        let job_over = !held || !answering;
        match (self.pending, job_over) {
            (Some(x), true) => self.book_fault(view, x),
            (Some(x), false) if t - x.t > FAULT_END_GRACE_S => self.pending = None,
            _ => {}
        }
        if job_over {
            self.job = None;
        } else if self.job.is_none() {
            self.job = Some((t, 0.0, 0.0));
        }
    }

    /// The job ended by XID `x`: its time not yet lost is lost to the fault.
    fn book_fault(&mut self, view: &mut GpuLedger, x: XidEvent) {
        self.pending = None;
        let Some((since, booked, lost)) = self.job.take() else {
            return;
        };
        let add = (booked - lost).max(0.0);
        view.lost_gpu_seconds += add;
        view.lost_by_kind.add(FindingKind::GpuFault, add);
        for (slot, w) in self.job_weights.drain(..) {
            let Some(p) = view.processes.get_mut(slot) else {
                continue;
            };
            p.lost_gpu_seconds += w * add;
            if let Some(u) = p.user_slot.and_then(|u| view.users.get_mut(u)) {
                u.lost_gpu_seconds += w * add;
            }
        }
        let h = &mut view.health;
        h.fault_lost_s += add;
        h.faults.push(FaultLoss {
            xid: x.xid,
            t: x.t,
            job_since: since,
            lost_s: add,
        });
        if h.faults.len() > MAX_FAULTS {
            h.faults.remove(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::throttle;

    fn metrics(clock: u32, util: f64, bits: u64) -> Metrics {
        Metrics {
            sm_clock_mhz: Some(clock),
            util_gpu: Some(util),
            throttle: Some(bits),
            ..Default::default()
        }
    }

    #[test]
    fn a_slowed_busy_gpu_loses_the_clock_it_gave_up() {
        let mut m = metrics(990, 100.0, throttle::HW_SLOWDOWN | throttle::SW_POWER_CAP);
        m.throttle_held.set(ThrottleReason::HwThermal, Some(0.5));
        let step = ThrottleStep::of(&m, Some(1980));
        assert_eq!(step.held[ThrottleReason::HwSlowdown as usize], Some(1.0));
        assert_eq!(step.held[ThrottleReason::HwThermal as usize], Some(0.5));
        assert!((step.lost[ThrottleReason::HwSlowdown as usize] - 0.5).abs() < 1e-9);
        assert!((step.lost[ThrottleReason::HwThermal as usize] - 0.25).abs() < 1e-9);
        // The power cap is counted, never lost.
        assert_eq!(step.held[ThrottleReason::SwPowerCap as usize], Some(1.0));
        assert_eq!(step.lost[ThrottleReason::SwPowerCap as usize], 0.0);
        assert!((step.lost_share - 0.5).abs() < 1e-9);
        // Without the maximum clock the cost is unknown: nothing lost, the time still counted.
        let unknown = ThrottleStep::of(&m, None);
        assert_eq!(unknown.lost_share, 0.0);
        assert_eq!(unknown.held[ThrottleReason::HwSlowdown as usize], Some(1.0));
    }

    #[test]
    fn a_job_that_ends_after_an_xid_is_lost_to_the_fault() {
        let mut book = HealthBook::default();
        let mut view = GpuLedger::default();
        let none = ThrottleStep::default();
        book.tick(&mut view, 0.0, &[], true, true, std::iter::empty());
        for k in 1..=40 {
            book.book(&mut view, &none, 0.25, if k <= 8 { 0.5 } else { 0.0 });
            book.tick(
                &mut view,
                f64::from(k) * 0.25,
                &[],
                true,
                true,
                std::iter::empty(),
            );
        }
        let xid = XidEvent { t: 10.1, xid: 79 };
        book.book(&mut view, &none, 0.25, 0.0);
        book.tick(&mut view, 10.25, &[xid], true, false, std::iter::empty());
        // 10.25 s on the GPU, 1 s of it already lost.
        assert!(
            (view.health.fault_lost_s - 9.25).abs() < 1e-9,
            "{:?}",
            view.health
        );
        assert!((view.lost_by_kind.get(FindingKind::GpuFault) - 9.25).abs() < 1e-9);
        assert_eq!(view.health.faults.len(), 1);
        assert_eq!(
            (view.health.faults[0].xid, view.health.faults[0].job_since),
            (79, 0.0)
        );
    }

    #[test]
    fn a_job_that_outlives_an_xid_loses_nothing_to_it() {
        let mut book = HealthBook::default();
        let mut view = GpuLedger::default();
        let none = ThrottleStep::default();
        book.tick(&mut view, 0.0, &[], true, true, std::iter::empty());
        book.tick(
            &mut view,
            1.0,
            &[XidEvent { t: 1.0, xid: 63 }],
            true,
            true,
            std::iter::empty(),
        );
        for k in 2..100 {
            book.book(&mut view, &none, 1.0, 0.0);
            book.tick(&mut view, f64::from(k), &[], true, true, std::iter::empty());
        }
        book.tick(&mut view, 100.0, &[], false, true, std::iter::empty());
        assert_eq!(view.health.fault_lost_s, 0.0);
        assert!(view.health.faults.is_empty());
    }
}
