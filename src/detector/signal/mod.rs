//! Utilization as a signal: busy level, dips, lost time and periodicity over a window.
//!
//! Pure functions over the readings of one window `(time, percent)`, oldest first, whatever
//! their source. The busy level H is the 90th percentile of the readings that show any activity;
//! dips are marked with hysteresis (enter below `dip_enter`·H, leave above `dip_leave`·H; a job
//! idle most of the time and busy in bursts uses a lower band, so that a burst a window caught
//! only in part still counts). The period is found two ways, the median spacing of dip starts and
//! the autocorrelation peak near it, and is only believed when both agree ([`period`]).

mod band;
mod dips;
mod grid;
mod hist;
mod period;
mod provisional;
mod regime;
#[cfg(test)]
mod tests;
mod waits;

pub use dips::{Dip, DipEdge};
pub use grid::GRID_S;
pub use hist::{bin, percentile_hist, WindowHist};
pub use period::Period;
pub use provisional::completing_edge;

use crate::detector::DetectorConfig;
use band::Band;
use hist::{shortfall_from, whole};

/// What one window of utilization shows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Analysis {
    pub n: usize,
    pub span_s: f64,
    pub mean: f64,
    pub p10: f64,
    pub p90: f64,
    /// Busy level H (90th percentile of active samples); 0 when nothing ran.
    pub busy_level: f64,
    /// Share of samples with any activity.
    pub active_share: f64,
    /// Σ max(0, L − u) / (L·N), L the full level.
    pub lost_fraction: f64,
    /// The level the job reads when its work is not interrupted, which lost time is measured
    /// against: the busy level, or 100% where bursts shorter than a reading never show it (see
    /// [`full_level`]).
    pub full_level: f64,
    pub dips: Vec<Dip>,
    /// Median length of the dips that both began and ended in the window.
    pub dip_s: Option<f64>,
    /// Median spacing of dip starts.
    pub spacing_s: Option<f64>,
    pub period: Option<Period>,
    /// The dips repeat faster than the sample rate can resolve (a period would alias).
    pub too_fast: bool,
    /// Mean, 10th and 90th percentile of the last `rules_window_s`.
    pub recent_mean: f64,
    pub recent_p10: f64,
    pub recent_p90: f64,
    /// The samples since a level change when they were analysed on their own and held no period
    /// yet: the dip edges a provisional period of theirs would need are judged against their
    /// busy level.
    pub regime: Option<Regime>,
}

/// The busy level and dip edges of the samples since a level change.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Regime {
    pub busy_level: f64,
    /// Dips that began after the drop, and dips that ended.
    pub starts: usize,
    pub ends: usize,
}

impl Regime {
    /// How many dips of the regime have this edge.
    fn edges(&self, edge: DipEdge) -> usize {
        match edge {
            DipEdge::Start => self.starts,
            DipEdge::End => self.ends,
        }
    }
}

/// Buffers an analysis works in, kept between analyses so that they allocate nothing once warm.
#[derive(Debug, Default)]
pub struct Scratch {
    /// A spare dip list: the dips of a band are marked here, and the band that describes the
    /// window swaps it into its [`Analysis`].
    dips: Vec<Dip>,
    starts: Vec<f64>,
    ends: Vec<f64>,
    spacings: Vec<f64>,
    lens: Vec<f64>,
    acf: grid::AcfBuffers,
}

impl Scratch {
    /// Keep a dip list that is no longer needed (an old analysis's), for the next analysis.
    pub fn recycle(&mut self, dips: Vec<Dip>) {
        if dips.capacity() > self.dips.capacity() {
            self.dips = dips;
        }
    }
}

/// Analyse samples `(t, util%)`, oldest first.
pub fn analyse(ts: &[f64], us: &[f32], cfg: &DetectorConfig) -> Analysis {
    analyse_window(ts, us, cfg, None, &mut Scratch::default())
}

/// The window's readings counted by whole percent: all of them, and the active ones.
struct Counts {
    all: [u32; 101],
    act: [u32; 101],
    n_act: u32,
    sum: f64,
    /// Every reading is a whole percent in 0..=100 (sums over them are exact).
    whole: bool,
}

/// The counts of `us`, from the kept histograms `hist` when they count exactly these samples
/// with this activity threshold.
fn counts(us: &[f32], cfg: &DetectorConfig, hist: Option<&WindowHist>) -> Counts {
    let hist = hist.filter(|h| h.n as usize == us.len() && h.active_util == cfg.idle_util);
    if let Some(h) = hist {
        let sum = if h.odd == 0 {
            h.whole_sum as f64
        } else {
            us.iter().fold(0.0f64, |s, &u| s + u as f64)
        };
        return Counts {
            all: h.all,
            act: h.act,
            n_act: h.n_act,
            sum,
            whole: h.odd == 0,
        };
    }
    let mut c = Counts {
        all: [0; 101],
        act: [0; 101],
        n_act: 0,
        sum: 0.0,
        whole: true,
    };
    for &u in us {
        let b = bin(u);
        c.all[b] += 1;
        c.sum += u as f64;
        c.whole &= whole(u).is_some();
        if (u as f64) >= cfg.idle_util {
            c.act[b] += 1;
            c.n_act += 1;
        }
    }
    c
}

