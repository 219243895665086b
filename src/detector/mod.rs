//! Names why a GPU is not busier, from its history.

use serde::{Deserialize, Serialize};

use crate::history::GpuHistory;
use crate::model::{Finding, FindingKind, SystemInfo, UnixTime};

/// Thresholds of the rules (configurable in the config file's `[detector]` table).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DetectorConfig {
    /// Seconds of history each evaluation looks at.
    pub window_s: f64,
    /// Below this mean utilization (percent) a GPU with no process counts as idle.
    pub idle_util: f64,
}

impl Default for DetectorConfig {
    fn default() -> Self {
        DetectorConfig {
            window_s: 60.0,
            idle_util: 5.0,
        }
    }
}

/// A finding raised or cleared at one evaluation.
#[derive(Debug, Clone, PartialEq)]
pub enum FindingEvent {
    Raised(Finding),
    Cleared(Finding),
}

/// Runs the rules over every GPU's history.
#[derive(Debug)]
pub struct Detector {
    config: DetectorConfig,
    verdicts: Vec<FindingKind>,
    active: Vec<Finding>,
    ended: Vec<Finding>,
}

impl Detector {
    pub fn new(config: DetectorConfig, system: &SystemInfo) -> Self {
        Detector {
            config,
            verdicts: vec![FindingKind::Idle; system.devices.len()],
            active: Vec::new(),
            ended: Vec::new(),
        }
    }

    /// Evaluate every GPU after the tick at `t`.
    pub fn update(&mut self, t: UnixTime, gpus: &[GpuHistory]) -> Vec<FindingEvent> {
        for (i, h) in gpus.iter().enumerate() {
            let recent = h.ticks.since(t - self.config.window_s);
            let utils: Vec<f64> = recent.iter().filter_map(|m| m.metrics.util_gpu).collect();
            let mean = if utils.is_empty() {
                0.0
            } else {
                utils.iter().sum::<f64>() / utils.len() as f64
            };
            if let Some(v) = self.verdicts.get_mut(i) {
                *v = if mean >= self.config.idle_util {
                    FindingKind::Healthy
                } else {
                    FindingKind::Idle
                };
            }
        }
        Vec::new()
    }

    /// The current verdict of GPU `gpu` (position in the system's device list).
    pub fn verdict(&self, gpu: usize) -> FindingKind {
        self.verdicts.get(gpu).copied().unwrap_or(FindingKind::Idle)
    }

    /// Findings still going on.
    pub fn active(&self) -> &[Finding] {
        &self.active
    }

    /// Findings that have ended.
    pub fn ended(&self) -> &[Finding] {
        &self.ended
    }
}
