//! The `faulty` scenario's hardware: each GPU trains like a healthy one, and the driver reports
//! what a sick node shows. By GPU (repeating every four):
//!
//! 0. falls off the bus at [`OFF_BUS_AT_S`]: XID 79, then the GPU answers nothing (lost);
//! 1. a memory row waits to be remapped (XID 63 at [`REMAP_XID_AT_S`]) and corrected ECC errors
//!    keep rising;
//! 2. HW slowdown (thermal): for 50 s of every 60 the clocks are held at half, its bits set and
//!    the HW-thermal counter counting; NVLink traffic with GPU 3;
//! 3. NVLink traffic with GPU 2, otherwise clean.
//!
//! Health counters are read every [`HEALTH_PERIOD_S`], as the NVML backend reads them; XIDs
//! arrive at the tick after they happen.

use super::Rng;
use crate::model::{
    throttle, EccCounts, GpuHealth, GpuReading, GpuStatus, Metrics, NvLinkHealth, RemappedRows,
    ThrottleCounters, ThrottleReason, UnixTime, XidEvent, XidWatch,
};

/// How often the health counters are read (as on NVML).
pub const HEALTH_PERIOD_S: f64 = 5.0;
/// When GPU 0 falls off the bus, seconds after the start.
pub const OFF_BUS_AT_S: f64 = 45.0;
/// When GPU 1 records its row remap (XID 63), seconds after the start.
pub const REMAP_XID_AT_S: f64 = 12.0;
/// The HW slowdown's cycle: free for the first [`SLOWDOWN_FREE_S`] of every
/// [`SLOWDOWN_CYCLE_S`], held the rest.
pub const SLOWDOWN_CYCLE_S: f64 = 60.0;
pub const SLOWDOWN_FREE_S: f64 = 10.0;
/// NVLink links of a simulated H200 SXM, and each link's data rate while the job is busy.
const NVLINKS: u32 = 18;
const LINK_BYTES_PER_S: f64 = 14e9;

/// What one GPU of the scenario suffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ailment {
    OffTheBus,
    FailingMemory,
    HwSlowdown,
    NvLinkOnly,
}

impl Ailment {
    pub fn of(index: u32) -> Ailment {
        match index % 4 {
            0 => Ailment::OffTheBus,
            1 => Ailment::FailingMemory,
            2 => Ailment::HwSlowdown,
            _ => Ailment::NvLinkOnly,
        }
    }

    fn has_nvlink(self) -> bool {
        matches!(self, Ailment::HwSlowdown | Ailment::NvLinkOnly)
    }
}

/// The driver's side of one faulty GPU: its counters, and what it reported last.
#[derive(Debug, Clone)]
pub struct SimFaults {
    ailment: Ailment,
    start: UnixTime,
    noise: Rng,
    /// Nanoseconds each reason has held the clocks, and the newest tick counted.
    held_ns: [f64; 5],
    last_rel: Option<f64>,
    /// The health period last read.
    health_at: Option<i64>,
    xids_sent: usize,
}

impl SimFaults {
    pub fn new(index: u32, seed: u64, start: UnixTime) -> Self {
        SimFaults {
            ailment: Ailment::of(index),
            start,
            noise: Rng::new(seed ^ (0xFA17 + u64::from(index) * 104_729)),
            held_ns: [0.0; 5],
            last_rel: None,
            health_at: None,
            xids_sent: 0,
        }
    }

    /// Whether the HW slowdown holds the clocks at `rel` seconds after the start.
    pub fn slowed(&self, rel: f64) -> bool {
        self.ailment == Ailment::HwSlowdown && rel.rem_euclid(SLOWDOWN_CYCLE_S) >= SLOWDOWN_FREE_S
    }

    /// Turn a healthy GPU's reading at `now` into this GPU's.
    pub fn apply(&mut self, now: UnixTime, r: &mut GpuReading) {
        let rel = (now - self.start).max(0.0);
        r.xids = self.new_xids(rel);
        if self.ailment == Ailment::OffTheBus && rel >= OFF_BUS_AT_S {
            let xids = std::mem::take(&mut r.xids);
            *r = GpuReading::empty(
                r.index,
                GpuStatus::Lost {
                    reason: "GPU has fallen off the bus (XID 79)".into(),
                },
            );
            r.xids = xids;
            return;
        }
        self.count_held(rel, &mut r.metrics);
        let period = (rel / HEALTH_PERIOD_S).floor() as i64;
        if self.health_at != Some(period) {
            self.health_at = Some(period);
            r.health = Some(self.health(now, rel, &r.metrics));
        }
    }

