//! GPUs seen only through a plain dcgm-exporter: gpulse's own detector over the scraped utilization.
//!
//! The raw samples of `DCGM_FI_DEV_GPU_UTIL` (one per scrape) become a stream of
//! [`Sample`]s fed through a one-GPU [`Engine`], exactly as a local backend's would be; the engine's
//! detector then gives the verdict and findings. A scrape only sees one utilization value per
//! interval, so a pattern shorter than a few intervals cannot be resolved: the result says so.

use std::collections::HashMap;

use crate::detector::DetectorConfig;
use crate::engine::{Engine, EngineConfig};
use crate::model::{DeviceInfo, FindingKind, GpuReading, GpuStatus, Metrics, Sample, SystemInfo};

use super::model::FleetFinding;

/// The finest scrape interval a detector is run at (the live sampler's own is 0.25 s): samples
/// closer than this are judged as if this far apart, which bounds the missed scrapes a gap can
/// need filled.
pub const MIN_INTERVAL_S: f64 = 0.1;

/// The most raw samples' time an engine keeps: the raw window asked is the detector's window (at
/// most an hour) and a little more, so samples spanning longer are damaged ones; kept, they
/// would size the engine's history and the missed scrapes to fill from them.
pub const MAX_RETENTION_S: f64 = 7200.0;

/// Scrape intervals needed to see one period of a pattern (a dip and a burst, each sampled twice).
pub const SAMPLES_PER_PERIOD: f64 = 4.0;

/// The detector's answer for one GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct DcgmVerdict {
    pub verdict: Option<FindingKind>,
    pub findings: Vec<FleetFinding>,
    /// The resolution caveat, when the interval is coarser than the live sampler's.
    pub note: Option<String>,
}

/// The shortest period (seconds) a series scraped every `interval_s` can resolve.
pub fn shortest_period_s(interval_s: f64) -> f64 {
    SAMPLES_PER_PERIOD * interval_s
}

/// Words about what a scrape interval can and cannot resolve, when it is coarser than 1 s.
pub fn resolution_note(interval_s: f64) -> Option<String> {
    (interval_s > 1.0 + 1e-6).then(|| {
        format!(
            "scrape interval {}: dips or periods shorter than ~{} cannot be resolved \
             (gpulse's own sampler sees 200 ms windows; run `gpulse serve` on this host or scrape every 1 s)",
            seconds(interval_s),
            seconds(shortest_period_s(interval_s))
        )
    })
}

fn seconds(s: f64) -> String {
    if s >= 10.0 || (s - s.round()).abs() < 1e-6 {
        format!("{:.0} s", s)
    } else {
        format!("{:.1} s", s)
    }
}

/// The typical spacing of raw samples (the median gap), if there are at least two.
pub fn median_interval(points: &[(f64, f64)]) -> Option<f64> {
    let mut gaps: Vec<f64> = points
        .windows(2)
        .map(|w| w[1].0 - w[0].0)
        .filter(|g| *g > 0.0)
        .collect();
    if gaps.is_empty() {
        return None;
    }
    gaps.sort_by(f64::total_cmp);
    Some(gaps[gaps.len() / 2])
}

/// Run the detector over one GPU's raw utilization samples `(t, percent)`, oldest first.
///
/// `gpu` is the GPU's index label, `name` its model; `memory_total_bytes` is used only as a static
/// fact of the device.
pub fn detect(
    points: &[(f64, f64)],
    gpu: u32,
    name: &str,
    hostname: &str,
    memory_total_bytes: Option<u64>,
    detector: &DetectorConfig,
) -> DcgmVerdict {
    match DcgmTracker::new(points, gpu, name, hostname, memory_total_bytes, detector) {
        Some(mut t) => {
            t.feed(points);
            t.verdict()
        }
        None => too_few(),
    }
}

