//! One GPU's health counters through NVML, each on its own period.
//!
//! - Every [`THROTTLE_PERIOD_S`]: the clock event counters (nanoseconds each reason held the
//!   clocks; field values, one call), giving each reason's share of the time since the last
//!   read, carried between reads.
//! - Every [`HEALTH_PERIOD_S`]: ECC totals, retired pages, remapped rows and PCIe replays (field
//!   values, one call), the ECC mode, and per NVLink link its state, error counters and data
//!   counters (byte rates between reads).
//!
//! A counter the GPU does not have is absent; a call it refuses is not made again. The NVLink
//! links are found once at start: none (NotSupported on link 0) means the GPU has no NVLink.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use nvml_wrapper::enum_wrappers::nv_link::ErrorCounter;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::sys_exports::field_id as fi;
use nvml_wrapper::{Device, Nvml};

use super::errors::{classify, Failure};
use super::fields::{field_values, scoped_field_values, FieldAnswer};
use crate::backend::DeviceError;
use crate::model::{
    EccCounts, GpuHealth, NvLinkHealth, RemappedRows, RetiredPages, ThrottleCounters, ThrottleHeld,
    ThrottleReason, UnixTime, XidWatch,
};

/// How often the health counters are read: they change rarely, and the NVLink ones cost a call
/// per link.
pub const HEALTH_PERIOD_S: f64 = 5.0;
/// How often the clock event counters are read (as the other slow readings).
pub const THROTTLE_PERIOD_S: f64 = 1.0;
/// The most NVLink links a GPU has (NVML_NVLINK_MAX_LINKS).
const MAX_LINKS: u32 = 18;
/// NVML counts NVLink data in KiB.
const KIB: f64 = 1024.0;

/// The counters of one field-values call, in this order.
const COUNTERS: [u32; 12] = [
    fi::NVML_FI_DEV_ECC_SBE_VOL_TOTAL,
    fi::NVML_FI_DEV_ECC_DBE_VOL_TOTAL,
    fi::NVML_FI_DEV_ECC_SBE_AGG_TOTAL,
    fi::NVML_FI_DEV_ECC_DBE_AGG_TOTAL,
    fi::NVML_FI_DEV_RETIRED_SBE,
    fi::NVML_FI_DEV_RETIRED_DBE,
    fi::NVML_FI_DEV_RETIRED_PENDING,
    fi::NVML_FI_DEV_PCIE_REPLAY_COUNTER,
    fi::NVML_FI_DEV_REMAPPED_COR,
    fi::NVML_FI_DEV_REMAPPED_UNC,
    fi::NVML_FI_DEV_REMAPPED_PENDING,
    fi::NVML_FI_DEV_REMAPPED_FAILURE,
];

/// The clock event counters, with the reason each counts (NVML keeps none for HW slowdown).
const THROTTLE_FIELDS: [(u32, ThrottleReason); 4] = [
    (
        fi::NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP,
        ThrottleReason::SwPowerCap,
    ),
    (
        fi::NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN,
        ThrottleReason::SwThermal,
    ),
    (
        fi::NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN,
        ThrottleReason::HwThermal,
    ),
    (
        fi::NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN,
        ThrottleReason::HwPowerBrake,
    ),
];

/// Calls this GPU refused (not made again).
#[derive(Debug, Clone, Copy, Default)]
struct Refused {
    counters: bool,
    ecc_mode: bool,
    throttle: bool,
    link_errors: bool,
    link_data: bool,
}

/// One link's data counters (KiB received, sent) at a read.
type LinkData = (Option<f64>, Option<f64>);

/// The XID watch of one GPU, set by the event thread.
pub type XidWatchCell = Arc<Mutex<Option<XidWatch>>>;

/// One GPU's health reader.
pub struct HealthReader {
    nvml: &'static Nvml,
    /// The NVLink links and their versions, found at start.
    links: Vec<(u32, Option<u32>)>,
    xid_watch: XidWatchCell,
    refused: Refused,
    health_at: Option<Instant>,
    /// The clock event counters at their last read, and when.
    throttle_read: Option<(Instant, ThrottleCounters)>,
    held: ThrottleHeld,
    /// Each link's data counters (KiB received, sent) at the last read, and when.
    link_data: Option<(Instant, Vec<LinkData>)>,
}

/// A failed call: a lost GPU is an error; anything else leaves the reading absent.
fn lost_or_absent(e: &NvmlError, what: &str) -> Result<(), DeviceError> {
    match classify(e, false) {
        Failure::Lost => Err(DeviceError::Lost(format!("{what}: {e}"))),
        _ => Ok(()),
    }
}

impl HealthReader {
    /// A reader for `d`, its NVLink links found now.
    pub fn new(nvml: &'static Nvml, d: &Device<'static>, xid_watch: XidWatchCell) -> Self {
        HealthReader {
            nvml,
            links: find_links(d),
            xid_watch,
            refused: Refused::default(),
            health_at: None,
            throttle_read: None,
            held: ThrottleHeld::default(),
            link_data: None,
        }
    }