    /// The XIDs whose time came since the last reading.
    fn new_xids(&mut self, rel: f64) -> Vec<XidEvent> {
        let due: &[(f64, u64)] = match self.ailment {
            Ailment::OffTheBus => &[(OFF_BUS_AT_S, 79)],
            Ailment::FailingMemory => &[(REMAP_XID_AT_S, 63)],
            _ => &[],
        };
        let fresh: Vec<XidEvent> = due
            .iter()
            .skip(self.xids_sent)
            .take_while(|(at, _)| rel >= *at)
            .map(|&(at, xid)| XidEvent {
                t: self.start + at,
                xid,
            })
            .collect();
        self.xids_sent += fresh.len();
        fresh
    }

    /// Hold the clocks while slowed (bits, SM clock, temperature), count each reason's time
    /// and give the tick's shares.
    fn count_held(&mut self, rel: f64, m: &mut Metrics) {
        let dt = self.last_rel.map_or(0.0, |l| (rel - l).clamp(0.0, 5.0));
        self.last_rel = Some(rel);
        if self.slowed(rel) {
            let bits = m.throttle.unwrap_or(0);
            m.throttle = Some(bits | throttle::HW_SLOWDOWN | throttle::HW_THERMAL_SLOWDOWN);
            m.sm_clock_mhz = m.sm_clock_mhz.map(|c| c / 2);
            m.temp_c = Some(91.0);
        }
        let bits = m.throttle.unwrap_or(0);
        for r in ThrottleReason::ALL {
            // NVML counts no HW slowdown as such: its bit says it.
            if r == ThrottleReason::HwSlowdown {
                continue;
            }
            let on = bits & r.bit() != 0;
            if on {
                self.held_ns[r as usize] += dt * 1e9;
            }
            m.throttle_held.set(r, Some(if on { 1.0 } else { 0.0 }));
        }
    }

    fn health(&mut self, now: UnixTime, rel: f64, m: &Metrics) -> GpuHealth {
        let mut counters = ThrottleCounters::default();
        for r in ThrottleReason::ALL {
            if r != ThrottleReason::HwSlowdown {
                counters.set(r, Some(self.held_ns[r as usize] as u64));
            }
        }
        let corrected = match self.ailment {
            Ailment::FailingMemory => 12 + (rel / 2.0).floor() as u64,
            _ => 0,
        };
        GpuHealth {
            t: now,
            ecc_enabled: Some(true),
            ecc: EccCounts {
                volatile_corrected: Some(corrected),
                volatile_uncorrected: Some(0),
                aggregate_corrected: Some(corrected + if corrected > 0 { 340 } else { 0 }),
                aggregate_uncorrected: Some(0),
            },
            // Hopper remaps rows: it retires no pages.
            retired_pages: None,
            remapped_rows: Some(self.remapped(rel)),
            pcie_replays: Some(0),
            nvlinks: self.nvlinks(m),
            throttle_ns: counters,
            xid_watch: Some(XidWatch::Watching { since: self.start }),
        }
    }

    fn remapped(&self, rel: f64) -> RemappedRows {
        let pending = self.ailment == Ailment::FailingMemory && rel >= REMAP_XID_AT_S;
        RemappedRows {
            correctable: Some(u64::from(pending)),
            uncorrectable: Some(0),
            pending: Some(pending),
            failed: Some(false),
        }
    }

    /// Every link of an NVLink GPU, carrying the job's all-reduce traffic.
    fn nvlinks(&mut self, m: &Metrics) -> Vec<NvLinkHealth> {
        if !self.ailment.has_nvlink() {
            return Vec::new();
        }
        let busy = m.util_gpu.unwrap_or(0.0) / 100.0;
        (0..NVLINKS)
            .map(|link| {
                let rate = (busy * LINK_BYTES_PER_S * (1.0 + self.noise.noise(0.03))).max(0.0);
                NvLinkHealth {
                    link,
                    active: Some(true),
                    version: Some(4),
                    crc_flit_errors: Some(0),
                    crc_data_errors: Some(0),
                    replay_errors: Some(0),
                    recovery_errors: Some(0),
                    rx_bytes_per_s: Some(rate.round()),
                    tx_bytes_per_s: Some(rate.round()),
                }
            })
            .collect()
    }
}
