//! Provisional periods: a pattern named from its first three cycles, when they are deep, evenly
//! spaced, alike and costly enough that chance is an unlikely explanation.

use super::dips::{dip_mean, edge_count, Dip, DipEdge};
use super::hist::shortfall_from;
use super::period::{early_cycles, Period};
use super::Analysis;
use crate::detector::DetectorConfig;

/// The edge of a dip as deep as a provisional period's that the step from `prev` to `u` makes,
/// when one more such edge could complete a provisional period in the window `a` describes (a
/// busy level high enough and enough such edges already), judged against the window's busy level
/// and then against the regime since a level change. A start falls from the level that ends a
/// dip to at most `provisional_depth` of the busy level; an end rises from at most that depth to
/// the lowest level that ends a dip in any band.
pub fn completing_edge(a: &Analysis, prev: f32, u: f32, cfg: &DetectorConfig) -> Option<DipEdge> {
    let enough = |h: f64, known: usize| {
        h >= cfg.provisional_min_busy * cfg.idle_util && known + 1 >= early_cycles(cfg)
    };
    let whole = step_edge(a.busy_level, prev, u, cfg)
        .filter(|edge| enough(a.busy_level, edge_count(&a.dips, *edge)));
    whole.or_else(|| {
        let r = a.regime?;
        step_edge(r.busy_level, prev, u, cfg).filter(|edge| enough(r.busy_level, r.edges(*edge)))
    })
}

/// The dip edge the step from `prev` to `u` makes against busy level `h`, if any.
fn step_edge(h: f64, prev: f32, u: f32, cfg: &DetectorConfig) -> Option<DipEdge> {
    let (prev, u) = (prev as f64, u as f64);
    if prev >= cfg.dip_leave * h && u <= cfg.provisional_depth * h {
        Some(DipEdge::Start)
    } else if prev <= cfg.provisional_depth * h && u > cfg.burst_band_leave * cfg.dip_leave * h {
        Some(DipEdge::End)
    } else {
        None
    }
}

/// The latest dip edges (starts or ends) a provisional period needs, when their spacings agree as
/// a provisional period's must (see [`trusted`]) and the window has more edges than those (or
/// `all_new`: the edges were not searched as a whole). Returns them with their mean spacing.
pub(super) fn early_tail<'a>(
    edges: &'a [f64],
    all_new: bool,
    cfg: &DetectorConfig,
) -> Option<(&'a [f64], f64)> {
    let k = early_cycles(cfg);
    let from = edges
        .len()
        .checked_sub(k)
        .filter(|from| all_new || *from > 0)?;
    let tail = edges.get(from..)?;
    even_spacing(tail, cfg.provisional_agree)
        .filter(|mean| *mean >= cfg.provisional_min_period_s)
        .map(|mean| (tail, mean))
}

/// Dips of the window that began (`by_end`: ended) before `from` and are at least half as long
/// as the mean of those that began (ended) at or after it.
pub(super) fn dips_before_tail(dips: &[Dip], from: f64, by_end: bool) -> usize {
    let at = |d: &Dip| if by_end { d.end } else { Some(d.start) };
    let (mut sum, mut n) = (0.0, 0usize);
    for d in dips.iter().filter(|d| !d.open_start) {
        if let (Some(e), Some(t)) = (d.end, at(d)) {
            if t >= from - 1e-9 {
                sum += e - d.start;
                n += 1;
            }
        }
    }
    let Some(mean) = (n > 0).then(|| sum / n as f64) else {
        return 0;
    };
    dips.iter()
        .filter(|d| !d.open_start && at(d).is_some_and(|t| t < from - 1e-9))
        .filter(|d| d.end.is_some_and(|e| e - d.start >= 0.5 * mean))
        .count()
}

/// Whether `per`, a period below the cadence range seen over fewer than `few_cycles` cycles,
/// comes after `provisional_max_earlier` or more of the window's `dips` that began before `from`
/// (its cycles, or the level change they follow) and are as long as those after: a few stalls
/// evenly spaced by chance among random ones (see [`dips_before_tail`]). More cycles, and
/// cadences, stand.
pub(super) fn few_cycles_by_chance(
    dips: &[Dip],
    per: &Period,
    from: f64,
    cfg: &DetectorConfig,
) -> bool {
    per.cycles < cfg.few_cycles * per.dips_per_cycle as usize
        && per.period_s < cfg.stall_min_period_s
        && dips_before_tail(dips, from, false) >= cfg.provisional_max_earlier
}