/// The window's level figures: size, span, mean, percentiles, the active share and the figures
/// of the last `rules_window_s`.
fn levels(ts: &[f64], us: &[f32], c: &Counts, cfg: &DetectorConfig) -> Analysis {
    let n = ts.len();
    let mut a = Analysis {
        n,
        span_s: ts[n - 1] - ts[0],
        mean: c.sum / n as f64,
        p10: percentile_hist(&c.all, n as u32, 0.10),
        p90: percentile_hist(&c.all, n as u32, 0.90),
        active_share: c.n_act as f64 / n as f64,
        ..Default::default()
    };
    let from = ts.partition_point(|t| *t < ts[n - 1] - cfg.rules_window_s);
    let mut recent = [0u32; 101];
    let mut rsum = 0.0;
    for &u in &us[from..] {
        recent[bin(u)] += 1;
        rsum += u as f64;
    }
    let rn = (n - from) as u32;
    a.recent_mean = rsum / rn.max(1) as f64;
    a.recent_p10 = percentile_hist(&recent, rn, 0.10);
    a.recent_p90 = percentile_hist(&recent, rn, 0.90);
    a
}

/// The level lost time is measured against. A reading is the share of its window with a kernel
/// resident, so a window that is idle most of the time (`bursty`) and whose busiest readings
/// stay below `busy_util` holds bursts shorter than a reading: they never show the level the
/// job reads when fed, and the busy level of their partial readings would make every step look
/// longer than it is. Lost time is then measured against a kernel resident all the time (100%):
/// one minus the mean, the share of time the GPU had nothing to run.
fn full_level(busy_level: f64, bursty: bool, cfg: &DetectorConfig) -> f64 {
    if bursty && busy_level < cfg.busy_util {
        100.0
    } else {
        busy_level
    }
}

/// [`analyse`], with the window's histograms when they are kept (`hist`, used only when it
/// counts exactly these samples with this activity threshold), in reused buffers. The result is
/// the same.
pub fn analyse_window(
    ts: &[f64],
    us: &[f32],
    cfg: &DetectorConfig,
    hist: Option<&WindowHist>,
    scratch: &mut Scratch,
) -> Analysis {
    let n = ts.len().min(us.len());
    if n < 2 {
        return Analysis {
            n,
            ..Default::default()
        };
    }
    let (ts, us) = (&ts[..n], &us[..n]);
    // A grid built for other samples is not this window's.
    scratch.acf.grid.built = None;
    let c = counts(us, cfg, hist);
    let mut a = levels(ts, us, &c, cfg);
    if c.n_act == 0 {
        return a;
    }
    let h = percentile_hist(&c.act, c.n_act, 0.90).max(cfg.idle_util);
    a.busy_level = h;
    // The whole window's histogram, read by whole percent when every sample is one.
    let whole_hist = c.whole.then_some(&c.all);
    // Mostly idle with bursts: a burst the window caught only in part still reads well below H.
    let bursty = percentile_hist(&c.all, n as u32, 0.5) < cfg.bursty_median * h;
    a.full_level = full_level(h, bursty, cfg);
    a.lost_fraction = shortfall_from(us, 0, a.full_level, whole_hist) / (a.full_level * n as f64);
    let bands: &[(f64, f64)] = if bursty {
        &[(
            cfg.dip_enter * cfg.burst_band_enter,
            cfg.dip_leave * cfg.burst_band_leave,
        )]
    } else {
        &[
            (cfg.dip_enter, cfg.dip_leave),
            (cfg.shallow_enter, cfg.shallow_leave),
        ]
    };
    let band = Band {
        ts,
        us,
        mean: a.mean,
        busy_level: h,
        full_level: a.full_level,
        span_s: a.span_s,
        whole_hist,
        cfg,
    };
    let mut normal_dips: Option<usize> = None;
    for (k, &levels) in bands.iter().enumerate() {
        let out = band.search(levels, normal_dips, scratch);
        if k == 0 {
            normal_dips = Some(out.starts);
        }
        // The first band describes the dips; a shallow band only adds a period it found.
        if (k == 0 || out.found_any()) && band.describe(&mut a, out, scratch) {
            break;
        }
    }
    regime::regime_since_last_drop(ts, us, cfg, &mut a, scratch);
    regime::period_after_ended_cycles(ts, us, cfg, &mut a, scratch);
    a
}