    /// This tick's share of time each reason held the clocks (carried between reads), and the
    /// health counters when they were read this tick.
    pub fn tick(
        &mut self,
        d: &Device<'static>,
        now: UnixTime,
    ) -> Result<(ThrottleHeld, Option<GpuHealth>), DeviceError> {
        let due = |at: Option<Instant>, period: f64| {
            at.is_none_or(|a| a.elapsed().as_secs_f64() >= period - super::device::SLOW_SLACK_S)
        };
        if due(self.throttle_read.map(|r| r.0), THROTTLE_PERIOD_S) {
            self.read_throttle(d)?;
        }
        if !due(self.health_at, HEALTH_PERIOD_S) {
            return Ok((self.held, None));
        }
        self.health_at = Some(Instant::now());
        let mut h = GpuHealth {
            t: now,
            throttle_ns: self.throttle_read.map(|r| r.1).unwrap_or_default(),
            xid_watch: self.xid_watch.lock().ok().and_then(|w| w.clone()),
            ..Default::default()
        };
        self.read_counters(d, &mut h)?;
        self.read_ecc_mode(d, &mut h)?;
        h.nvlinks = self.read_links(d)?;
        Ok((self.held, Some(h)))
    }

    /// The clock event counters, and each reason's share since the last read.
    fn read_throttle(&mut self, d: &Device<'static>) -> Result<(), DeviceError> {
        if self.refused.throttle {
            return Ok(());
        }
        let counters = match throttle_counters(d) {
            Ok(c) => c,
            Err(e) => {
                self.refused.throttle = true;
                return lost_or_absent(&e, "clock event counters");
            }
        };
        let at = Instant::now();
        let mut held = ThrottleHeld::default();
        if let Some((before, old)) = self.throttle_read {
            let span_ns = at.duration_since(before).as_nanos() as f64;
            for (_, reason) in THROTTLE_FIELDS {
                let share = match (old.get(reason), counters.get(reason)) {
                    // A counter that went back is a driver reload: no share this time.
                    (Some(a), Some(b)) if b >= a && span_ns > 0.0 => {
                        Some(((b - a) as f64 / span_ns) as f32)
                    }
                    _ => None,
                };
                held.set(reason, share);
            }
        }
        self.held = held;
        self.throttle_read = Some((at, counters));
        Ok(())
    }

    /// ECC totals, retired pages, remapped rows and PCIe replays.
    fn read_counters(&mut self, d: &Device<'static>, h: &mut GpuHealth) -> Result<(), DeviceError> {
        if self.refused.counters {
            return Ok(());
        }
        let a = match field_values(d, &COUNTERS) {
            Ok(a) => a,
            Err(e) => {
                self.refused.counters = true;
                return lost_or_absent(&e, "health counters");
            }
        };
        fill_counters(h, &a);
        Ok(())
    }

    fn read_ecc_mode(&mut self, d: &Device<'static>, h: &mut GpuHealth) -> Result<(), DeviceError> {
        if self.refused.ecc_mode {
            return Ok(());
        }
        match d.is_ecc_enabled() {
            Ok(m) => h.ecc_enabled = Some(m.currently_enabled),
            Err(e) => {
                self.refused.ecc_mode = true;
                lost_or_absent(&e, "ECC mode")?;
            }
        }
        Ok(())
    }

    /// Every link's state, errors and data rates (empty without NVLink).
    fn read_links(&mut self, d: &Device<'static>) -> Result<Vec<NvLinkHealth>, DeviceError> {
        let links = self.links.clone();
        let mut out = Vec::with_capacity(links.len());
        for (link, version) in links {
            let l = d.link_wrapper_for(link);
            let active = match l.is_active() {
                Ok(a) => Some(a),
                Err(e) => {
                    lost_or_absent(&e, "NVLink state")?;
                    None
                }
            };
            let mut entry = NvLinkHealth {
                link,
                active,
                version,
                ..Default::default()
            };
            if !self.refused.link_errors {
                self.read_link_errors(&l, &mut entry)?;
            }
            out.push(entry);
        }
        self.read_link_data(d, &mut out)?;
        Ok(out)
    }

    fn read_link_errors(
        &mut self,
        l: &nvml_wrapper::NvLink<'_, 'static>,
        entry: &mut NvLinkHealth,
    ) -> Result<(), DeviceError> {
        let mut read = |c: ErrorCounter| -> Result<Option<u64>, DeviceError> {
            match l.error_counter(c) {
                Ok(v) => Ok(Some(v)),
                Err(e) => {
                    lost_or_absent(&e, "NVLink errors")?;
                    if matches!(classify(&e, false), Failure::Unsupported) {
                        self.refused.link_errors = true;
                    }
                    Ok(None)
                }
            }
        };
        entry.crc_flit_errors = read(ErrorCounter::DlCrcFlit)?;
        entry.crc_data_errors = read(ErrorCounter::DlCrcData)?;
        entry.replay_errors = read(ErrorCounter::DlReplay)?;
        entry.recovery_errors = read(ErrorCounter::DlRecovery)?;
        Ok(())
    }

