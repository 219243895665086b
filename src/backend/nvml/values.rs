//! NVML's enumerated values as numbers, and the slow readings carried between their reads.

use nvml_wrapper::enum_wrappers::device::PerformanceState;
use nvml_wrapper::enums::device::SampleValue;

use crate::model::Metrics;

/// The readings taken once per slow period, copied from `slow` into this tick's `m`.
pub fn carry_slow(m: &mut Metrics, slow: &Metrics) {
    m.power_w = slow.power_w;
    m.temp_c = slow.temp_c;
    m.sm_clock_mhz = slow.sm_clock_mhz;
    m.mem_clock_mhz = slow.mem_clock_mhz;
    m.fan_pct = slow.fan_pct;
    m.pstate = slow.pstate;
    m.pcie_gen = slow.pcie_gen;
    m.pcie_width = slow.pcie_width;
    m.throttle = slow.throttle;
    m.sm_active = slow.sm_active;
    m.sm_occupancy = slow.sm_occupancy;
    m.tensor_active = slow.tensor_active;
    m.dram_active = slow.dram_active;
    m.pcie_rx_bytes_per_s = slow.pcie_rx_bytes_per_s;
    m.pcie_tx_bytes_per_s = slow.pcie_tx_bytes_per_s;
}

/// A driver sample's value as a number.
pub fn sample_value(v: &SampleValue) -> f64 {
    match *v {
        SampleValue::F64(x) => x,
        SampleValue::U32(x) => f64::from(x),
        SampleValue::U64(x) => x as f64,
        SampleValue::I64(x) => x as f64,
    }
}

/// P-state number (0 = highest performance); `None` for Unknown.
pub fn pstate_number(p: PerformanceState) -> Option<u32> {
    use PerformanceState::*;
    Some(match p {
        Zero => 0,
        One => 1,
        Two => 2,
        Three => 3,
        Four => 4,
        Five => 5,
        Six => 6,
        Seven => 7,
        Eight => 8,
        Nine => 9,
        Ten => 10,
        Eleven => 11,
        Twelve => 12,
        Thirteen => 13,
        Fourteen => 14,
        Fifteen => 15,
        Unknown => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_values_and_pstates_convert() {
        assert_eq!(sample_value(&SampleValue::U32(36)), 36.0);
        assert_eq!(sample_value(&SampleValue::F64(1.5)), 1.5);
        assert_eq!(pstate_number(PerformanceState::Zero), Some(0));
        assert_eq!(pstate_number(PerformanceState::Eight), Some(8));
        assert_eq!(pstate_number(PerformanceState::Unknown), None);
    }
}
