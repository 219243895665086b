//! Health metrics under dcgm-exporter's names (XID, ECC, retired pages, remapped rows, PCIe
//! replays, NVLink, the clock event counters), and gpulse's counters of the time throttling
//! held the clocks and what it and faults lost.
//!
//! Counters are written as the driver counts them (as gauges, as dcgm-exporter's names have no
//! `_total` suffix), for GPUs that answered the newest tick; the
//! last XID also for a GPU that stopped answering (an XID 79 is why). The last XID reads 0 when
//! XIDs are watched and none came, and is absent when they are not watched.

use std::fmt::Write as _;

use super::naming::DcgmNames;
use super::{answered, header, num};
use crate::engine::GpuSnapshot;
use crate::model::{GpuHealth, ThrottleReason, XidWatch};

/// One health metric: its name under each naming (absent where that naming has none), its help,
/// and how to read it. Every DCGM series is written as a gauge, as the device metrics are: the
/// names have no `_total` suffix, which a Prometheus counter's name needs.
struct HealthMetric {
    legacy: Option<&'static str>,
    current: Option<&'static str>,
    help: &'static str,
    read: fn(&GpuHealth) -> Option<f64>,
}

fn n(v: Option<u64>) -> Option<f64> {
    v.map(|x| x as f64)
}

fn flag(v: Option<bool>) -> Option<f64> {
    v.map(|b| f64::from(u8::from(b)))
}

fn links(h: &GpuHealth, pick: fn(&crate::model::NvLinkHealth) -> Option<u64>) -> Option<f64> {
    h.nvlinks
        .iter()
        .filter_map(pick)
        .reduce(|a, b| a.saturating_add(b))
        .map(|x| x as f64)
}

fn held_ns(h: &GpuHealth, r: ThrottleReason) -> Option<f64> {
    n(h.throttle_ns.get(r))
}

