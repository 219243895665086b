//! The period of a window's dips: the median spacing of their starts, checked against the
//! autocorrelation of the readings, with the guards against aliasing and chance.

use super::grid::{acf_peak, AcfBuffers};
use crate::detector::DetectorConfig;

/// A period both methods agree on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Period {
    pub period_s: f64,
    pub spacing_s: f64,
    pub acf_s: f64,
    /// Autocorrelation at the peak (0..1).
    pub acf: f64,
    /// Dip starts that follow the period.
    pub cycles: usize,
    /// Start of the first dip of those cycles (of a provisional period seen from the latest dip
    /// ends, the end of its first dip: where the first burst of its cycles began).
    pub first_start: f64,
    /// Start (or end, as `first_start`) of the last dip of those cycles.
    pub last_start: f64,
    /// Share of dip spacings within 35% of the median.
    pub regularity: f64,
    /// Seen over fewer than `min_cycles` cycles (three deep, evenly spaced dips that are the
    /// latest in the window): named early, with less confidence, until more cycles confirm it.
    pub provisional: bool,
    /// Dips in each cycle: 1, or 2 or 3 where workers deliver out of step.
    pub dips_per_cycle: u32,
}

impl Period {
    /// Whether the cycles still go on at `now`: the last began at most two and a half periods
    /// (and a second) before.
    pub fn ongoing_at(&self, now: f64) -> bool {
        now - self.last_start <= 2.5 * self.period_s + 1.0
    }
}

/// Dip starts a provisional period needs: one fewer than `min_cycles`, and at least three (two
/// spacings to compare).
pub(super) fn early_cycles(cfg: &DetectorConfig) -> usize {
    cfg.min_cycles.saturating_sub(1).max(3)
}

/// What the period search concluded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Periodicity {
    None,
    /// Regular, but the autocorrelation is as strong at half the period: the true period is
    /// probably shorter than the samples can resolve.
    TooFast,
    Period(Period),
}

/// Spacings within this share of their median are regular; a period needs at least
/// [`MIN_REGULARITY`] of them so.
const SPACING_TOLERANCE: f64 = 0.35;
const MIN_REGULARITY: f64 = 0.5;

/// The readings a period search runs over and what the window already knows of them.
pub(super) struct Readings<'a> {
    pub ts: &'a [f64],
    pub us: &'a [f32],
    pub mean: f64,
    pub busy_level: f64,
    /// Median length of the dips that began and ended in the window.
    pub dip_len: Option<f64>,
    /// The counts of `us` by whole percent, when every sample is one.
    pub whole_hist: Option<&'a [u32; 101]>,
    pub cfg: &'a DetectorConfig,
}

