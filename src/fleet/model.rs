//! The fleet as gpulse sees it through Prometheus: hosts, each with its GPUs, worst first.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::{FindingKind, Severity};

/// Which exporter a GPU's series come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// `gpulse serve`: the verdict and findings come from the exporter's own detector.
    Gpulse,
    /// A plain dcgm-exporter: the verdict comes from gpulse's detector run on the range-queried
    /// utilization.
    Dcgm,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Gpulse => "gpulse",
            Source::Dcgm => "dcgm",
        }
    }
}

/// A finding on one GPU of the fleet.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetFinding {
    pub kind: FindingKind,
    pub severity: Severity,
    /// One line of what was seen.
    pub summary: String,
    /// What to do about it (empty when the exporter does not publish it).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub advice: String,
}

/// Evenly spaced values of one metric, oldest first; `None` where Prometheus has no sample.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Trace {
    /// Time of the first value.
    pub start: f64,
    /// Seconds between values.
    pub step: f64,
    pub values: Vec<Option<f64>>,
}

impl Trace {
    /// An empty trace on the grid `start, start + step, ...` with `len` slots.
    pub fn on_grid(start: f64, step: f64, len: usize) -> Trace {
        Trace {
            start,
            step,
            values: vec![None; len],
        }
    }

    /// Put the points of a range query on the grid (points off the grid go to the nearest slot).
    pub fn fill(&mut self, points: &[(f64, f64)]) {
        if self.step <= 0.0 {
            return;
        }
        for &(t, v) in points {
            if !v.is_finite() {
                continue;
            }
            let slot = ((t - self.start) / self.step).round();
            if slot >= 0.0 && (slot as usize) < self.values.len() {
                self.values[slot as usize] = Some(v);
            }
        }
    }

    /// [`Trace::fill`] with every value multiplied by `scale` (e.g. MiB to bytes).
    pub fn fill_scaled(&mut self, points: &[(f64, f64)], scale: f64) {
        if self.step <= 0.0 {
            return;
        }
        for &(t, v) in points {
            let slot = ((t - self.start) / self.step).round();
            if v.is_finite() && slot >= 0.0 && (slot as usize) < self.values.len() {
                self.values[slot as usize] = Some(v * scale);
            }
        }
    }

    /// The newest value present.
    pub fn last(&self) -> Option<f64> {
        self.values.iter().rev().find_map(|v| *v)
    }

    /// Time of the newest value present.
    pub fn last_time(&self) -> Option<f64> {
        let i = self.values.iter().rposition(|v| v.is_some())?;
        Some(self.start + i as f64 * self.step)
    }

    pub fn max(&self) -> Option<f64> {
        self.values.iter().flatten().copied().reduce(f64::max)
    }
}

/// One GPU's ledger over the range.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetLedger {
    /// The range, seconds.
    pub range_s: f64,
    /// Seconds the exporter booked in the range (under any verdict); absent without series.
    pub gpu_seconds: Option<f64>,
    pub lost_gpu_seconds: f64,
    /// The kind of bottleneck that lost the most, if any lost time.
    pub top_lost_kind: Option<FindingKind>,
    pub lost_by_kind: BTreeMap<&'static str, f64>,
    /// Energy drawn in the range (absent where the exporter has no energy series).
    pub energy_joules: Option<f64>,
}

/// One host's total over the range.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostLost {
    pub name: String,
    pub lost_gpu_seconds: f64,
    pub top_lost_kind: Option<FindingKind>,
}

