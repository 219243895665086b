//! The device metrics, under dcgm-exporter's names, units and help texts, each with how to read
//! it from a GPU's readings. Memory is in MiB and `PROF` activity a 0–1 ratio, as dcgm-exporter
//! writes them, so dashboards built for it keep working.

use crate::model::Metrics;

const MIB: f64 = (1u64 << 20) as f64;

/// One device metric: name, help, and how to read it from the readings.
pub(super) struct DeviceMetric {
    pub(super) name: &'static str,
    pub(super) help: &'static str,
    pub(super) read: fn(&Metrics) -> Option<f64>,
}

/// A percentage as a 0–1 ratio.
fn ratio(v: Option<f64>) -> Option<f64> {
    v.map(|p| p / 100.0)
}

/// Every device metric, in the order they are written.
pub(super) const DEVICE_METRICS: &[DeviceMetric] = &[
    DeviceMetric {
        name: "DCGM_FI_DEV_GPU_UTIL",
        help: "GPU utilization (in %).",
        read: |m| m.util_gpu,
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
        name: "DCGM_FI_DEV_FB_TOTAL",
        help: "Framebuffer memory total (in MiB).",
        read: |m| m.mem_total_bytes.map(|b| (b as f64 / MIB).round()),
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_POWER_USAGE",
        help: "Power draw (in W).",
        read: |m| m.power_w,
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_POWER_MGMT_LIMIT",
        help: "Power management limit (in W).",
        read: |m| m.power_limit_w,
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        help: "Total energy consumption since the driver loaded (in mJ).",
        read: |m| m.energy_j.map(|j| (j * 1000.0).round()),
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_GPU_TEMP",
        help: "GPU temperature (in C).",
        read: |m| m.temp_c,
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_SM_CLOCK",
        help: "SM clock frequency (in MHz).",
        read: |m| m.sm_clock_mhz.map(f64::from),
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_MEM_CLOCK",
        help: "Memory clock frequency (in MHz).",
        read: |m| m.mem_clock_mhz.map(f64::from),
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_FAN_SPEED",
        help: "Fan speed (in %).",
        read: |m| m.fan_pct.map(f64::from),
    },
    DeviceMetric {
        name: "DCGM_FI_DEV_PSTATE",
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
        name: "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
        help: "Current clock throttle reasons (bitmask of NVML's clock event reasons).",
        read: |m| m.throttle.map(|b| b as f64),
    },
    DeviceMetric {
        name: "DCGM_FI_PROF_SM_ACTIVE",
        help: "The ratio of cycles an SM has at least 1 warp assigned (0-1).",
        read: |m| ratio(m.sm_active),
    },
    DeviceMetric {
        name: "DCGM_FI_PROF_SM_OCCUPANCY",
        help: "The ratio of number of warps resident on an SM to the maximum (0-1).",
        read: |m| ratio(m.sm_occupancy),
    },
    DeviceMetric {
        name: "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        help: "Ratio of cycles the tensor (HMMA) pipe is active (0-1).",
        read: |m| ratio(m.tensor_active),
    },
    DeviceMetric {
        name: "DCGM_FI_PROF_DRAM_ACTIVE",
        help:
            "Ratio of cycles the device memory interface is active sending or receiving data (0-1).",
        read: |m| ratio(m.dram_active),
    },
    DeviceMetric {
        name: "DCGM_FI_PROF_PCIE_RX_BYTES",
        help: "The rate of data received over the PCIe bus, including headers (in B/s).",
        read: |m| m.pcie_rx_bytes_per_s,
    },
    DeviceMetric {
        name: "DCGM_FI_PROF_PCIE_TX_BYTES",
        help: "The rate of data transmitted over the PCIe bus, including headers (in B/s).",
        read: |m| m.pcie_tx_bytes_per_s,
    },
];
