//! One band of dip levels over a window: its dips, and the period they follow (of the whole
//! window, of its latest dips alone, or of several waits to a cycle).

use super::dips::{find_dips, median_dip};
use super::hist::{median, shortfall_from};
use super::period::{early_cycles, Periodicity, Readings};
use super::provisional::{dips_before_tail, early_tail, few_cycles_by_chance};
use super::provisional::{trusted, Cycles};
use super::waits::several_waits;
use super::{Analysis, Scratch};
use crate::detector::DetectorConfig;

/// A window and its busy level, searched band by band.
pub(super) struct Band<'a> {
    pub ts: &'a [f64],
    pub us: &'a [f32],
    pub mean: f64,
    pub busy_level: f64,
    /// The level lost time is measured against (see [`super::full_level`]).
    pub full_level: f64,
    pub span_s: f64,
    pub whole_hist: Option<&'a [u32; 101]>,
    pub cfg: &'a DetectorConfig,
}

/// What one band found; its dips are left in the scratch's spare list.
pub(super) struct BandOutcome {
    found: Periodicity,
    /// Dip starts (not open at the window's start).
    pub starts: usize,
    spacing: Option<f64>,
    dip_len: Option<f64>,
    /// Where the latest dips a provisional period was found on alone begin.
    tail_from: Option<f64>,
}

impl BandOutcome {
    /// A period, or dips too fast to resolve one.
    pub fn found_any(&self) -> bool {
        !matches!(self.found, Periodicity::None)
    }
}

