//! Column names of an nvidia-smi query, and what each means here.

use crate::model::throttle;

/// One column's meaning.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Field {
    Timestamp,
    Index,
    Uuid,
    Name,
    BusId,
    UtilGpu,
    UtilMem,
    MemUsed,
    MemTotal,
    Power,
    PowerLimit,
    SmClock,
    MemClock,
    SmClockMax,
    Temp,
    Fan,
    Pstate,
    PcieGen,
    PcieWidth,
    PcieGenMax,
    PcieWidthMax,
    ThrottleMask,
    ThrottleBit(u64),
    Ignored,
}

/// The meaning of the column named `name` (units in brackets aside); `Ignored` for one not read.
pub(super) fn field_of(name: &str) -> Field {
    let n = name
        .split('[')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let bit = |rest: &str| -> Field {
        match rest {
            "active" => Field::ThrottleMask,
            "gpu_idle" => Field::ThrottleBit(throttle::GPU_IDLE),
            "applications_clocks_setting" => {
                Field::ThrottleBit(throttle::APPLICATIONS_CLOCKS_SETTING)
            }
            "sw_power_cap" => Field::ThrottleBit(throttle::SW_POWER_CAP),
            "hw_slowdown" => Field::ThrottleBit(throttle::HW_SLOWDOWN),
            "sync_boost" => Field::ThrottleBit(throttle::SYNC_BOOST),
            "sw_thermal_slowdown" => Field::ThrottleBit(throttle::SW_THERMAL_SLOWDOWN),
            "hw_thermal_slowdown" => Field::ThrottleBit(throttle::HW_THERMAL_SLOWDOWN),
            "hw_power_brake_slowdown" => Field::ThrottleBit(throttle::HW_POWER_BRAKE_SLOWDOWN),
            "display_clock_setting" => Field::ThrottleBit(throttle::DISPLAY_CLOCK_SETTING),
            _ => Field::Ignored,
        }
    };
    if let Some(rest) = n
        .strip_prefix("clocks_event_reasons.")
        .or_else(|| n.strip_prefix("clocks_throttle_reasons."))
    {
        return bit(rest);
    }
    match n.as_str() {
        "timestamp" => Field::Timestamp,
        "index" => Field::Index,
        "uuid" | "gpu_uuid" => Field::Uuid,
        "name" | "gpu_name" => Field::Name,
        "pci.bus_id" | "gpu_bus_id" => Field::BusId,
        "utilization.gpu" => Field::UtilGpu,
        "utilization.memory" => Field::UtilMem,
        "memory.used" => Field::MemUsed,
        "memory.total" => Field::MemTotal,
        "power.draw" | "power.draw.instant" | "power.draw.average" => Field::Power,
        "power.limit" | "enforced.power.limit" => Field::PowerLimit,
        "clocks.sm" | "clocks.current.sm" => Field::SmClock,
        "clocks.mem" | "clocks.current.memory" => Field::MemClock,
        "clocks.max.sm" | "clocks.max.sm_clock" => Field::SmClockMax,
        "temperature.gpu" => Field::Temp,
        "fan.speed" => Field::Fan,
        "pstate" => Field::Pstate,
        "pcie.link.gen.current" | "pcie.link.gen.gpucurrent" => Field::PcieGen,
        "pcie.link.width.current" => Field::PcieWidth,
        "pcie.link.gen.max" | "pcie.link.gen.gpumax" => Field::PcieGenMax,
        "pcie.link.width.max" => Field::PcieWidthMax,
        _ => Field::Ignored,
    }
}