const HEALTH_METRICS: &[HealthMetric] = &[
    HealthMetric {
        legacy: Some("DCGM_FI_DEV_ECC_CURRENT"),
        current: Some("DCGM_FI_DEV_ECC_MODE"),
        help: "ECC mode (1 enabled, 0 disabled).",
        read: |h| flag(h.ecc_enabled),
    },
    HealthMetric {
        legacy: Some("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"),
        current: Some("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"),
        help: "Total number of single-bit volatile ECC errors.",
        read: |h| n(h.ecc.volatile_corrected),
    },
    HealthMetric {
        legacy: Some("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"),
        current: Some("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"),
        help: "Total number of double-bit volatile ECC errors.",
        read: |h| n(h.ecc.volatile_uncorrected),
    },
    HealthMetric {
        legacy: Some("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL"),
        current: Some("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL"),
        help: "Total number of single-bit persistent ECC errors.",
        read: |h| n(h.ecc.aggregate_corrected),
    },
    HealthMetric {
        legacy: Some("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL"),
        current: Some("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL"),
        help: "Total number of double-bit persistent ECC errors.",
        read: |h| n(h.ecc.aggregate_uncorrected),
    },
    HealthMetric {
        legacy: Some("DCGM_FI_DEV_RETIRED_SBE"),
        current: Some("DCGM_FI_DEV_PAGE_RETIRED_SBE_TOTAL"),
        help: "Total number of retired pages due to single-bit errors.",
        read: |h| n(h.retired_pages.and_then(|p| p.single_bit)),
    },
    HealthMetric {
        legacy: Some("DCGM_FI_DEV_RETIRED_DBE"),
        current: Some("DCGM_FI_DEV_PAGE_RETIRED_DBE_TOTAL"),
        help: "Total number of retired pages due to double-bit errors.",
        read: |h| n(h.retired_pages.and_then(|p| p.double_bit)),
    },
    HealthMetric {
        legacy: Some("DCGM_FI_DEV_RETIRED_PENDING"),
        current: Some("DCGM_FI_DEV_PAGE_RETIRED_PENDING"),
        help: "Whether pages wait to be retired (1 yes, 0 no).",
        read: |h| flag(h.retired_pages.and_then(|p| p.pending)),
    },
    HealthMetric {
        legacy: Some("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"),
        current: Some("DCGM_FI_DEV_ROW_REMAP_CORRECTABLE_TOTAL"),
        help: "Number of remapped rows for correctable errors.",
        read: |h| n(h.remapped_rows.and_then(|r| r.correctable)),
    },
    HealthMetric {
        legacy: Some("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"),
        current: Some("DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL"),
        help: "Number of remapped rows for uncorrectable errors.",
        read: |h| n(h.remapped_rows.and_then(|r| r.uncorrectable)),
    },
    HealthMetric {
        legacy: Some("DCGM_FI_DEV_ROW_REMAP_FAILURE"),
        current: Some("DCGM_FI_DEV_ROW_REMAP_FAILED"),
        help: "Whether remapping of rows has failed (1 yes, 0 no).",
        read: |h| flag(h.remapped_rows.and_then(|r| r.failed)),
    },
    HealthMetric {
        legacy: Some("DCGM_FI_DEV_ROW_REMAP_PENDING"),
        current: Some("DCGM_FI_DEV_ROW_REMAP_PENDING"),
        help: "Whether remapped rows wait for a GPU reset (1 yes, 0 no).",
        read: |h| flag(h.remapped_rows.and_then(|r| r.pending)),
    },
    HealthMetric {
        legacy: Some("DCGM_FI_DEV_PCIE_REPLAY_COUNTER"),
        current: Some("DCGM_FI_DEV_PCIE_REPLAY_TOTAL"),
        help: "Total number of PCIe retries.",
        read: |h| n(h.pcie_replays),
    },
    HealthMetric {
        legacy: Some("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"),
        current: None,
        help: "NVLink data throughput over all links, received and sent (in MB/s).",
        read: |h| h.nvlink_bytes_per_s().map(|b| b / 1e6),
    },
    HealthMetric {
        legacy: None,
        current: Some("DCGM_FI_DEV_NVLINK_THROUGHPUT_TOTAL"),
        help: "NVLink data throughput over all links, received and sent (in B/s).",
        read: |h| h.nvlink_bytes_per_s(),
    },
    HealthMetric {
        legacy: Some("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL"),
        current: Some("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_TOTAL"),
        help: "Total number of NVLink flow-control CRC errors.",
        read: |h| links(h, |l| l.crc_flit_errors),
    },
    HealthMetric {
        legacy: Some("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL"),
        current: Some("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_TOTAL"),
        help: "Total number of NVLink data CRC errors.",
        read: |h| links(h, |l| l.crc_data_errors),
    },
    HealthMetric {
        legacy: Some("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL"),
        current: Some("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_TOTAL"),
        help: "Total number of NVLink retries.",
        read: |h| links(h, |l| l.replay_errors),
    },
    HealthMetric {
        legacy: Some("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL"),
        current: Some("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_TOTAL"),
        help: "Total number of NVLink recovery errors.",
        read: |h| links(h, |l| l.recovery_errors),
    },
    HealthMetric {
        legacy: Some("DCGM_FI_DEV_POWER_VIOLATION"),
        current: None,
        help: "Throttling duration due to power constraints (in ns).",
        read: |h| held_ns(h, ThrottleReason::SwPowerCap),
    },
    HealthMetric {
        legacy: Some("DCGM_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP_NS"),
        current: Some("DCGM_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP_NS"),
        help: "Time the clocks were held to stay within the power limit (in ns).",
        read: |h| held_ns(h, ThrottleReason::SwPowerCap),
    },
    HealthMetric {
        legacy: Some("DCGM_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN_NS"),
        current: Some("DCGM_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN_NS"),
        help: "Time the clocks were held to keep GPU and memory below their operating temperature (in ns).",
        read: |h| held_ns(h, ThrottleReason::SwThermal),
    },
    HealthMetric {
        legacy: Some("DCGM_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN_NS"),
        current: Some("DCGM_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN_NS"),
        help: "Time the clocks were cut because the temperature was too high (in ns).",
        read: |h| held_ns(h, ThrottleReason::HwThermal),
    },
    HealthMetric {
        legacy: Some("DCGM_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN_NS"),
        current: Some("DCGM_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN_NS"),
        help: "Time the clocks were cut by the external power brake (in ns).",
        read: |h| held_ns(h, ThrottleReason::HwPowerBrake),
    },
];

/// The last XID's metric names.
const XID_LEGACY: &str = "DCGM_FI_DEV_XID_ERRORS";
const XID_CURRENT: &str = "DCGM_FI_DEV_XID_ERROR";

/// gpulse's own health counters, in the order they are written.
pub const HEALTH_GPULSE_METRICS: &[&str] = &[
    "gpulse_throttled_seconds_total",
    "gpulse_throttle_lost_gpu_seconds_total",
    "gpulse_fault_lost_gpu_seconds_total",
];

