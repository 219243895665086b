//! The detector's thresholds: the config file's `[detector]` table.

use serde::{Deserialize, Serialize};

use super::signal::SignalParams;

/// Thresholds of the rules (the config file's `[detector]` table).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DetectorConfig {
    /// Seconds of utilization each evaluation looks at (holds ≥ 4 cycles of a 20 s period).
    pub window_s: f64,
    /// Seconds of ticks the signal rules (SM activity, power, PCIe, memory, throttling) look at.
    pub rules_window_s: f64,
    /// Seconds of data time between evaluations.
    pub eval_interval_s: f64,
    /// An evaluation needs at least this much data.
    pub min_span_s: f64,
    /// Positive evaluations in a row before a finding is raised.
    pub raise_after: u32,
    /// Seconds without a positive evaluation before a finding is cleared.
    pub clear_after_s: f64,
    /// Below this utilization (percent) a GPU counts as idle.
    pub idle_util: f64,
    /// At or above this mean utilization (percent) a GPU counts as busy.
    pub busy_util: f64,
    /// A dip begins below this share of the busy level.
    pub dip_enter: f64,
    /// A dip ends above this share of the busy level.
    pub dip_leave: f64,
    /// Dip starts needed before a period is believed.
    pub min_cycles: usize,
    /// Autocorrelation at the period needed (0..1).
    pub acf_min: f64,
    /// Largest relative difference between the two period estimates.
    pub period_agree: f64,
    /// Shortest period reported with a number (seconds); faster stalls are "shorter than 1 s".
    pub min_period_s: f64,
    /// Periods at or above this (seconds) are checkpoint/eval pauses, not loader starvation...
    pub stall_min_period_s: f64,
    /// ... unless at least this share of each cycle is lost: a cadence leaves the GPU busy for
    /// most of each cycle, a loader that slow leaves it idle between short bursts.
    pub cadence_max_lost: f64,
    /// Least lost fraction for input starvation.
    pub starvation_min_lost: f64,
    /// Least lost fraction for a periodic stall.
    pub stall_min_lost: f64,
    /// Lost fraction at which starvation and stalls are severity high.
    pub high_lost: f64,
    /// Dips needed in the window for erratic stalls.
    pub erratic_min_dips: usize,
    /// Least lost fraction for erratic stalls.
    pub erratic_min_lost: f64,
    /// Dips longer than this (seconds, median) are not erratic stalls.
    pub long_gap_s: f64,
    /// A plateau below this utilization (percent) is host bound.
    pub plateau_max_util: f64,
    /// A plateau's 10th percentile is at least this share of its 90th.
    pub plateau_flatness: f64,
    /// Busy but idle: SM activity (percent) below this while utilization is busy.
    pub busy_but_idle_sm: f64,
    /// Busy but idle without GPM: power below this share of the limit.
    pub busy_but_idle_power_share: f64,
    /// Transfer bound: PCIe receive at least this share of the link's bandwidth.
    pub transfer_link_share: f64,
    /// Memory idle: at least this share of memory used while utilization is idle.
    pub memory_idle_share: f64,
    /// Memory idle also when SM activity (percent, GPM) is below this, whatever utilization reads.
    pub memory_idle_sm: f64,
    /// Memory pressure: at least this share of memory used and rising.
    pub memory_pressure_share: f64,
    /// Busy ticks needed before throttling or link rules judge.
    pub min_busy_ticks: usize,
    /// Imbalance: per-GPU mean utilizations differing by more than this many points.
    pub imbalance_points: f64,
}

impl Default for DetectorConfig {
    fn default() -> Self {
        DetectorConfig {
            window_s: 90.0,
            rules_window_s: 20.0,
            eval_interval_s: 1.0,
            min_span_s: 5.0,
            raise_after: 2,
            clear_after_s: 10.0,
            idle_util: 5.0,
            busy_util: 90.0,
            dip_enter: 0.5,
            dip_leave: 0.8,
            min_cycles: 4,
            acf_min: 0.25,
            period_agree: 0.2,
            min_period_s: 1.0,
            stall_min_period_s: 8.0,
            cadence_max_lost: 0.75,
            starvation_min_lost: 0.05,
            stall_min_lost: 0.05,
            high_lost: 0.25,
            erratic_min_dips: 5,
            erratic_min_lost: 0.1,
            long_gap_s: 2.0,
            plateau_max_util: 60.0,
            plateau_flatness: 0.4,
            busy_but_idle_sm: 20.0,
            busy_but_idle_power_share: 0.25,
            transfer_link_share: 0.05,
            memory_idle_share: 0.5,
            memory_idle_sm: 1.0,
            memory_pressure_share: 0.95,
            min_busy_ticks: 8,
            imbalance_points: 10.0,
        }
    }
}