fn too_few() -> DcgmVerdict {
    DcgmVerdict {
        verdict: None,
        findings: Vec::new(),
        note: Some("fewer than two scrapes so far: no verdict yet".into()),
    }
}

/// One dcgm-only GPU's detector, kept between refreshes so each refresh feeds only the samples
/// scraped since the last one (the detector is incremental; replaying minutes of samples every
/// refresh would cost the whole window each time).
pub struct DcgmTracker {
    engine: Engine,
    gpu: u32,
    interval: f64,
    /// What the engine keeps: older missed scrapes need no filling.
    retention_s: f64,
    last_t: Option<f64>,
}

impl DcgmTracker {
    /// A detector for samples spaced like `points`; `None` with fewer than two samples.
    pub fn new(
        points: &[(f64, f64)],
        gpu: u32,
        name: &str,
        hostname: &str,
        memory_total_bytes: Option<u64>,
        detector: &DetectorConfig,
    ) -> Option<DcgmTracker> {
        let interval = median_interval(points)?.max(MIN_INTERVAL_S);
        let span =
            points.last().map(|p| p.0).unwrap_or(0.0) - points.first().map(|p| p.0).unwrap_or(0.0);
        let system = SystemInfo {
            hostname: hostname.to_string(),
            backend: "prometheus".into(),
            devices: vec![DeviceInfo {
                index: gpu,
                name: name.to_string(),
                memory_total_bytes,
                ..Default::default()
            }],
            ..Default::default()
        };
        let retention_s = (span + 2.0 * interval)
            .min(MAX_RETENTION_S)
            .max(detector.window_s);
        let engine = Engine::new(
            system,
            EngineConfig {
                interval_s: interval,
                retention_s,
                detector: detector.clone(),
            },
        );
        Some(DcgmTracker {
            engine,
            gpu,
            interval,
            retention_s,
            last_t: None,
        })
    }

    /// Whether `points` continue what was fed before at the same spacing (else start afresh).
    pub fn continues(&self, points: &[(f64, f64)]) -> bool {
        let (Some(last), Some(first)) = (self.last_t, points.first()) else {
            return false;
        };
        let same_spacing = median_interval(points)
            .is_some_and(|iv| (iv - self.interval).abs() <= 0.25 * self.interval);
        same_spacing && first.0 <= last + 1.5 * self.interval
    }

    /// Feed the samples newer than the last one fed, filling missed scrapes as absent readings.
    pub fn feed(&mut self, points: &[(f64, f64)]) {
        let (gpu, interval) = (self.gpu, self.interval);
        for &(t, v) in points {
            if self.last_t.is_some_and(|l| t <= l) {
                continue;
            }
            // A gap of more than one interval is a missed scrape: the GPU was not read then.
            // Only those the engine still keeps are filled, so a gap of any length costs at
            // most its retention over the interval.
            if let Some(p) = self.last_t {
                let mut missing = (p + interval).max(t - self.retention_s);
                while t - missing > 0.5 * interval {
                    self.engine.ingest(Sample {
                        t: missing,
                        gpus: vec![GpuReading::empty(gpu, GpuStatus::Stale { since: p })],
                        ..Default::default()
                    });
                    missing += interval;
                }
            }
            self.last_t = Some(t);
            let reading = if v.is_finite() {
                GpuReading {
                    index: gpu,
                    status: GpuStatus::Ok,
                    metrics: Metrics {
                        util_gpu: Some(v),
                        ..Default::default()
                    },
                    ..Default::default()
                }
            } else {
                GpuReading::empty(gpu, GpuStatus::Stale { since: t })
            };
            self.engine.ingest(Sample {
                t,
                gpus: vec![reading],
                ..Default::default()
            });
        }
    }

