//! The kinds of per-tick NVML call, and the set a GPU turned out not to support.

/// The per-tick calls, each remembered once the GPU says it does not have it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Call {
    Samples,
    Utilization,
    Power,
    Temperature,
    SmClock,
    MemClock,
    Fan,
    PState,
    PcieGen,
    PcieWidth,
    Throttle,
    ComputeProcs,
    GraphicsProcs,
    ProcessUtil,
    Gpm,
    /// Memory info (every tick; it also tells whether the GPU answers).
    Memory,
    /// GPM's metrics from two samples.
    GpmMetrics,
    /// The total energy counter.
    Energy,
}

impl Call {
    /// Every call, in order.
    pub const ALL: [Call; 18] = [
        Call::Samples,
        Call::Utilization,
        Call::Power,
        Call::Temperature,
        Call::SmClock,
        Call::MemClock,
        Call::Fan,
        Call::PState,
        Call::PcieGen,
        Call::PcieWidth,
        Call::Throttle,
        Call::ComputeProcs,
        Call::GraphicsProcs,
        Call::ProcessUtil,
        Call::Gpm,
        Call::Memory,
        Call::GpmMetrics,
        Call::Energy,
    ];
}

// Every call indexes the cost table by its number: the list holds each one, in order.
const _: () = assert!(Call::Energy as usize + 1 == Call::ALL.len());

/// The set of calls not to make again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Unsupported(u32);

impl Unsupported {
    pub fn has(self, c: Call) -> bool {
        self.0 & (1 << c as u32) != 0
    }
    pub fn add(&mut self, c: Call) {
        self.0 |= 1 << c as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_calls_are_remembered_one_by_one() {
        let mut u = Unsupported::default();
        u.add(Call::Fan);
        u.add(Call::Gpm);
        assert!(u.has(Call::Fan) && u.has(Call::Gpm));
        assert!(!u.has(Call::Samples) && !u.has(Call::Power));
    }
}