    /// Each link's data counters, and the byte rates since the last read.
    fn read_link_data(
        &mut self,
        d: &Device<'static>,
        links: &mut [NvLinkHealth],
    ) -> Result<(), DeviceError> {
        if self.refused.link_data || links.is_empty() {
            return Ok(());
        }
        let fields: Vec<(u32, u32)> = links
            .iter()
            .flat_map(|l| {
                [
                    (fi::NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, l.link),
                    (fi::NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, l.link),
                ]
            })
            .collect();
        let answers = match scoped_field_values(self.nvml, d, &fields) {
            Ok(a) => a,
            Err(e) => {
                self.refused.link_data = true;
                return lost_or_absent(&e, "NVLink data counters");
            }
        };
        let at = Instant::now();
        let kib: Vec<LinkData> = answers
            .chunks(2)
            .map(|p| (ok(p.first()), ok(p.get(1))))
            .collect();
        if let Some((before, old)) = &self.link_data {
            let dt = at.duration_since(*before).as_secs_f64();
            for (l, (now, was)) in links.iter_mut().zip(kib.iter().zip(old)) {
                l.rx_bytes_per_s = rate(was.0, now.0, dt);
                l.tx_bytes_per_s = rate(was.1, now.1, dt);
            }
        }
        self.link_data = Some((at, kib));
        Ok(())
    }
}

/// The clock event counters now (nanoseconds each reason held the clocks since the driver
/// loaded; a counter the driver refuses is absent).
pub fn throttle_counters(d: &Device<'static>) -> Result<ThrottleCounters, NvmlError> {
    let ids: Vec<u32> = THROTTLE_FIELDS.iter().map(|(id, _)| *id).collect();
    let mut counters = ThrottleCounters::default();
    for ((_, reason), a) in THROTTLE_FIELDS.iter().zip(field_values(d, &ids)?) {
        counters.set(*reason, a.ok().map(|ns| ns as u64));
    }
    Ok(counters)
}

fn ok(a: Option<&FieldAnswer>) -> Option<f64> {
    a.and_then(|r| r.as_ref().ok().copied())
}

/// Bytes per second between two KiB counter readings `dt` seconds apart (none when the counter
/// went back or a reading is missing).
fn rate(was: Option<f64>, now: Option<f64>, dt: f64) -> Option<f64> {
    match (was, now) {
        (Some(a), Some(b)) if b >= a && dt > 0.0 => Some((b - a) * KIB / dt),
        _ => None,
    }
}

/// The counters of one [`COUNTERS`] call into `h`.
fn fill_counters(h: &mut GpuHealth, a: &[FieldAnswer]) {
    let v = |i: usize| ok(a.get(i));
    let n = |i: usize| v(i).map(|x| x as u64);
    let b = |i: usize| v(i).map(|x| x != 0.0);
    h.ecc = EccCounts {
        volatile_corrected: n(0),
        volatile_uncorrected: n(1),
        aggregate_corrected: n(2),
        aggregate_uncorrected: n(3),
    };
    let pages = RetiredPages {
        single_bit: n(4),
        double_bit: n(5),
        pending: b(6),
    };
    h.retired_pages = (pages != RetiredPages::default()).then_some(pages);
    h.pcie_replays = n(7);
    let rows = RemappedRows {
        correctable: n(8),
        uncorrectable: n(9),
        pending: b(10),
        failed: b(11),
    };
    h.remapped_rows = (rows != RemappedRows::default()).then_some(rows);
}

/// The GPU's NVLink links and their versions: those whose state answers, from link 0 up; none
/// where link 0 is not supported.
fn find_links(d: &Device<'static>) -> Vec<(u32, Option<u32>)> {
    let mut out = Vec::new();
    for link in 0..MAX_LINKS {
        let l = d.link_wrapper_for(link);
        match l.is_active() {
            Ok(_) => out.push((link, l.version().ok())),
            Err(_) => break,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_refused_one_by_one_stay_absent() {
        // Retired pages (4-6) are not kept on a GPU that remaps rows.
        let mut a: Vec<FieldAnswer> = (0..COUNTERS.len())
            .map(|i| {
                if (4..=6).contains(&i) {
                    Err(NvmlError::NotSupported)
                } else {
                    Ok(0.0)
                }
            })
            .collect();
        a[0] = Ok(57.0);
        a[10] = Ok(1.0);
        let mut h = GpuHealth::default();
        fill_counters(&mut h, &a);
        assert_eq!(h.ecc.volatile_corrected, Some(57));
        assert_eq!(h.retired_pages, None);
        assert_eq!(h.pcie_replays, Some(0));
        let rows = h.remapped_rows.expect("read");
        assert_eq!((rows.pending, rows.failed), (Some(true), Some(false)));
    }

    #[test]
    fn link_rates_come_from_counter_differences() {
        assert_eq!(rate(Some(100.0), Some(1100.0), 2.0), Some(512_000.0));
        assert_eq!(rate(Some(100.0), Some(50.0), 2.0), None, "went back");
        assert_eq!(rate(None, Some(50.0), 2.0), None);
    }
}
