//! `gpulse fleet --range 24h`: what each GPU lost over the range, from the gpulse exporters' ledger
//! counters, and the fleet ranked by it.
//!
//! Prometheus's `increase()` over the counters gives the ledger of any range, across exporter
//! restarts (a counter that starts again from zero is a reset, not a loss). GPUs that only a
//! dcgm-exporter reports have no ledger and go last.

use std::collections::{BTreeMap, HashMap};

use super::api::{Answer, ApiError, PromClient};
use super::model::{Fleet, FleetGpu, FleetHost, FleetLedger, HostLost};
use super::rank;
use crate::model::FindingKind;

/// The three counters' increases over `range_s`, asked side by side at `now`.
pub struct RangeAnswers {
    pub range_s: f64,
    /// `increase(gpulse_lost_gpu_seconds_total[range])`.
    pub lost: Result<Answer, ApiError>,
    /// `increase(gpulse_gpu_seconds_total[range])`.
    pub booked: Result<Answer, ApiError>,
    /// `increase(gpulse_energy_joules_total[range])`.
    pub energy: Result<Answer, ApiError>,
}

impl RangeAnswers {
    /// Failed queries in words.
    pub fn problems(&self) -> Vec<String> {
        [
            ("lost time", &self.lost),
            ("booked time", &self.booked),
            ("energy", &self.energy),
        ]
        .into_iter()
        .filter_map(|(what, r)| {
            r.as_ref()
                .err()
                .map(|e| format!("{what} over the range query failed: {e}"))
        })
        .collect()
    }
}

/// The PromQL of one counter's increase over `range_s` (whole seconds).
pub fn increase_promql(counter: &str, range_s: f64) -> String {
    format!("increase({counter}[{}s])", range_s.round().max(1.0))
}

/// Ask Prometheus for the ledger counters' increases over `range_s` ending at `now`.
pub fn fetch(client: &PromClient, range_s: f64, now: f64) -> RangeAnswers {
    let ask = |counter: &str| client.instant(&increase_promql(counter, range_s), now);
    std::thread::scope(|scope| {
        let lost = scope.spawn(|| ask("gpulse_lost_gpu_seconds_total"));
        let booked = scope.spawn(|| ask("gpulse_gpu_seconds_total"));
        let energy = ask("gpulse_energy_joules_total");
        let joined = |h: std::thread::ScopedJoinHandle<'_, Result<Answer, ApiError>>| {
            h.join().unwrap_or_else(|_| {
                Err(ApiError::BadJson {
                    reason: "the query thread panicked".into(),
                    snippet: String::new(),
                })
            })
        };
        RangeAnswers {
            range_s,
            lost: joined(lost),
            booked: joined(booked),
            energy,
        }
    })
}

/// Sum each answer's values by `(instance, gpu)` and, where asked, by `label`: those from 0 to
/// `most` (what one series can have gained over the range; a larger one is not a reading).
fn sums<'a>(
    answer: &'a Result<Answer, ApiError>,
    label: Option<&str>,
    most: f64,
) -> HashMap<(&'a str, &'a str), BTreeMap<&'a str, f64>> {
    let mut out: HashMap<(&str, &str), BTreeMap<&str, f64>> = HashMap::new();
    for s in answer.iter().flat_map(|a| a.series.iter()) {
        // `increase` can read a hair below 0 from float error: that is 0.
        let value = s.last_value().filter(|v| (-1.0..=most).contains(v));
        let (Some(gpu), Some(v)) = (s.label("gpu"), value) else {
            continue;
        };
        let instance = s.label("instance").unwrap_or_default();
        let key = label.and_then(|l| s.label(l)).unwrap_or_default();
        *out.entry((instance, gpu))
            .or_default()
            .entry(key)
            .or_default() += v.max(0.0);
    }
    out
}