impl Readings<'_> {
    /// The period of the dips starting at `starts` (`spacings` between them, `spacing` their
    /// median), checked against the autocorrelation of the readings.
    pub fn find_period(
        &self,
        starts: &[f64],
        spacings: &[f64],
        spacing: f64,
        bufs: &mut AcfBuffers,
    ) -> Periodicity {
        let cfg = self.cfg;
        let regular = spacings
            .iter()
            .filter(|s| (**s - spacing).abs() <= SPACING_TOLERANCE * spacing)
            .count();
        let regularity = regular as f64 / spacings.len().max(1) as f64;
        if regularity < MIN_REGULARITY {
            return Periodicity::None;
        }
        let Some(peak) = acf_peak(self.ts, self.us, self.mean, spacing, cfg.acf_min, bufs) else {
            return Periodicity::None;
        };
        if (peak.lag_s - spacing).abs() > cfg.period_agree * spacing {
            return Periodicity::None;
        }
        let Some((acf_s, period_s)) = self.unaliased(peak.lag_s, spacing, peak.r, peak.r_half)
        else {
            return Periodicity::TooFast;
        };
        if self.aliases(starts.len(), period_s) {
            return Periodicity::TooFast;
        }
        let (first, cycles) = cycle_run(starts, acf_s);
        let run = &starts[first..first + cycles];
        if !self.cycles_hold(run, acf_s, first + cycles == starts.len()) {
            return Periodicity::None;
        }
        Periodicity::Period(Period {
            period_s,
            spacing_s: spacing,
            acf_s,
            acf: peak.r.min(1.0),
            cycles,
            first_start: run[0],
            last_start: run[cycles - 1],
            regularity,
            provisional: cycles < cfg.min_cycles,
            dips_per_cycle: 1,
        })
    }

    /// The autocorrelation lag and the period (the mean of the lag and the spacing), or `None`
    /// when the period is too short to resolve. As regular at half the lag: every other dip was
    /// missed (the half is the period), or the period is too short. Only dips short enough to
    /// fall between samples can be missed: with longer ones (a checkpoint's pause, a slow
    /// loader's wait) the dip starts show the period as it is.
    fn unaliased(&self, lag_s: f64, spacing: f64, r: f64, r_half: f64) -> Option<(f64, f64)> {
        let missable = self.dip_len.is_none_or(|d| d < self.cfg.missable_dip_s);
        if r_half >= 0.4 * r && missable {
            if lag_s / 2.0 >= 0.9 * self.cfg.min_period_s {
                return Some((lag_s / 2.0, lag_s / 2.0));
            }
            return None;
        }
        Some((lag_s, (lag_s + spacing) / 2.0))
    }

    /// Whether a period aliases: more dips than periods (the stalls come faster than the
    /// period the samples show), or, near the sample rate, most readings between the busy level
    /// and zero (windows that mostly catch part of a stall).
    fn aliases(&self, dip_starts: usize, period_s: f64) -> bool {
        let (ts, us) = (self.ts, self.us);
        let span = ts[ts.len() - 1] - ts[0];
        if dip_starts as f64 > 1.1 * (span / period_s) + 1.0 {
            return true;
        }
        if period_s >= 2.0 {
            return false;
        }
        let (lo, hi) = (0.15 * self.busy_level, 0.85 * self.busy_level);
        let between = |u: f64| u > lo && u < hi;
        let mid: usize = match self.whole_hist {
            // Every sample is the whole percent of its bin.
            Some(all) => all
                .iter()
                .enumerate()
                .filter(|(v, _)| between(*v as f64))
                .map(|(_, c)| *c as usize)
                .sum(),
            None => us.iter().filter(|u| between(**u as f64)).count(),
        };
        mid as f64 > 0.55 * us.len() as f64
    }

    /// Whether the cycles `run` (dip starts following `period`; `latest`: the last dip start of
    /// the window is theirs) hold up. Below the cadence range: their spacings close to the period
    /// on average (random stalls scatter across the whole tolerance), and with few cycles each
    /// spacing close to it (none a missed dip). Fewer than `min_cycles` cycles only as a
    /// provisional period: at least three, the latest of the window.
    fn cycles_hold(&self, run: &[f64], period: f64, latest: bool) -> bool {
        let cfg = self.cfg;
        let below_cadence = period < cfg.stall_min_period_s;
        if below_cadence
            && mean_deviation(run, period)
                > (cfg.cycle_mean_dev * period).max(cfg.cycle_mean_dev_slack_s)
        {
            return false;
        }
        if run.len() < cfg.min_cycles && (run.len() < early_cycles(cfg) || !latest) {
            return false;
        }
        let agree = (cfg.few_cycles_agree * period).max(cfg.few_cycles_slack_s);
        !(run.len() < cfg.few_cycles
            && below_cadence
            && run.windows(2).any(|w| (w[1] - w[0] - period).abs() > agree))
    }
}

/// The longest run of dip starts whose spacings follow `period` (each within 35% of one or two
/// periods: a dip may be missed): its first index and length.
fn cycle_run(starts: &[f64], period: f64) -> (usize, usize) {
    let mut first = 0;
    let mut cycles = 1;
    let mut best = (0, 1);
    for k in 1..starts.len() {
        let s = starts[k] - starts[k - 1];
        let whole = (s / period).round().max(1.0);
        if (s - whole * period).abs() <= SPACING_TOLERANCE * period && whole <= 2.0 {
            cycles += 1;
        } else {
            first = k;
            cycles = 1;
        }
        if cycles > best.1 {
            best = (first, cycles);
        }
    }
    best
}

/// The mean distance of the spacings of `starts` from the nearest whole multiple (at least one)
/// of `period`.
fn mean_deviation(starts: &[f64], period: f64) -> f64 {
    let (sum, n) = starts.windows(2).fold((0.0, 0usize), |(sum, n), w| {
        let s = w[1] - w[0];
        let whole = (s / period).round().max(1.0);
        (sum + (s - whole * period).abs(), n + 1)
    });
    if n == 0 {
        0.0
    } else {
        sum / n as f64
    }
}