impl Band<'_> {
    fn readings(&self, dip_len: Option<f64>) -> Readings<'_> {
        Readings {
            ts: self.ts,
            us: self.us,
            mean: self.mean,
            busy_level: self.busy_level,
            dip_len,
            whole_hist: self.whole_hist,
            cfg: self.cfg,
        }
    }

    /// Mark the dips of the band `(enter, leave)` (shares of the busy level) and search their
    /// period. `normal_dips`: the dip starts of the normal band, when this is a later one.
    pub fn search(
        &self,
        (enter, leave): (f64, f64),
        normal_dips: Option<usize>,
        scratch: &mut Scratch,
    ) -> BandOutcome {
        let (h, cfg) = (self.busy_level, self.cfg);
        let Scratch {
            dips,
            starts,
            ends,
            spacings,
            lens,
            acf,
        } = scratch;
        find_dips(self.ts, self.us, enter * h, leave * h, dips);
        starts.clear();
        starts.extend(dips.iter().filter(|d| !d.open_start).map(|d| d.start));
        spacings.clear();
        spacings.extend(starts.windows(2).map(|w| w[1] - w[0]));
        // The period search only counts the spacings, in any order.
        let spacing = median(spacings);
        let dip_len = median_dip(dips, f64::MIN, lens);
        let r = self.readings(dip_len);
        let mut found = match spacing {
            Some(sp) if starts.len() >= early_cycles(cfg) => {
                r.find_period(starts, spacings, sp, acf)
            }
            _ => Periodicity::None,
        };
        // Earlier dips that follow no period (a job's warm-up) can hide a provisional period in
        // the latest dip starts: search those on their own. Then the latest dip ends: the burst
        // that ends a dip shows its cycle as soon as it begins, one burst before the next dip.
        let mut tail_from = None;
        let mut by_ends = false;
        if matches!(found, Periodicity::None) {
            ends.clear();
            ends.extend(dips.iter().filter_map(|d| d.end));
            for (cands, search_all) in [(&starts[..], false), (&ends[..], true)] {
                let Some((tail, sp)) = early_tail(cands, search_all, cfg) else {
                    continue;
                };
                if dips_before_tail(dips, tail[0], search_all) >= cfg.provisional_max_earlier {
                    continue;
                }
                spacings.clear();
                spacings.extend(tail.windows(2).map(|w| w[1] - w[0]));
                found = r.find_period(tail, spacings, sp, acf);
                if !matches!(found, Periodicity::None) {
                    tail_from = tail.first().copied();
                    by_ends = search_all;
                    break;
                }
            }
        }
        if normal_dips.is_none() {
            found = several_waits(&r, starts, found, spacings, acf);
        }
        let cycles = Cycles {
            ts: self.ts,
            us: self.us,
            busy_level: h,
            full_level: self.full_level,
            dips,
            edges: if by_ends { ends } else { starts },
            whole_hist: self.whole_hist,
        };
        BandOutcome {
            found: self.checked(found, &cycles, starts.len(), normal_dips),
            starts: starts.len(),
            spacing,
            dip_len,
            tail_from,
        }
    }

    /// `found`, unless a check rejects it: a provisional period that is not [`trusted`] (with
    /// fewer dip starts than `min_cycles` nothing else counts either), a few cycles evenly
    /// spaced by chance, or (in a later band) a period whose count the normal band's dips
    /// outnumber.
    fn checked(
        &self,
        found: Periodicity,
        w: &Cycles,
        starts: usize,
        normal_dips: Option<usize>,
    ) -> Periodicity {
        let cfg = self.cfg;
        let early = match &found {
            Periodicity::Period(per) if per.provisional => Some(trusted(w, per, cfg)),
            _ => None,
        };
        if early == Some(false) || (early.is_none() && starts < cfg.min_cycles) {
            return Periodicity::None;
        }
        if let Periodicity::Period(per) = &found {
            if few_cycles_by_chance(w.dips, per, per.first_start, cfg) {
                return Periodicity::None;
            }
            if normal_dips.is_some_and(|n0| n0 as f64 > 1.1 * (self.span_s / per.period_s) + 1.0) {
                return Periodicity::TooFast;
            }
        }
        found
    }

    /// `a` takes the band's dips (from the scratch's spare list) and what they show. Returns
    /// whether the search is over: the dips come too fast to resolve, or they follow a period.
    pub fn describe(&self, a: &mut Analysis, out: BandOutcome, scratch: &mut Scratch) -> bool {
        let (ts, us, h, full) = (self.ts, self.us, self.busy_level, self.full_level);
        // A period of the latest dips alone is described by those dips.
        a.dip_s = match out
            .tail_from
            .filter(|_| matches!(out.found, Periodicity::Period(_)))
        {
            None => out.dip_len,
            Some(from) => median_dip(&scratch.dips, from, &mut scratch.lens),
        };
        std::mem::swap(&mut a.dips, &mut scratch.dips);
        a.spacing_s = out.spacing;
        a.too_fast = matches!(out.found, Periodicity::TooFast);
        let per = match out.found {
            Periodicity::TooFast => return true,
            Periodicity::None => return false,
            Periodicity::Period(per) => per,
        };
        // Lost time over the cycles themselves (the window may also hold other behaviour).
        let n = ts.len();
        let from = ts.partition_point(|t| *t < per.first_start);
        let m = (n - from).max(1) as f64;
        let lost = |level: f64| shortfall_from(us, from, level, self.whole_hist) / (level * m);
        a.lost_fraction = lost(full);
        // Far more time lost below the busy level than the dips (marked against it) explain: the
        // busy stretches hide stalls that fall between samples, so the true period is shorter
        // than the one seen. Several waits to a cycle, of uneven lengths: the share of the
        // cycles' time their dips cover.
        let dip_share = if per.dips_per_cycle > 1 {
            let last = ts[n - 1];
            let idle: f64 = a
                .dips
                .iter()
                .filter(|d| d.start >= per.first_start)
                .map(|d| d.end.unwrap_or(last) - d.start)
                .sum();
            idle / (last - per.first_start).max(per.period_s)
        } else {
            a.dip_s.unwrap_or(0.0) / per.period_s
        };
        let below_busy = if full == h { a.lost_fraction } else { lost(h) };
        if below_busy > dip_share + 0.2 {
            a.too_fast = true;
        } else {
            a.period = Some(per);
        }
        true
    }
}
