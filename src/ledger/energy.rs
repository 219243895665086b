//! Energy between ticks: power integrated over each interval, then, where the GPU has an energy
//! counter, scaled so that the stretch between two counter reads adds up to the counter's
//! difference.
//!
//! NVML's total-energy counter is read every 5 s and carried between reads; amdgpu's hwmon
//! counter may change every tick. Power (a ~1 s average on NVIDIA) is known every tick. So each
//! interval's energy is first the power integral (pending), and at each new counter value every
//! pending amount is multiplied by `counter difference / pending total` (settled): the split
//! between intervals follows the power, the total follows the counter.

/// An amount of energy: settled (final) and pending (power integrated since the last counter
/// read, to be scaled at the next).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Joules {
    settled: f64,
    pending: f64,
}

impl Joules {
    /// Settled and pending together: the best figure now.
    pub fn total(&self) -> f64 {
        self.settled + self.pending
    }

    /// Only what no later counter read changes: grows monotonically.
    pub fn settled(&self) -> f64 {
        self.settled
    }

    pub(crate) fn add_pending(&mut self, joules: f64) {
        self.pending += joules;
    }

    pub(crate) fn pending(&self) -> f64 {
        self.pending
    }

    /// Settle the pending amount, multiplied by `scale`.
    pub(crate) fn settle(&mut self, scale: f64) {
        self.settled += self.pending * scale;
        self.pending = 0.0;
    }

    pub(crate) fn add_settled(&mut self, joules: f64) {
        self.settled += joules;
    }
}

/// What a new counter value does to the pending amounts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Settle {
    /// Multiply every pending amount by this and settle it.
    Scale(f64),
    /// No pending amount to spread the difference over (no power readings in the stretch):
    /// settle this many joules into the GPU's total only.
    Unspread(f64),
}

/// The energy counter as seen so far.
#[derive(Debug, Clone, Default)]
pub struct EnergyMeter {
    /// The newest counter value.
    last: Option<f64>,
    /// The stretch since `last` was not all booked (a gap): the next changed value starts a new
    /// stretch instead of closing this one.
    rebase: bool,
}

impl EnergyMeter {
    /// Energy over an interval of `dt` seconds from power readings at its two ends (trapezoid;
    /// one end held when the other is absent); `None` without either.
    pub fn integrate(from_w: Option<f64>, to_w: Option<f64>, dt: f64) -> Option<f64> {
        let watts = match (from_w, to_w) {
            (Some(a), Some(b)) => (a + b) / 2.0,
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => return None,
        };
        Some(watts.max(0.0) * dt)
    }

    /// Whether a counter value was ever read.
    pub fn seen(&self) -> bool {
        self.last.is_some()
    }

    /// The stretch since the last counter value was not all booked.
    pub fn gap(&mut self) {
        self.rebase = true;
    }

    /// Take the counter value of this tick (`None`: no counter, or no reading this tick) with
    /// `pending` joules integrated since the last value; what to settle, if anything.
    pub fn read(&mut self, counter: Option<f64>, pending: f64) -> Option<Settle> {
        let c = counter.filter(|c| c.is_finite())?;
        let last = self.last.replace(c);
        match last {
            Some(l) if c == l => None,
            // The counter's difference closes a stretch fully booked since its last value.
            Some(l) if c > l && !self.rebase => Some(if pending > 0.0 {
                Settle::Scale((c - l) / pending)
            } else {
                Settle::Unspread(c - l)
            }),
            // The first value, one after a gap, or a counter that went back (driver reloaded):
            // no difference to scale to; what is pending stays as integrated.
            _ => {
                self.rebase = false;
                Some(Settle::Scale(1.0))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_is_integrated_as_a_trapezoid_holding_a_missing_end() {
        assert_eq!(
            EnergyMeter::integrate(Some(100.0), Some(200.0), 2.0),
            Some(300.0)
        );
        assert_eq!(EnergyMeter::integrate(None, Some(50.0), 0.5), Some(25.0));
        assert_eq!(EnergyMeter::integrate(None, None, 1.0), None);
    }

    #[test]
    fn a_counter_difference_scales_what_power_integrated_since_the_last_value() {
        let mut m = EnergyMeter::default();
        assert_eq!(m.read(None, 10.0), None);
        // The first value only starts a stretch.
        assert_eq!(m.read(Some(1000.0), 10.0), Some(Settle::Scale(1.0)));
        // Carried between reads: nothing to settle.
        assert_eq!(m.read(Some(1000.0), 400.0), None);
        assert_eq!(m.read(Some(1500.0), 400.0), Some(Settle::Scale(1.25)));
        assert_eq!(m.read(Some(1600.0), 0.0), Some(Settle::Unspread(100.0)));
        // After a gap the next value starts a new stretch.
        m.gap();
        assert_eq!(m.read(Some(1600.0), 50.0), None);
        assert_eq!(m.read(Some(9000.0), 50.0), Some(Settle::Scale(1.0)));
        assert_eq!(m.read(Some(9100.0), 50.0), Some(Settle::Scale(2.0)));
        // A counter that goes back starts over.
        assert_eq!(m.read(Some(5.0), 50.0), Some(Settle::Scale(1.0)));
    }

    #[test]
    fn joules_settle_their_pending_amount_scaled() {
        let mut j = Joules::default();
        j.add_pending(100.0);
        assert_eq!(j.total(), 100.0);
        assert_eq!(j.settled(), 0.0);
        j.settle(0.9);
        assert_eq!((j.settled(), j.total()), (90.0, 90.0));
    }
}