/// One GPU as the fleet view shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetGpu {
    /// Prometheus's `instance` label (the exporter's address).
    pub instance: String,
    /// The `Hostname` label, else the instance.
    pub hostname: String,
    pub job: Option<String>,
    /// The `gpu` label (the GPU's index on its host).
    pub gpu: String,
    pub uuid: Option<String>,
    pub model: Option<String>,
    pub source: Source,
    /// The current verdict; `None` when the exporter publishes none and the detector had no data.
    pub verdict: Option<FindingKind>,
    pub findings: Vec<FleetFinding>,
    pub utilization_gpu: Option<f64>,
    pub memory_used_bytes: Option<u64>,
    pub memory_total_bytes: Option<u64>,
    pub power_watts: Option<f64>,
    /// Share of time lost to the worst finding (gpulse exporters only).
    pub lost_fraction: Option<f64>,
    pub starvation_period_seconds: Option<f64>,
    /// Seconds between scrapes, measured from the raw samples.
    pub scrape_interval_seconds: Option<f64>,
    /// Seconds since the newest sample, at the time of the refresh.
    pub last_sample_age_seconds: Option<f64>,
    /// Caveats in words (e.g. a scrape interval too coarse to resolve short periods), and what
    /// is wrong with the GPU's health and what to do.
    pub notes: Vec<String>,
    /// The health its exporter publishes (the last XID, uncorrectable errors, row remaps);
    /// absent where it publishes none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health: Option<super::health::FleetHealth>,
    /// What the GPU lost over `--range` (gpulse exporters only; only with a range).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ledger: Option<FleetLedger>,
    /// The pods, containers and Slurm jobs that lost time on the GPU over `--range`, most
    /// first: `(label, lost GPU-seconds)`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub jobs_lost: Vec<(String, f64)>,
    #[serde(skip)]
    pub util: Trace,
    #[serde(skip)]
    pub memory_used: Trace,
    #[serde(skip)]
    pub power: Trace,
    /// Raw utilization samples of the last minutes (the detector's input), for the detail view.
    #[serde(skip)]
    pub raw_util: Vec<(f64, f64)>,
}

impl FleetGpu {
    /// Whether the newest sample is too old to be current (the target stopped answering).
    pub fn is_stale(&self) -> bool {
        match (self.last_sample_age_seconds, self.scrape_interval_seconds) {
            (Some(age), Some(iv)) => age > (3.0 * iv).max(15.0),
            (Some(age), None) => age > 60.0,
            (None, _) => true,
        }
    }

    /// Index as a number for ordering (`"10"` after `"9"`).
    pub fn gpu_number(&self) -> u64 {
        self.gpu.parse().unwrap_or(u64::MAX)
    }

    /// The highest severity among the findings.
    pub fn worst_severity(&self) -> Option<Severity> {
        self.findings.iter().map(|f| f.severity).max()
    }

    /// How sick the GPU is: 2 for a fault (a `gpu_fault` finding of high severity, or an XID,
    /// uncorrectable errors or a failed remap its exporter publishes), 1 for a warning, 0 when
    /// nothing is wrong with it.
    pub fn sickness(&self) -> u8 {
        let finding = self
            .findings
            .iter()
            .filter(|f| f.kind == FindingKind::GpuFault)
            .map(|f| if f.severity == Severity::High { 2 } else { 1 })
            .max()
            .unwrap_or(0);
        finding.max(self.health.map_or(0, |h| h.level()))
    }
}

/// One host and its GPUs, worst first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetHost {
    pub name: String,
    pub gpus: Vec<FleetGpu>,
}

/// Everything one refresh learned.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Fleet {
    /// Unix time the queries were evaluated at.
    pub time: f64,
    pub hosts: Vec<FleetHost>,
    /// Scrape targets Prometheus reports down (`up == 0`), as `instance (job)`.
    pub down_targets: Vec<String>,
    /// The `--range` of the ledger figures, seconds (none without one).
    pub range_s: Option<f64>,
    /// Each host's time lost over the range, most first (empty without a range).
    pub hosts_by_lost: Vec<HostLost>,
    /// Pods, containers and Slurm jobs by the time they lost over the range, most first (empty
    /// without a range, or where no exporter labels jobs).
    pub jobs_by_lost: Vec<super::jobs::JobLost>,
}

impl Fleet {
    pub fn gpu_count(&self) -> usize {
        self.hosts.iter().map(|h| h.gpus.len()).sum()
    }

    /// Every GPU in display order.
    pub fn gpus(&self) -> impl Iterator<Item = &FleetGpu> {
        self.hosts.iter().flat_map(|h| h.gpus.iter())
    }
}
