//! A GPU's ledger as a report: the JSON shape `gpulse analyze --json` writes, prices and costs,
//! and the one or two lines of text a report ends with.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{GpuLedger, VerdictCost};

/// Joules in a kilowatt-hour.
const JOULES_PER_KWH: f64 = 3.6e6;

/// What GPU time and energy cost (the config file's `[ledger]` table). Either price may be
/// absent; with neither, no cost is shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Prices {
    /// Price of one GPU for one hour.
    pub price_per_gpu_hour: Option<f64>,
    /// Price of one kilowatt-hour.
    pub price_per_kwh: Option<f64>,
    /// The currency both prices are in, as it is to be shown (e.g. "USD", "EUR").
    pub currency: Option<String>,
}

impl Prices {
    pub fn any(&self) -> bool {
        self.price_per_gpu_hour.is_some() || self.price_per_kwh.is_some()
    }

    /// The cost of `gpu_seconds` of GPU time that drew `joules` (unknown energy costs nothing
    /// here: the energy part needs a power or energy reading).
    pub fn cost_of(&self, gpu_seconds: f64, joules: Option<f64>) -> f64 {
        let time = self.price_per_gpu_hour.unwrap_or(0.0) * gpu_seconds / 3600.0;
        let energy = self.price_per_kwh.unwrap_or(0.0) * joules.unwrap_or(0.0) / JOULES_PER_KWH;
        time + energy
    }

    /// An amount with its currency, for text (`12.40 USD`, or the bare number).
    pub fn money(&self, amount: f64) -> String {
        match &self.currency {
            Some(c) => format!("{amount:.2} {c}"),
            None => format!("{amount:.2}"),
        }
    }
}

/// What a GPU's time cost at the configured prices.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cost {
    pub currency: Option<String>,
    /// All the booked time and energy.
    pub total: f64,
    /// The lost GPU time and the energy drawn in it.
    pub lost: f64,
}

/// One process's line of a report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcessReport {
    pub pid: u32,
    pub user: Option<String>,
    pub command: Option<String>,
    pub gpu_seconds: f64,
    pub lost_gpu_seconds: f64,
    pub energy_joules: Option<f64>,
}

/// One user's line of a report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UserReport {
    pub user: Option<String>,
    pub gpu_seconds: f64,
    pub lost_gpu_seconds: f64,
    pub energy_joules: Option<f64>,
}

/// One job's line of a report: a pod, a container or a Slurm job.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobReport {
    /// `pod`, `container` or `slurm`.
    pub kind: &'static str,
    /// The pod's UID, the container's ID, the Slurm job's ID.
    pub id: String,
    pub name: Option<String>,
    /// A pod's namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The job in words (`pod train-7f9c/ml-team`).
    pub label: String,
    pub gpu_seconds: f64,
    pub lost_gpu_seconds: f64,
    pub energy_joules: Option<f64>,
    /// Only when a price is configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
}

/// One GPU's ledger, as `gpulse analyze --json` writes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LedgerReport {
    /// Seconds booked.
    pub span_s: f64,
    pub seconds_by_verdict: BTreeMap<&'static str, f64>,
    pub lost_gpu_seconds: f64,
    pub lost_by_kind: BTreeMap<&'static str, f64>,
    /// `null` when the GPU gave neither power nor energy readings.
    pub energy_joules: Option<f64>,
    pub lost_energy_joules: Option<f64>,
    /// Most lost time first.
    pub processes: Vec<ProcessReport>,
    pub users: Vec<UserReport>,
    /// Pods, containers and Slurm jobs, most lost time first (empty where no process had one).
    pub jobs: Vec<JobReport>,
    /// Only when a price is configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
    /// Seconds each clock event reason held the clocks (the reasons measured).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub throttled_seconds: BTreeMap<&'static str, f64>,
    /// GPU-seconds each serious reason cost (time held × clock given up × busy share).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub throttle_lost_gpu_seconds: BTreeMap<&'static str, f64>,
    /// Jobs an XID ended: `{xid, time, job_since, lost_gpu_seconds}`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<FaultReport>,
}

/// A job an XID ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FaultReport {
    pub xid: u64,
    pub time: f64,
    pub job_since: f64,
    pub lost_gpu_seconds: f64,
}

