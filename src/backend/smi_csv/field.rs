//! Column names of each log format, and what each means here.

use crate::model::throttle;

/// One column's meaning.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Field {
    Timestamp,
    /// `nvidia-smi dmon -o D`: the date, `YYYYMMDD`.
    Date,
    /// `nvidia-smi dmon -o T`: the time of day, `HH:MM:SS`.
    TimeOfDay,
    Index,
    /// `dcgmi dmon`: the entity's kind (`GPU`, `GPU-I`, ...), the column before its id.
    EntityKind,
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
    /// PCIe throughput, bytes per second.
    PcieRx,
    PcieTx,
    ThrottleMask,
    ThrottleBit(u64),
    /// A ratio from 0 to 1 of a percent metric (DCGM's profiling fields).
    Ratio(Percent),
    Ignored,
}

/// The percent metrics DCGM reports as ratios.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Percent {
    Util,
    SmActive,
    SmOccupancy,
    TensorActive,
    DramActive,
}

/// A column name as written, lower case, without its unit in brackets.
fn bare(name: &str) -> String {
    name.split('[')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// The meaning of the CSV column named `name`: nvidia-smi's own names (units in brackets
/// aside), else the same name as wrappers write it (`utilization_gpu_percent`, `power_W`,
/// `gpu_index`); `Ignored` for one not read.
pub(super) fn field_of(name: &str) -> Field {
    let n = bare(name);
    match smi_field(&n) {
        Field::Ignored => alias_field(&n),
        f => f,
    }
}

/// nvidia-smi's `--query-gpu` names.
fn smi_field(n: &str) -> Field {
    if let Some(rest) = n
        .strip_prefix("clocks_event_reasons.")
        .or_else(|| n.strip_prefix("clocks_throttle_reasons."))
    {
        return throttle_bit(rest);
    }
    match n {
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

fn throttle_bit(rest: &str) -> Field {
    match rest {
        "active" => Field::ThrottleMask,
        "gpu_idle" => Field::ThrottleBit(throttle::GPU_IDLE),
        "applications_clocks_setting" => Field::ThrottleBit(throttle::APPLICATIONS_CLOCKS_SETTING),
        "sw_power_cap" => Field::ThrottleBit(throttle::SW_POWER_CAP),
        "hw_slowdown" => Field::ThrottleBit(throttle::HW_SLOWDOWN),
        "sync_boost" => Field::ThrottleBit(throttle::SYNC_BOOST),
        "sw_thermal_slowdown" => Field::ThrottleBit(throttle::SW_THERMAL_SLOWDOWN),
        "hw_thermal_slowdown" => Field::ThrottleBit(throttle::HW_THERMAL_SLOWDOWN),
        "hw_power_brake_slowdown" => Field::ThrottleBit(throttle::HW_POWER_BRAKE_SLOWDOWN),
        "display_clock_setting" => Field::ThrottleBit(throttle::DISPLAY_CLOCK_SETTING),
        _ => Field::Ignored,
    }
}

/// Unit words that wrappers append to a name (`power_W`, `utilization_gpu_percent`).
const UNIT_SUFFIXES: [&str; 7] = [".percent", ".pct", ".w", ".c", ".mib", ".mb", ".mhz"];

/// A wrapper's spelling of an nvidia-smi name: `_` for `.`, a unit word at the end, and the
/// short names such scripts use.
fn alias_field(n: &str) -> Field {
    let dotted = n.replace('_', ".");
    let stem = UNIT_SUFFIXES
        .iter()
        .find_map(|u| dotted.strip_suffix(u))
        .unwrap_or(&dotted);
    match smi_field(stem) {
        Field::Ignored => {}
        f => return f,
    }
    match stem {
        "gpu.index" | "gpu.id" | "gpu" => Field::Index,
        "gpu.util" | "util.gpu" | "gpu.utilization" | "utilization" => Field::UtilGpu,
        "mem.util" | "util.mem" | "utilization.mem" => Field::UtilMem,
        "power" | "power.draw.w" => Field::Power,
        "temperature" | "temp" | "temp.gpu" => Field::Temp,
        "memory.used.mib" | "mem.used" => Field::MemUsed,
        "memory.total.mib" | "mem.total" => Field::MemTotal,
        "time" | "date.time" | "datetime" => Field::Timestamp,
        _ => Field::Ignored,
    }
}

/// The meaning of an `nvidia-smi dmon` column (its first header line: `gpu`, `pwr`, `sm`, ...).
pub(super) fn dmon_field(name: &str) -> Field {
    match name.to_ascii_lowercase().as_str() {
        "date" => Field::Date,
        "time" => Field::TimeOfDay,
        "gpu" => Field::Index,
        "pwr" => Field::Power,
        "gtemp" => Field::Temp,
        "sm" => Field::UtilGpu,
        "mem" => Field::UtilMem,
        "mclk" => Field::MemClock,
        "pclk" => Field::SmClock,
        "fb" => Field::MemUsed,
        _ => Field::Ignored,
    }
}

/// The meaning of a `dcgmi dmon` column (a DCGM field's short name: `GPUTL`, `SMACT`, ...).
pub(super) fn dcgmi_field(name: &str) -> Field {
    match name.to_ascii_uppercase().as_str() {
        "GPUTL" => Field::UtilGpu,
        "MCUTL" => Field::UtilMem,
        "POWER" => Field::Power,
        "PMLMT" => Field::PowerLimit,
        "TMPTR" => Field::Temp,
        "SMCLK" => Field::SmClock,
        "MMCLK" => Field::MemClock,
        "FBUSD" => Field::MemUsed,
        "FBTTL" => Field::MemTotal,
        "SMACT" => Field::Ratio(Percent::SmActive),
        "SMOCC" => Field::Ratio(Percent::SmOccupancy),
        "TENSO" => Field::Ratio(Percent::TensorActive),
        "DRAMA" => Field::Ratio(Percent::DramActive),
        "PCITX" => Field::PcieTx,
        "PCIRX" => Field::PcieRx,
        _ => Field::Ignored,
    }
}

/// DCGM's graphics engine activity (`GRACT`): the utilization of a `dcgmi dmon` log without
/// `GPUTL`.
pub(super) const DCGMI_ENGINE_ACTIVITY: &str = "GRACT";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapper_spellings_mean_the_nvidia_smi_columns() {
        assert_eq!(field_of(" utilization.gpu [%]"), Field::UtilGpu);
        assert_eq!(field_of("utilization_gpu_percent"), Field::UtilGpu);
        assert_eq!(field_of("gpu_index"), Field::Index);
        assert_eq!(field_of("power_W"), Field::Power);
        assert_eq!(field_of("temperature_C"), Field::Temp);
        assert_eq!(field_of("memory_used_MiB"), Field::MemUsed);
        assert_eq!(field_of("power_draw"), Field::Power);
        assert_eq!(field_of("favourite_colour"), Field::Ignored);
        assert_eq!(dmon_field("sm"), Field::UtilGpu);
        assert_eq!(dcgmi_field("TENSO"), Field::Ratio(Percent::TensorActive));
    }
}