/// Every health metric name under either naming.
pub fn health_metric_names() -> impl Iterator<Item = &'static str> {
    HEALTH_METRICS
        .iter()
        .flat_map(|m| [m.legacy, m.current])
        .flatten()
        .chain([XID_LEGACY, XID_CURRENT])
        .chain(HEALTH_GPULSE_METRICS.iter().copied())
}

/// The last XID of a GPU: its number, 0 while XIDs are watched and none came.
fn last_xid(g: &GpuSnapshot) -> Option<f64> {
    if let Some(x) = g.xids.last() {
        return Some(x.xid as f64);
    }
    match g.health.as_ref().and_then(|h| h.xid_watch.as_ref()) {
        Some(XidWatch::Watching { .. }) => Some(0.0),
        _ => None,
    }
}

/// The health metrics of the GPUs shown, under `names`.
pub(super) fn render(out: &mut String, gpus: &[(&GpuSnapshot, String)], names: DcgmNames) {
    let xid_name = match names {
        DcgmNames::Legacy => XID_LEGACY,
        DcgmNames::Current => XID_CURRENT,
    };
    let xids: Vec<(&String, f64)> = gpus
        .iter()
        .filter_map(|(g, l)| last_xid(g).map(|v| (l, v)))
        .collect();
    write_family(
        out,
        xid_name,
        "Value of the last XID error encountered (0: none since watching began).",
        &xids,
    );
    for m in HEALTH_METRICS {
        let Some(name) = (match names {
            DcgmNames::Legacy => m.legacy,
            DcgmNames::Current => m.current,
        }) else {
            continue;
        };
        let values: Vec<(&String, f64)> = gpus
            .iter()
            .filter(|(g, _)| answered(g))
            .filter_map(|(g, l)| g.health.as_ref().and_then(m.read).map(|v| (l, v)))
            .collect();
        write_family(out, name, m.help, &values);
    }
    ledger_counters(out, gpus);
}

fn write_family(out: &mut String, name: &str, help: &str, values: &[(&String, f64)]) {
    if values.is_empty() {
        return;
    }
    header(out, name, "gauge", help);
    for (l, v) in values {
        let _ = writeln!(out, "{name}{{{l}}} {}", num(*v));
    }
}

/// gpulse's counters of throttled and lost time, from each GPU's ledger.
fn ledger_counters(out: &mut String, gpus: &[(&GpuSnapshot, String)]) {
    let mut held = String::new();
    let mut lost = String::new();
    for (g, _) in gpus {
        let h = &g.ledger.health;
        for r in ThrottleReason::ALL {
            let Some(s) = h.throttled(r) else {
                continue;
            };
            let l = format!("gpu=\"{}\",reason=\"{}\"", g.info.index, r.as_str());
            let _ = writeln!(held, "gpulse_throttled_seconds_total{{{l}}} {}", num(s));
            if r.serious() {
                let _ = writeln!(
                    lost,
                    "gpulse_throttle_lost_gpu_seconds_total{{{l}}} {}",
                    num(h.throttle_lost(r))
                );
            }
        }
    }
    if !held.is_empty() {
        header(
            out,
            "gpulse_throttled_seconds_total",
            "counter",
            "Seconds each clock event reason held the clocks down since gpulse started.",
        );
        out.push_str(&held);
    }
    if !lost.is_empty() {
        header(
            out,
            "gpulse_throttle_lost_gpu_seconds_total",
            "counter",
            "GPU-seconds each serious clock event reason cost: time held x clock given up x busy share.",
        );
        out.push_str(&lost);
    }
    // Only where XIDs are watched (or a fault was booked): elsewhere nothing is measured.
    let faults: Vec<(u32, f64)> = gpus
        .iter()
        .filter(|(g, _)| {
            g.health.as_ref().is_some_and(|h| h.xid_watch.is_some())
                || g.ledger.health.fault_lost_s > 0.0
        })
        .map(|(g, _)| (g.info.index, g.ledger.health.fault_lost_s))
        .collect();
    if faults.is_empty() {
        return;
    }
    header(
        out,
        "gpulse_fault_lost_gpu_seconds_total",
        "counter",
        "GPU-seconds of jobs an XID ended, since gpulse started.",
    );
    for (gpu, s) in faults {
        let _ = writeln!(
            out,
            "gpulse_fault_lost_gpu_seconds_total{{gpu=\"{gpu}\"}} {}",
            num(s)
        );
    }
}
