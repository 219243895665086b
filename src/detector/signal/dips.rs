//! Dips: stretches below the busy level, marked with hysteresis, and their edges.

use super::hist::median;

/// A stretch below the busy level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dip {
    pub start: f64,
    /// `None` while the signal is still in the dip at the end of the window.
    pub end: Option<f64>,
    /// True when the window began inside this dip (its start is not known).
    pub open_start: bool,
}

/// An edge of a dip between two samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DipEdge {
    /// The signal fell into a dip.
    Start = 0,
    /// A burst ended the dip.
    End = 1,
}

/// Mark the dips of `us` (enter below `enter`, leave above `leave`) into `dips`. (Not inlined:
/// inside the caller its loop kept its values on the stack.)
#[inline(never)]
pub(super) fn find_dips(ts: &[f64], us: &[f32], enter: f64, leave: f64, dips: &mut Vec<Dip>) {
    dips.clear();
    let mut in_dip = (us[0] as f64) < enter;
    let mut cur = in_dip.then_some(Dip {
        start: ts[0],
        end: None,
        open_start: true,
    });
    for (&t, &u) in ts.iter().zip(us).skip(1) {
        let u = u as f64;
        if in_dip {
            if u > leave {
                in_dip = false;
                if let Some(mut d) = cur.take() {
                    d.end = Some(t);
                    dips.push(d);
                }
            }
        } else if u < enter {
            in_dip = true;
            cur = Some(Dip {
                start: t,
                end: None,
                open_start: false,
            });
        }
    }
    dips.extend(cur);
}

/// The median length of the dips that began at or after `from` and ended in the window (`lens`
/// a work buffer).
pub(super) fn median_dip(dips: &[Dip], from: f64, lens: &mut Vec<f64>) -> Option<f64> {
    lens.clear();
    lens.extend(
        dips.iter()
            .filter(|d| !d.open_start && d.start >= from)
            .filter_map(|d| d.end.map(|e| e - d.start)),
    );
    median(lens)
}

/// How many of `dips` have this edge in the window: a start (not open at the window's start), or
/// an end.
pub(super) fn edge_count(dips: &[Dip], edge: DipEdge) -> usize {
    match edge {
        DipEdge::Start => dips.iter().filter(|d| !d.open_start).count(),
        DipEdge::End => dips.iter().filter(|d| d.end.is_some()).count(),
    }
}

/// The last reading of the latest stretch of readings all above `level` that lasts at least
/// `min_s`: steady work, not a burst between dips.
pub(super) fn last_sustained_busy(ts: &[f64], us: &[f32], level: f64, min_s: f64) -> Option<usize> {
    let mut run_end = None;
    for i in (0..us.len()).rev() {
        if us[i] as f64 > level {
            let end = *run_end.get_or_insert(i);
            if ts[end] - ts[i] >= min_s {
                return Some(end);
            }
        } else {
            run_end = None;
        }
    }
    None
}

/// The mean reading of the samples inside dip `d` (at least the one at its start).
pub(super) fn dip_mean(ts: &[f64], us: &[f32], d: &Dip) -> f64 {
    let a = ts.partition_point(|t| *t < d.start);
    let b = d.end.map_or(ts.len(), |e| ts.partition_point(|t| *t < e));
    let inside = &us[a..b.max(a + 1).min(us.len())];
    inside.iter().map(|u| *u as f64).sum::<f64>() / inside.len().max(1) as f64
}
