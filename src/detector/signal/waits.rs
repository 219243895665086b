//! Several waits to a cycle: workers that deliver out of step (a burst 1.4 s then 2.6 s after
//! the last, every 4 s) alternate their spacings, so no period is near the median one, but every
//! n-th dip start follows the cycle.

use super::grid::AcfBuffers;
use super::hist::median;
use super::period::{Periodicity, Readings};
use crate::detector::DetectorConfig;

/// Whether the spacings of the latest dip starts repeat a pattern of `waits` steady values: each
/// of the `waits` series (every `waits`-th spacing) within 25% of its own median. Random dips do
/// not (taking every other start only averages their spacings out); workers out of step do.
fn waits_repeat(starts: &[f64], waits: usize, cfg: &DetectorConfig) -> bool {
    let spacings: Vec<f64> = starts.windows(2).map(|w| w[1] - w[0]).collect();
    let steady = |phase: usize| {
        let mut series: Vec<f64> = spacings
            .iter()
            .skip(phase)
            .step_by(waits)
            .copied()
            .collect();
        let Some(m) = median(&mut series) else {
            return false;
        };
        let near = series
            .iter()
            .filter(|s| (**s - m).abs() <= 0.25 * m)
            .count();
        near as f64 >= cfg.paired_regularity * series.len() as f64
    };
    (0..waits).all(steady)
}

/// The cycle of several waits each, replacing `found` when it is clearer: searched when the dip
/// starts found no period, or one over alternating spacings (less regular than
/// `uneven_regularity`). Two waits are tried first, then three, over `min_cycles` whole cycles
/// ending with the latest dip start (no provisional period). The cycle replaces a period when
/// every n-th dip start follows it far more closely (`paired_regularity`, and an autocorrelation
/// `paired_acf_margin` stronger; `paired_acf_min` with no period before).
pub(super) fn several_waits(
    r: &Readings,
    starts: &[f64],
    found: Periodicity,
    spacings: &mut Vec<f64>,
    bufs: &mut AcfBuffers,
) -> Periodicity {
    let cfg = r.cfg;
    let beat = match &found {
        Periodicity::None => None,
        Periodicity::Period(per) if per.regularity < cfg.uneven_regularity => Some(per.acf),
        _ => return found,
    };
    for waits in 2..=cfg.max_waits {
        let need = waits * cfg.min_cycles;
        if starts.len() < need || !waits_repeat(&starts[starts.len() - need..], waits, cfg) {
            continue;
        }
        let every_kth: Vec<f64> = starts[(starts.len() - 1) % waits..]
            .iter()
            .step_by(waits)
            .copied()
            .collect();
        spacings.clear();
        spacings.extend(every_kth.windows(2).map(|w| w[1] - w[0]));
        let Some(sp) = median(spacings) else { continue };
        if let Periodicity::Period(mut per) = r.find_period(&every_kth, spacings, sp, bufs) {
            let need_acf = beat.map_or(cfg.paired_acf_min, |acf| acf + cfg.paired_acf_margin);
            let clearer = per.regularity >= cfg.paired_regularity && per.acf >= need_acf;
            if clearer && !per.provisional && per.period_s >= waits as f64 * cfg.min_period_s {
                per.dips_per_cycle = waits as u32;
                return Periodicity::Period(per);
            }
        }
    }
    found
}
