//! Windows that hold two regimes: a level change (steady work, then bursts between waits), and
//! a new pattern after one whose cycles ended. The samples of the new regime are analysed as a
//! window of their own.

use super::dips::{edge_count, last_sustained_busy, DipEdge};
use super::provisional::few_cycles_by_chance;
use super::{analyse_window, Analysis, Regime, Scratch};
use crate::detector::DetectorConfig;

/// Whether `span_s` of samples is long enough to hold `min_cycles` of the shortest resolvable
/// period (worth analysing on their own).
fn holds_min_cycles(span_s: f64, cfg: &DetectorConfig) -> bool {
    span_s >= cfg.min_cycles as f64 * cfg.min_period_s
}

/// `a` takes the dips, period and lost time of `tail`, an analysis of its latest samples that
/// found a period.
fn adopt_period(a: &mut Analysis, tail: Analysis, scratch: &mut Scratch) {
    a.busy_level = tail.busy_level;
    a.full_level = tail.full_level;
    a.lost_fraction = tail.lost_fraction;
    scratch.recycle(std::mem::replace(&mut a.dips, tail.dips));
    a.dip_s = tail.dip_s;
    a.spacing_s = tail.spacing_s;
    a.period = tail.period;
    a.too_fast = false;
}

/// A period whose cycles ended (a job that starved and stopped) can hold the window while a new
/// pattern begins after it: the new dips, with another period or phase, do not follow the old
/// cycles, and the old period is no longer ongoing. The samples after the old pattern's last
/// cycle are then analysed on their own; when they hold a period, it is the window's.
pub(super) fn period_after_ended_cycles(
    ts: &[f64],
    us: &[f32],
    cfg: &DetectorConfig,
    a: &mut Analysis,
    scratch: &mut Scratch,
) {
    let end = ts[ts.len() - 1];
    let Some(old) = a.period.filter(|per| !per.ongoing_at(end)) else {
        return;
    };
    let from = ts.partition_point(|t| *t <= old.last_start + old.period_s);
    if from + 2 >= ts.len() || !holds_min_cycles(end - ts[from], cfg) {
        return;
    }
    let tail = analyse_window(&ts[from..], &us[from..], cfg, None, scratch);
    if tail.period.as_ref().is_some_and(|per| per.ongoing_at(end)) {
        adopt_period(a, tail, scratch);
    } else {
        scratch.recycle(tail.dips);
    }
}

/// A level change: the window began in one regime (busy near H) and the signal fell below the
/// normal band (`dip_enter`·H) and has not come back above `dip_leave`·H for long since, so the
/// whole window's busy level no longer describes the samples since the drop (a job that started
/// starving: short bursts that never come back near the old H). Those samples are analysed as
/// their own window, with their own busy level; when they hold a period, the dips, period and
/// lost time are theirs, else their busy level and dip edge counts are kept (`a.regime`). A
/// period the whole window found in cycles that all began before the drop describes the earlier
/// regime and gives way; one with cycles after the drop stands.
pub(super) fn regime_since_last_drop(
    ts: &[f64],
    us: &[f32],
    cfg: &DetectorConfig,
    a: &mut Analysis,
    scratch: &mut Scratch,
) {
    let h = a.busy_level;
    // Backwards to the last sustained busy stretch (at once on a busy GPU), then forwards to the
    // drop.
    let Some(last_busy) = last_sustained_busy(ts, us, cfg.dip_leave * h, cfg.sustained_busy_s)
    else {
        return;
    };
    let Some(from) = us[last_busy..]
        .iter()
        .position(|u| (*u as f64) < cfg.dip_enter * h)
        .map(|i| last_busy + i)
    else {
        return;
    };
    let drop = ts[from];
    if a.period.is_some_and(|per| per.last_start >= drop)
        || !holds_min_cycles(ts[ts.len() - 1] - drop, cfg)
    {
        return;
    }
    // Mostly below the old level since: bursts between long waits, not the same work with
    // shorter stretches.
    let busy = us[from..]
        .iter()
        .filter(|u| **u as f64 > cfg.dip_leave * h)
        .count();
    if busy as f64 > cfg.regime_max_busy_share * (us.len() - from) as f64 {
        return;
    }
    let tail = analyse_window(&ts[from..], &us[from..], cfg, None, scratch);
    // Stalls as long as the new dips before the drop: the same stalls went on before it, and a
    // few of them evenly spaced since are chance, not a new pattern.
    if tail
        .period
        .is_some_and(|per| few_cycles_by_chance(&a.dips, &per, drop, cfg))
    {
        scratch.recycle(tail.dips);
    } else if tail.period.is_some() {
        adopt_period(a, tail, scratch);
    } else {
        a.regime = Some(Regime {
            busy_level: tail.busy_level,
            starts: edge_count(&tail.dips, DipEdge::Start),
            ends: edge_count(&tail.dips, DipEdge::End),
        });
        scratch.recycle(tail.dips);
    }
}
