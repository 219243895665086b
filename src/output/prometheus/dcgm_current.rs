//! The device metrics under dcgm-exporter's current names and units (4.10 and later): DCGM's
//! field names since DCGM 4.6 renamed them (`dcgm_fields.h`, its deprecated-alias block and
//! "Deprecated: Use ..." notes), and the profiling fields 4.10 renamed. Utilization is a 0–1
//! ratio, clocks are in Hz, energy in J, total memory in bytes.
//!
//! Memory used and free and memory-copy utilization keep their names and units: DCGM's header
//! gives them no new name, and the names dcgm-exporter 4.9 gives them are not published in a
//! source gpulse could check, so the names dashboards know stay.

use super::dcgm::DeviceMetric;

const MIB: f64 = (1u64 << 20) as f64;

fn ratio(v: Option<f64>) -> Option<f64> {
    v.map(|p| p / 100.0)
}

fn hertz(mhz: Option<u32>) -> Option<f64> {
    mhz.map(|m| f64::from(m) * 1e6)
}

/// Every device metric under its current name, in the order they are written.
pub(super) const DEVICE_METRICS_CURRENT: &[DeviceMetric] = &[
    DeviceMetric {
        name: "DCGM_FI_DEV_GPU_UTIL_RATIO",
        help: "GPU utilization (0-1).",
        read: |m| ratio(m.util_gpu),
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_MEM_COPY_UTIL",
        help: "Memory utilization (in %).",
        read: |m| m.util_mem,
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_FB_USED",
        help: "Framebuffer memory used (in MiB).",
        read: |m| m.mem_used_bytes.map(|b| (b as f64 / MIB).round()),
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_FB_FREE",
        help: "Framebuffer memory free (in MiB).",
        read: |m| match (m.mem_total_bytes, m.mem_used_bytes) {
            (Some(t), Some(u)) => Some((t.saturating_sub(u) as f64 / MIB).round()),
            _ => None,
        },
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_FB_CAPACITY_BYTES",
        help: "Total GPU memory (in bytes).",
        read: |m| m.mem_total_bytes.map(|b| b as f64),
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_BOARD_POWER_WATTS",
        help: "Board power draw (in W).",
        read: |m| m.power_w,
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_BOARD_POWER_LIMIT_ENFORCED_WATTS",
        help: "Enforced board power limit (in W).",
        read: |m| m.power_limit_w,
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL",
        help: "Total GPU energy consumption since the driver loaded (in J).",
        read: |m| m.energy_j,
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_GPU_TEMP_CELSIUS",
        help: "GPU temperature (in C).",
        read: |m| m.temp_c,
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_SM_CLOCK_HERTZ",
        help: "SM clock frequency (in Hz).",
        read: |m| hertz(m.sm_clock_mhz),
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_MEMORY_CLOCK_HERTZ",
        help: "Memory clock frequency (in Hz).",
        read: |m| hertz(m.mem_clock_mhz),
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_FAN_SPEED_RATIO",
        help: "Fan speed (0-1 of the maximum).",
        read: |m| m.fan_pct.map(|p| f64::from(p) / 100.0),
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_GPU_PSTATE",
        help: "Performance state (0 fastest to 15 slowest).",
        read: |m| m.pstate.map(f64::from),
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_PCIE_LINK_GEN",
        help: "Current PCIe link generation.",
        read: |m| m.pcie_gen.map(f64::from),
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_PCIE_LINK_WIDTH",
        help: "Current PCIe link width (lanes).",
        read: |m| m.pcie_width.map(f64::from),
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
        help: "Current clock event reasons (bitmask of NVML's clock event reasons).",
        read: |m| m.throttle.map(|b| b as f64),
    },
    DeviceMetric {
        name: "DCGM_FI_PROF_SM_UTIL_RATIO",
        help: "The ratio of cycles an SM has at least 1 warp assigned (0-1).",
        read: |m| ratio(m.sm_active),
    },
    DeviceMetric {
        name: "DCGM_FI_PROF_SM_OCCUPANCY_RATIO",
        help: "The ratio of number of warps resident on an SM to the maximum (0-1).",
        read: |m| ratio(m.sm_occupancy),
    },
    DeviceMetric {
        name: "DCGM_FI_PROF_TENSOR_UTIL_RATIO",
        help: "Ratio of cycles the tensor pipes are active (0-1).",
        read: |m| ratio(m.tensor_active),
    },
    DeviceMetric {
        name: "DCGM_FI_PROF_DRAM_UTIL_RATIO",
        help:
            "Ratio of cycles the device memory interface is active sending or receiving data (0-1).",
        read: |m| ratio(m.dram_active),
    },
    DeviceMetric {
        name: "DCGM_FI_PROF_PCIE_RX_BYTES_PER_SECOND",
        help: "The rate of data received over the PCIe bus, including headers (in B/s).",
        read: |m| m.pcie_rx_bytes_per_s,
    },
    DeviceMetric {
        name: "DCGM_FI_PROF_PCIE_TX_BYTES_PER_SECOND",
        help: "The rate of data transmitted over the PCIe bus, including headers (in B/s).",
        read: |m| m.pcie_tx_bytes_per_s,
    },
];