impl LedgerReport {
    /// The report of ledger `l`, without a cost (see [`Self::price`]).
    pub fn new(l: &GpuLedger) -> Self {
        let energy = |j: super::Joules| l.energy.map(|_| j.total());
        LedgerReport {
            span_s: l.span_s,
            seconds_by_verdict: l
                .seconds_by_verdict
                .iter()
                .map(|(k, s)| (k.as_str(), s))
                .collect(),
            lost_gpu_seconds: l.lost_gpu_seconds,
            lost_by_kind: l
                .lost_by_kind
                .iter()
                .map(|(k, s)| (k.as_str(), s))
                .collect(),
            energy_joules: l.energy_joules(),
            lost_energy_joules: energy(l.lost_energy),
            processes: l
                .processes_worst_first()
                .into_iter()
                .map(|p| ProcessReport {
                    pid: p.pid,
                    user: p.user.as_deref().map(str::to_string),
                    command: p.command.as_deref().map(str::to_string),
                    gpu_seconds: p.gpu_seconds,
                    lost_gpu_seconds: p.lost_gpu_seconds,
                    energy_joules: energy(p.energy),
                })
                .collect(),
            users: l
                .users_worst_first()
                .into_iter()
                .map(|u| UserReport {
                    user: u.user.as_deref().map(str::to_string),
                    gpu_seconds: u.gpu_seconds,
                    lost_gpu_seconds: u.lost_gpu_seconds,
                    energy_joules: energy(u.energy),
                })
                .collect(),
            jobs: l
                .jobs_worst_first()
                .into_iter()
                .map(|j| JobReport {
                    kind: j.job.kind.as_str(),
                    id: j.job.id.clone(),
                    name: j.job.name.clone(),
                    namespace: j.job.namespace.clone(),
                    label: j.job.label(),
                    gpu_seconds: j.gpu_seconds,
                    lost_gpu_seconds: j.lost_gpu_seconds,
                    energy_joules: energy(j.energy),
                    cost: None,
                })
                .collect(),
            cost: None,
            throttled_seconds: crate::model::ThrottleReason::ALL
                .into_iter()
                .filter_map(|r| l.health.throttled(r).map(|s| (r.as_str(), s)))
                .collect(),
            throttle_lost_gpu_seconds: crate::model::ThrottleReason::ALL
                .into_iter()
                .filter(|r| r.serious() && l.health.throttled(*r).is_some())
                .map(|r| (r.as_str(), l.health.throttle_lost(r)))
                .collect(),
            faults: l
                .health
                .faults
                .iter()
                .map(|f| FaultReport {
                    xid: f.xid,
                    time: f.t,
                    job_since: f.job_since,
                    lost_gpu_seconds: f.lost_s,
                })
                .collect(),
        }
    }

    /// Set the cost at `prices` (none when no price is configured).
    pub fn price(&mut self, prices: &Prices) {
        self.cost = prices.any().then(|| Cost {
            currency: prices.currency.clone(),
            total: prices.cost_of(self.span_s, self.energy_joules),
            lost: prices.cost_of(self.lost_gpu_seconds, self.lost_energy_joules),
        });
        // A job's lost energy is its energy at its own lost share of its time.
        for j in &mut self.jobs {
            let lost_share = if j.gpu_seconds > 0.0 {
                (j.lost_gpu_seconds / j.gpu_seconds).min(1.0)
            } else {
                0.0
            };
            j.cost = prices.any().then(|| Cost {
                currency: prices.currency.clone(),
                total: prices.cost_of(j.gpu_seconds, j.energy_joules),
                lost: prices.cost_of(j.lost_gpu_seconds, j.energy_joules.map(|e| e * lost_share)),
            });
        }
    }

    /// One or two lines for people: the time, what it was lost to, the energy, the cost, and
    /// the process that lost the most.
    pub fn text(&self) -> Vec<String> {
        let share = if self.span_s > 0.0 {
            format!(" ({:.0}%)", 100.0 * self.lost_gpu_seconds / self.span_s)
        } else {
            String::new()
        };
        let mut kinds: Vec<(&str, f64)> = self.lost_by_kind.iter().map(|(k, s)| (*k, *s)).collect();
        kinds.sort_by(|a, b| b.1.total_cmp(&a.1));
        let to: Vec<String> = kinds
            .iter()
            .map(|(k, s)| format!("{} {}", k.replace('_', " "), duration(*s)))
            .collect();
        let mut first = format!(
            "{} booked, {} lost{share}",
            duration(self.span_s),
            duration(self.lost_gpu_seconds)
        );
        if !to.is_empty() {
            first.push_str(&format!(": {}", to.join(", ")));
        }
        if let Some(e) = self.energy_joules {
            first.push_str(&format!("; {}", energy(e)));
            if let Some(l) = self.lost_energy_joules.filter(|l| *l > 0.0) {
                first.push_str(&format!(", {} of it lost", energy(l)));
            }
        }
        if let Some(c) = &self.cost {
            let p = Prices {
                currency: c.currency.clone(),
                ..Prices::default()
            };
            first.push_str(&format!(
                "; cost {}, {} lost",
                p.money(c.total),
                p.money(c.lost)
            ));
        }
        let mut lines = vec![first];
        if let Some(p) = self.processes.first().filter(|p| p.gpu_seconds > 0.0) {
            let who = p.user.as_deref().unwrap_or("unknown user");
            let what = p.command.as_deref().unwrap_or("");
            lines.push(format!(
                "most lost: pid {} ({who}) {what}: {} lost of {}",
                p.pid,
                duration(p.lost_gpu_seconds),
                duration(p.gpu_seconds)
            ));
        }
        if let Some(j) = self.jobs.first().filter(|j| j.lost_gpu_seconds > 0.0) {
            lines.push(format!(
                "most lost job: {}: {} lost of {}",
                j.label,
                duration(j.lost_gpu_seconds),
                duration(j.gpu_seconds)
            ));
        }
        lines
    }
}

