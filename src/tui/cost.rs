//! The ledger's figures in the dashboard's short words: lost GPU time (`4.2 GPU-min`), energy
//! (`56 Wh`, `1.24 kWh`), money (`$0.18`, `12.40 CHF`), and what the finding shown on a GPU has
//! cost since it began, for its diagnosis line.

use crate::ledger::{GpuLedger, Prices};
use crate::model::FindingKind;

/// Joules in a watt-hour.
const JOULES_PER_WH: f64 = 3600.0;

/// GPU-seconds in the unit that reads best: `42 GPU-s`, `4.2 GPU-min`, `3.1 GPU-h`.
pub fn gpu_time(s: f64) -> String {
    if s < 60.0 {
        format!("{s:.0} GPU-s")
    } else if s < 7200.0 {
        format!("{:.1} GPU-min", s / 60.0)
    } else {
        format!("{:.1} GPU-h", s / 3600.0)
    }
}

/// Joules as watt-hours below a kilowatt-hour (`5.6 Wh`, `56 Wh`), else kilowatt-hours
/// (`1.24 kWh`).
pub fn energy(j: f64) -> String {
    let wh = j / JOULES_PER_WH;
    if wh >= 1000.0 {
        format!("{:.2} kWh", wh / 1000.0)
    } else if wh >= 10.0 {
        format!("{wh:.0} Wh")
    } else {
        format!("{wh:.1} Wh")
    }
}

/// An amount in the configured currency, short: a sign for the currencies that have one
/// (`$0.18`, `€2.40`, `£1.05`), else the code after the number (`0.18 CHF`, or the bare
/// number). Amounts under a cent keep a third decimal, so a small cost does not read as none.
pub fn money(prices: &Prices, amount: f64) -> String {
    let digits = if amount > 0.0 && amount < 0.01 { 3 } else { 2 };
    let sign = match prices.currency.as_deref() {
        Some("USD") => Some("$"),
        Some("EUR") => Some("€"),
        Some("GBP") => Some("£"),
        _ => None,
    };
    match (sign, prices.currency.as_deref()) {
        (Some(s), _) => format!("{s}{amount:.digits$}"),
        (None, Some(code)) => format!("{amount:.digits$} {code}"),
        (None, None) => format!("{amount:.digits$}"),
    }
}

/// What a GPU's current finding has cost since it began: the lost GPU time always, the money
/// when a price is configured, the energy drawn in the lost time where the GPU reads power.
#[derive(Debug, Clone, PartialEq)]
pub struct CostSoFar {
    pub lost: String,
    pub energy: Option<String>,
    pub money: Option<String>,
}

impl CostSoFar {
    /// The cost of the verdict the ledger books now, if that is `kind` and it has lost time.
    pub fn of(ledger: &GpuLedger, kind: FindingKind, prices: &Prices) -> Option<CostSoFar> {
        let c = ledger.current.filter(|c| c.verdict == kind)?;
        if c.lost_gpu_seconds <= 0.0 {
            return None;
        }
        let lost_share = if c.seconds > 0.0 {
            (c.lost_gpu_seconds / c.seconds).min(1.0)
        } else {
            1.0
        };
        // The verdict's energy is known once the GPU has given a power or energy reading.
        let joules = ledger.energy.map(|_| c.energy.total() * lost_share);
        Some(CostSoFar {
            lost: gpu_time(c.lost_gpu_seconds),
            energy: joules.filter(|j| *j > 0.0).map(energy),
            money: prices
                .any()
                .then(|| money(prices, prices.cost_of(c.lost_gpu_seconds, joules))),
        })
    }

    /// The text with the parts that fit in `width` columns, dropping the energy first, then
    /// the money (the lost time stays): `4.2 GPU-min, 56 Wh, $0.18`.
    pub fn text(&self, width: usize) -> String {
        let with = |energy: bool, money: bool| {
            let mut s = self.lost.clone();
            for part in [
                self.energy.as_ref().filter(|_| energy),
                self.money.as_ref().filter(|_| money),
            ]
            .into_iter()
            .flatten()
            {
                s.push_str(", ");
                s.push_str(part);
            }
            s
        };
        [with(true, true), with(false, true)]
            .into_iter()
            .find(|s| s.chars().count() <= width)
            .unwrap_or_else(|| with(false, false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn priced(currency: Option<&str>) -> Prices {
        Prices {
            price_per_gpu_hour: Some(2.5),
            price_per_kwh: None,
            currency: currency.map(str::to_string),
        }
    }

    #[test]
    fn figures_read_in_the_unit_that_fits() {
        assert_eq!(gpu_time(42.4), "42 GPU-s");
        assert_eq!(gpu_time(252.0), "4.2 GPU-min");
        assert_eq!(gpu_time(3.0 * 3600.0), "3.0 GPU-h");
        assert_eq!(energy(20_000.0), "5.6 Wh");
        assert_eq!(energy(201_600.0), "56 Wh");
        assert_eq!(energy(4_464_000.0), "1.24 kWh");
        assert_eq!(money(&priced(Some("USD")), 0.18), "$0.18");
        assert_eq!(money(&priced(Some("EUR")), 2.4), "€2.40");
        assert_eq!(money(&priced(Some("CHF")), 0.18), "0.18 CHF");
        assert_eq!(money(&priced(None), 0.004), "0.004");
        assert_eq!(money(&priced(None), 0.0), "0.00");
    }

    #[test]
    fn the_parts_that_do_not_fit_go_energy_first() {
        let c = CostSoFar {
            lost: "4.2 GPU-min".into(),
            energy: Some("56 Wh".into()),
            money: Some("$0.18".into()),
        };
        assert_eq!(c.text(80), "4.2 GPU-min, 56 Wh, $0.18");
        assert_eq!(c.text(20), "4.2 GPU-min, $0.18");
        assert_eq!(c.text(12), "4.2 GPU-min");
        assert_eq!(c.text(3), "4.2 GPU-min");
    }
}