impl DetectorConfig {
    /// Every threshold with its valid range: `(key, value, lowest, highest, unit)`.
    pub fn ranges(&self) -> Vec<(&'static str, f64, f64, f64, &'static str)> {
        vec![
            ("window_s", self.window_s, 10.0, 3600.0, " seconds"),
            (
                "rules_window_s",
                self.rules_window_s,
                2.0,
                600.0,
                " seconds",
            ),
            (
                "eval_interval_s",
                self.eval_interval_s,
                0.1,
                60.0,
                " seconds",
            ),
            ("min_span_s", self.min_span_s, 1.0, 600.0, " seconds"),
            ("raise_after", self.raise_after as f64, 1.0, 20.0, ""),
            ("clear_after_s", self.clear_after_s, 0.0, 3600.0, " seconds"),
            ("idle_util", self.idle_util, 0.0, 50.0, " percent"),
            ("busy_util", self.busy_util, 10.0, 100.0, " percent"),
            (
                "dip_enter",
                self.dip_enter,
                0.05,
                self.dip_leave.min(0.95),
                " (a share of the busy level, below dip_leave)",
            ),
            (
                "dip_leave",
                self.dip_leave,
                0.1,
                1.0,
                " (a share of the busy level)",
            ),
            ("min_cycles", self.min_cycles as f64, 3.0, 20.0, ""),
            ("acf_min", self.acf_min, 0.0, 1.0, ""),
            ("period_agree", self.period_agree, 0.01, 1.0, ""),
            ("min_period_s", self.min_period_s, 0.4, 10.0, " seconds"),
            (
                "stall_min_period_s",
                self.stall_min_period_s,
                1.0,
                3600.0,
                " seconds",
            ),
            ("cadence_max_lost", self.cadence_max_lost, 0.0, 1.0, ""),
            (
                "starvation_min_lost",
                self.starvation_min_lost,
                0.0,
                1.0,
                "",
            ),
            ("stall_min_lost", self.stall_min_lost, 0.0, 1.0, ""),
            ("high_lost", self.high_lost, 0.0, 1.0, ""),
            (
                "erratic_min_dips",
                self.erratic_min_dips as f64,
                2.0,
                1000.0,
                "",
            ),
            ("erratic_min_lost", self.erratic_min_lost, 0.0, 1.0, ""),
            ("long_gap_s", self.long_gap_s, 0.2, 600.0, " seconds"),
            (
                "plateau_max_util",
                self.plateau_max_util,
                1.0,
                100.0,
                " percent",
            ),
            ("plateau_flatness", self.plateau_flatness, 0.0, 1.0, ""),
            (
                "busy_but_idle_sm",
                self.busy_but_idle_sm,
                0.0,
                100.0,
                " percent",
            ),
            (
                "busy_but_idle_power_share",
                self.busy_but_idle_power_share,
                0.0,
                1.0,
                "",
            ),
            (
                "transfer_link_share",
                self.transfer_link_share,
                0.0,
                1.0,
                "",
            ),
            ("memory_idle_share", self.memory_idle_share, 0.0, 1.0, ""),
            (
                "memory_idle_sm",
                self.memory_idle_sm,
                0.0,
                100.0,
                " percent",
            ),
            (
                "memory_pressure_share",
                self.memory_pressure_share,
                0.5,
                1.0,
                "",
            ),
            (
                "min_busy_ticks",
                self.min_busy_ticks as f64,
                1.0,
                10000.0,
                "",
            ),
            (
                "imbalance_points",
                self.imbalance_points,
                1.0,
                100.0,
                " points",
            ),
        ]
    }

    pub(super) fn signal_params(&self) -> SignalParams {
        SignalParams {
            dip_enter: self.dip_enter,
            dip_leave: self.dip_leave,
            min_cycles: self.min_cycles,
            acf_min: self.acf_min,
            period_agree: self.period_agree,
            active_util: self.idle_util,
            recent_s: self.rules_window_s,
            min_period_s: self.min_period_s,
            early_max_period_s: self.stall_min_period_s,
        }
    }
}