/// Put each GPU's ledger over the range into `fleet`, rank it by lost GPU-seconds, and list the
/// hosts' totals, most lost first.
pub fn apply(fleet: &mut Fleet, answers: &RangeAnswers) {
    // A GPU books at most the range's seconds (a little more where `increase` extrapolates),
    // and draws at most 100 kW.
    let seconds = answers.range_s * 1.5;
    let lost = sums(&answers.lost, Some("kind"), seconds);
    let booked = sums(&answers.booked, None, seconds);
    let energy = sums(&answers.energy, None, answers.range_s * 100_000.0);
    let total = |m: &BTreeMap<&str, f64>| m.values().sum::<f64>();
    for g in fleet.hosts.iter_mut().flat_map(|h| h.gpus.iter_mut()) {
        let key = (g.instance.as_str(), g.gpu.as_str());
        let by_kind = lost.get(&key);
        let gpu_seconds = booked.get(&key).map(total);
        if by_kind.is_none() && gpu_seconds.is_none() {
            continue;
        }
        let lost_by_kind: BTreeMap<&'static str, f64> = by_kind
            .into_iter()
            .flatten()
            .filter_map(|(k, s)| FindingKind::parse(k).map(|k| (k.as_str(), *s)))
            .collect();
        let top = lost_by_kind
            .iter()
            .filter(|(_, s)| **s > 0.0)
            .max_by(|a, b| a.1.total_cmp(b.1))
            .and_then(|(k, _)| FindingKind::parse(k));
        g.ledger = Some(FleetLedger {
            range_s: answers.range_s,
            gpu_seconds,
            lost_gpu_seconds: lost_by_kind.values().sum(),
            top_lost_kind: top,
            lost_by_kind,
            energy_joules: energy.get(&key).map(total),
        });
    }
    let hosts = std::mem::take(&mut fleet.hosts);
    fleet.hosts = rank_by_lost(hosts);
    fleet.range_s = Some(answers.range_s);
    fleet.hosts_by_lost = fleet
        .hosts
        .iter()
        .map(|h| {
            let mut kinds: BTreeMap<&str, f64> = BTreeMap::new();
            for l in h.gpus.iter().filter_map(|g| g.ledger.as_ref()) {
                for (k, s) in &l.lost_by_kind {
                    *kinds.entry(k).or_default() += s;
                }
            }
            HostLost {
                name: h.name.clone(),
                lost_gpu_seconds: lost_of_host(h),
                top_lost_kind: kinds
                    .iter()
                    .filter(|(_, s)| **s > 0.0)
                    .max_by(|a, b| a.1.total_cmp(b.1))
                    .and_then(|(k, _)| FindingKind::parse(k)),
            }
        })
        .collect();
}

fn lost_of(g: &FleetGpu) -> Option<f64> {
    g.ledger.as_ref().map(|l| l.lost_gpu_seconds)
}

fn lost_of_host(h: &FleetHost) -> f64 {
    h.gpus.iter().filter_map(lost_of).sum()
}

/// Most lost first: GPUs within a host, then hosts by their total; GPUs without a ledger last,
/// in the worst-first order of the live view, as are ties.
pub fn rank_by_lost(mut hosts: Vec<FleetHost>) -> Vec<FleetHost> {
    let most_lost_first = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(x), Some(y)) => y.total_cmp(&x),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    };
    for h in &mut hosts {
        h.gpus.sort_by(|a, b| {
            most_lost_first(lost_of(a), lost_of(b)).then_with(|| rank::compare(a, b))
        });
    }
    let has_ledger = |h: &FleetHost| h.gpus.iter().any(|g| g.ledger.is_some());
    hosts.sort_by(|a, b| {
        let total = |h: &FleetHost| has_ledger(h).then(|| lost_of_host(h));
        most_lost_first(total(a), total(b))
            .then_with(|| match (a.gpus.first(), b.gpus.first()) {
                (Some(x), Some(y)) => rank::compare(x, y),
                _ => std::cmp::Ordering::Equal,
            })
            .then_with(|| a.name.cmp(&b.name))
    });
    hosts
}