/// The mean spacing of `starts` when their spacings agree within `agree` of it (`None` with
/// fewer than two starts).
fn even_spacing(starts: &[f64], agree: f64) -> Option<f64> {
    let n = starts.len().checked_sub(1).filter(|n| *n > 0)?;
    let (lo, hi, sum) = starts
        .windows(2)
        .map(|w| w[1] - w[0])
        .fold((f64::MAX, f64::MIN, 0.0), |(lo, hi, sum), sp| {
            (lo.min(sp), hi.max(sp), sum + sp)
        });
    let mean = sum / n as f64;
    (hi - lo <= agree * mean).then_some(mean)
}

/// The window a provisional period is judged in.
pub(super) struct Cycles<'a> {
    pub ts: &'a [f64],
    pub us: &'a [f32],
    pub busy_level: f64,
    /// The level lost time is measured against.
    pub full_level: f64,
    pub dips: &'a [Dip],
    /// The dip edges (starts or ends, in time order) the period was found on.
    pub edges: &'a [f64],
    pub whole_hist: Option<&'a [u32; 101]>,
}

/// Whether a provisional period (fewer than `min_cycles` cycles, the latest dips of the window)
/// is trusted: a period of at least `provisional_min_period_s`, spacings that agree closely,
/// every dip of the cycles deep and about as long as the others (a loader's wait is its period
/// less the step, a checkpoint's pause the time to save; random stalls of random lengths are
/// not), and enough of the time since the first dip lost: `provisional_min_lost` below the
/// cadence range (a loader's cycle), `stall_min_lost` in it (a checkpoint or evaluation pause
/// loses less, and a cadence is named as soon as its third pause begins).
pub(super) fn trusted(w: &Cycles, per: &Period, cfg: &DetectorConfig) -> bool {
    let h = w.busy_level;
    if per.period_s < cfg.provisional_min_period_s || h < cfg.provisional_min_busy * cfg.idle_util {
        return false;
    }
    let cadence = per.period_s >= cfg.stall_min_period_s;
    let min_lost = if cadence {
        cfg.stall_min_lost
    } else {
        cfg.provisional_min_lost
    };
    let run = &w.edges[w.edges.partition_point(|s| *s < per.first_start)..];
    if even_spacing(run, cfg.provisional_agree).is_none() {
        return false;
    }
    let cycle_dips = || {
        w.dips
            .iter()
            .filter(|d| !d.open_start && d.start >= per.first_start)
    };
    if !cycle_dips().all(|d| dip_mean(w.ts, w.us, d) <= cfg.provisional_depth * h) {
        return false;
    }
    let (lo, hi, sum, n) = cycle_dips()
        .filter_map(|d| d.end.map(|e| e - d.start))
        .fold((f64::MAX, f64::MIN, 0.0, 0usize), |(lo, hi, sum, n), l| {
            (lo.min(l), hi.max(l), sum + l, n + 1)
        });
    if n >= 2 && hi - lo > (cfg.provisional_dip_agree * sum / n as f64).max(cfg.few_cycles_slack_s)
    {
        return false;
    }
    // A cadence's pause still going on is judged once it has lasted nearly as long as the
    // shortest before it: a pause that ends early (an evaluation pass shorter than the last) is
    // another length, and a cadence named on its start would be dropped again when it ends.
    let now = w.ts[w.ts.len() - 1];
    let open = cycle_dips().find(|d| d.end.is_none());
    let too_early = open.is_some_and(|d| now - d.start < (1.0 - cfg.provisional_dip_agree) * lo);
    if cadence && n > 0 && too_early {
        return false;
    }
    let from = w.ts.partition_point(|t| *t < per.first_start);
    let m = (w.ts.len() - from).max(1);
    let full = w.full_level;
    shortfall_from(w.us, from, full, w.whole_hist) / (full * m as f64) >= min_lost
}