/// What the shown verdict has cost so far, for a diagnosis line: `2.1 min lost · 12.4 kJ` and, at
/// `prices`, `· 0.42 USD`; `None` while it has lost nothing.
pub fn cost_so_far(c: &VerdictCost, prices: &Prices) -> Option<String> {
    if c.lost_gpu_seconds <= 0.0 {
        return None;
    }
    let mut text = format!("{} lost", duration(c.lost_gpu_seconds));
    let joules = c.energy.total();
    if joules > 0.0 {
        text.push_str(&format!(" · {}", energy(joules)));
    }
    if prices.any() {
        let lost_share = if c.seconds > 0.0 {
            (c.lost_gpu_seconds / c.seconds).min(1.0)
        } else {
            1.0
        };
        let cost = prices.cost_of(c.lost_gpu_seconds, Some(joules * lost_share));
        text.push_str(&format!(" · {}", prices.money(cost)));
    }
    Some(text)
}

/// Seconds in the unit that reads best (`42.0 s`, `12.5 min`, `3.21 h`).
pub fn duration(s: f64) -> String {
    if s < 120.0 {
        format!("{s:.1} s")
    } else if s < 7200.0 {
        format!("{:.1} min", s / 60.0)
    } else {
        format!("{:.2} h", s / 3600.0)
    }
}

/// Joules in the unit that reads best (`850 J`, `12.4 kJ`, `3.20 kWh`).
pub fn energy(j: f64) -> String {
    if j < 1e4 {
        format!("{j:.0} J")
    } else if j < 0.1 * JOULES_PER_KWH {
        format!("{:.1} kJ", j / 1e3)
    } else {
        format!("{:.2} kWh", j / JOULES_PER_KWH)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_adds_gpu_time_and_energy_at_their_prices() {
        let p = Prices {
            price_per_gpu_hour: Some(3.0),
            price_per_kwh: Some(0.2),
            currency: Some("EUR".into()),
        };
        // Half an hour, 1 kWh.
        assert!((p.cost_of(1800.0, Some(3.6e6)) - 1.7).abs() < 1e-12);
        assert!((p.cost_of(1800.0, None) - 1.5).abs() < 1e-12);
        assert_eq!(p.money(1.7), "1.70 EUR");
        assert!(!Prices::default().any());
    }

    #[test]
    fn a_verdict_that_lost_time_says_what_it_cost_so_far() {
        let mut c = VerdictCost {
            verdict: crate::model::FindingKind::InputStarvation,
            since: 0.0,
            seconds: 600.0,
            lost_gpu_seconds: 360.0,
            energy: super::super::Joules::default(),
        };
        c.energy.add_pending(3.6e6);
        let prices = Prices {
            price_per_gpu_hour: Some(10.0),
            price_per_kwh: Some(1.0),
            currency: Some("USD".into()),
        };
        // 0.1 GPU-hour at 10, and 0.6 of the 1 kWh drawn at 1.
        assert_eq!(
            cost_so_far(&c, &prices).as_deref(),
            Some("6.0 min lost · 1.00 kWh · 1.60 USD")
        );
        assert_eq!(
            cost_so_far(&c, &Prices::default()).as_deref(),
            Some("6.0 min lost · 1.00 kWh")
        );
        c.lost_gpu_seconds = 0.0;
        assert_eq!(cost_so_far(&c, &prices), None);
    }

    #[test]
    fn units_read_best_at_each_size() {
        assert_eq!(duration(42.04), "42.0 s");
        assert_eq!(duration(750.0), "12.5 min");
        assert_eq!(duration(3.0 * 3600.0), "3.00 h");
        assert_eq!(energy(850.0), "850 J");
        assert_eq!(energy(12_400.0), "12.4 kJ");
        assert_eq!(energy(2.0 * JOULES_PER_KWH), "2.00 kWh");
    }
}