    /// The detector's verdict and findings now.
    pub fn verdict(&self) -> DcgmVerdict {
        let note = resolution_note(self.interval);
        let snap = self.engine.snapshot();
        let Some(g) = snap.gpus.first() else {
            return DcgmVerdict {
                verdict: None,
                findings: Vec::new(),
                note,
            };
        };
        let findings = g
            .findings
            .iter()
            .map(|f| FleetFinding {
                kind: f.kind,
                severity: f.severity,
                summary: match &note {
                    Some(n) => format!("{} ({n})", f.summary),
                    None => f.summary.clone(),
                },
                advice: f.advice.clone(),
            })
            .collect();
        DcgmVerdict {
            verdict: Some(g.verdict),
            findings,
            note,
        }
    }
}

/// The detectors of the dcgm-only GPUs, by `(instance, gpu)`, kept from one refresh to the next.
#[derive(Default)]
pub struct DetectorCache {
    trackers: HashMap<(String, String), DcgmTracker>,
}

impl DetectorCache {
    /// The verdict of GPU `key` after feeding it `points` (only the new ones when it continues).
    #[allow(clippy::too_many_arguments)]
    pub fn judge(
        &mut self,
        key: &(String, String),
        points: &[(f64, f64)],
        gpu: u32,
        name: &str,
        hostname: &str,
        memory_total_bytes: Option<u64>,
        detector: &DetectorConfig,
    ) -> DcgmVerdict {
        let keep = self.trackers.get(key).is_some_and(|t| t.continues(points));
        if !keep {
            match DcgmTracker::new(points, gpu, name, hostname, memory_total_bytes, detector) {
                Some(t) => {
                    self.trackers.insert(key.clone(), t);
                }
                None => {
                    self.trackers.remove(key);
                    return too_few();
                }
            }
        }
        match self.trackers.get_mut(key) {
            Some(t) => {
                t.feed(points);
                t.verdict()
            }
            None => too_few(),
        }
    }

    /// Forget GPUs not in `seen` (gone from Prometheus or now exported by gpulse).
    pub fn retain(&mut self, seen: &std::collections::HashSet<(String, String)>) {
        self.trackers.retain(|k, _| seen.contains(k));
    }

    pub fn len(&self) -> usize {
        self.trackers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.trackers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_coarse_intervals_only() {
        assert_eq!(resolution_note(1.0), None);
        assert_eq!(resolution_note(0.5), None);
        let n = resolution_note(15.0).unwrap();
        assert!(n.contains("15 s") && n.contains("~60 s"), "{n}");
        let n = resolution_note(2.5).unwrap();
        assert!(n.contains("2.5 s") && n.contains("~10 s"), "{n}");
    }

    /// A raw sample 1e10 s ahead (left in by a Prometheus that stores anything) is one more
    /// tick: the missed scrapes before it are filled only within what the engine keeps.
    #[test]
    fn a_sample_far_ahead_fills_no_more_than_the_engine_keeps() {
        let now = 1_800_000_000.0;
        let mut points: Vec<(f64, f64)> = (0..100)
            .map(|i| (now - 100.0 + i as f64, if i % 10 < 5 { 95.0 } else { 20.0 }))
            .collect();
        points.push((now + 1e10, 60.0));
        let detector = DetectorConfig::default();
        let mut t = DcgmTracker::new(&points, 0, "GPU", "host", None, &detector).expect("tracker");
        assert!(t.retention_s <= MAX_RETENTION_S);
        t.feed(&points);
        let ticks = t.engine.snapshot().seq;
        assert!(
            ticks as f64 <= 101.0 + MAX_RETENTION_S / t.interval,
            "{ticks} ticks fed"
        );
    }

    #[test]
    fn median_interval_ignores_a_missed_scrape() {
        let pts: Vec<(f64, f64)> = [0.0, 1.0, 2.0, 4.0, 5.0, 6.0]
            .iter()
            .map(|t| (*t, 50.0))
            .collect();
        assert_eq!(median_interval(&pts), Some(1.0));
        assert_eq!(median_interval(&pts[..1]), None);
    }
}
