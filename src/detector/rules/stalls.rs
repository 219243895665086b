//! Stalls: input starvation and periodic stalls (dips that follow a period), and erratic stalls
//! (dips that follow none).

use super::candidate::{speedup_bound, Candidate, Summary};
use super::Evaluation;
use crate::detector::signal::Period;
use crate::model::{Evidence, FindingKind, Severity};

/// Starvation or a periodic stall: dips that follow a period of at least `0.9·min_period_s`
/// (within the sampling error of the minimum), still going on, of the job on the GPU now. Below
/// `stall_min_period_s` the pattern is loader starvation; at or above it, a cadence (checkpoint,
/// evaluation), unless at least `cadence_max_lost` of each cycle is lost (a loader so slow the
/// GPU idles between short bursts).
pub fn periodic(e: &Evaluation) -> Option<Candidate> {
    let (cfg, a) = (e.cfg, e.a);
    let p = a.period.filter(|p| {
        p.period_s >= 0.9 * cfg.min_period_s
            && p.ongoing_at(e.now)
            && e.s.of_the_current_job(
                (p.first_start, p.last_start),
                p.period_s,
                cfg.min_cycles,
                e.now,
                cfg,
            )
    })?;
    let lost = a.lost_fraction;
    let confidence = confidence_of(&p, e);
    let mut ev = Evidence {
        period_s: Some(p.period_s),
        dip_s: a.dip_s,
        lost_fraction: Some(lost),
        speedup_bound: Some(speedup_bound(lost)),
        confidence: Some(confidence),
        cycles: Some(p.cycles as u32),
        ..Default::default()
    };
    ev.signals.insert("busy_level".into(), a.busy_level);
    // Several waits to a cycle: the idle time of the whole cycle.
    let dip = if p.dips_per_cycle > 1 {
        ev.dip_s = Some(p.period_s * lost);
        ev.signals
            .insert("waits_per_cycle".into(), p.dips_per_cycle as f64);
        p.period_s * lost
    } else {
        a.dip_s.unwrap_or(p.period_s * lost)
    };
    if p.period_s >= cfg.stall_min_period_s && lost < cfg.cadence_max_lost {
        return (lost >= cfg.stall_min_lost).then_some(Candidate {
            kind: FindingKind::PeriodicStall,
            severity: if lost >= cfg.stall_warn_lost {
                Severity::Warn
            } else {
                Severity::Info
            },
            start: p.first_start,
            summary: Summary::PeriodicStall {
                dip_s: dip,
                period_s: p.period_s,
                lost,
                cycles: p.cycles,
            },
            evidence: ev,
        });
    }
    if lost < cfg.starvation_min_lost {
        return None;
    }
    let confirmed = confirmed(&p, confidence, e);
    if !confirmed {
        ev.period_s = None;
    }
    Some(Candidate {
        kind: FindingKind::InputStarvation,
        severity: if lost >= cfg.high_lost && !p.provisional {
            Severity::High
        } else {
            Severity::Warn
        },
        start: p.first_start,
        summary: Summary::InputStarvation {
            dip_s: dip,
            period_s: p.period_s,
            lost,
            confidence,
            cycles: p.cycles,
            provisional: p.provisional,
            confirmed,
            waits: p.dips_per_cycle,
        },
        evidence: ev,
    })
}

/// Confidence in a period (0..1): mostly the autocorrelation at it, then the cycles seen (eight
/// count in full) and the regularity of the spacings; a provisional period at most
/// `provisional_confidence`.
fn confidence_of(p: &Period, e: &Evaluation) -> f64 {
    let c =
        p.acf.clamp(0.0, 1.0) * 0.6 + (p.cycles as f64 / 8.0).min(1.0) * 0.25 + p.regularity * 0.15;
    c.min(if p.provisional {
        e.cfg.provisional_confidence
    } else {
        1.0
    })
}

/// Whether a starvation period is reported: `confirm_cycles` cycles, or `confirm_span_s` of
/// them, or `confirm_cycles_confident` at `confirm_confidence`. Random stalls fall evenly spaced
/// for three to five stalls by chance often enough that fewer cycles name the stalls but not
/// their period.
fn confirmed(p: &Period, confidence: f64, e: &Evaluation) -> bool {
    let cfg = e.cfg;
    !p.provisional
        && (p.cycles >= cfg.confirm_cycles
            || p.cycles as f64 * p.period_s >= cfg.confirm_span_s
            || (p.cycles >= cfg.confirm_cycles_confident && confidence >= cfg.confirm_confidence))
}

/// Erratic stalls: at least `erratic_min_dips` short dips (median at most `long_gap_s`) of this
/// job in the last rules window (over `named_stalls_windows` of them once stalls are named:
/// random stalls come in sparse spells), the latest recent, that follow no resolvable period
/// still going on, and at least `erratic_min_lost` of the time lost.
pub fn erratic(e: &Evaluation) -> Option<Candidate> {
    let (cfg, a, now) = (e.cfg, e.a, e.now);
    // The dips whose start is known (no list built: read where needed).
    let stalls = || a.dips.iter().filter(|d| !d.open_start);
    let (first, last) = (stalls().next()?, stalls().next_back()?);
    let gap_limit = a.spacing_s.map_or(5.0, |sp| (3.0 * sp).max(5.0));
    let span = if e.stalls_named {
        cfg.named_stalls_windows * cfg.rules_window_s
    } else {
        cfg.rules_window_s
    };
    let counted = || {
        stalls()
            .filter(|d| now - d.start <= span && e.s.mem_steady_since.is_none_or(|t| d.start >= t))
    };
    let recent = now - last.start <= gap_limit
        && e.s.of_the_current_job(
            (first.start, last.start),
            a.spacing_s.unwrap_or(1.0),
            cfg.erratic_min_dips,
            now,
            cfg,
        )
        && counted().count() >= cfg.erratic_min_dips;
    let no_period = a
        .period
        .is_none_or(|p| p.period_s < 0.9 * cfg.min_period_s || !p.ongoing_at(now));
    let short = a.dip_s.is_some_and(|d| d <= cfg.long_gap_s);
    let n_stalls = stalls().count();
    if !(recent
        && no_period
        && n_stalls >= cfg.erratic_min_dips
        && short
        && a.lost_fraction >= cfg.erratic_min_lost)
    {
        return None;
    }
    let sub_second = a.too_fast
        || a.period
            .is_some_and(|p| p.period_s < 0.9 * cfg.min_period_s)
        || a.dip_s.is_some_and(|d| d < 1.0)
        || a.spacing_s.is_some_and(|s| s < cfg.min_period_s);
    let lost = a.lost_fraction;
    let mut ev = Evidence {
        dip_s: a.dip_s,
        lost_fraction: Some(lost),
        speedup_bound: Some(speedup_bound(lost)),
        ..Default::default()
    };
    ev.signals.insert("stalls".into(), n_stalls as f64);
    ev.signals.insert("busy_level".into(), a.busy_level);
    Some(Candidate {
        kind: FindingKind::ErraticStalls,
        severity: if lost >= cfg.high_lost {
            Severity::High
        } else {
            Severity::Warn
        },
        // The stalls that name it: earlier dips of the window (a warm-up) are not its evidence.
        start: counted().next().map_or(first.start, |d| d.start),
        summary: Summary::ErraticStalls {
            stalls: n_stalls,
            span_s: a.span_s,
            sub_second,
            lost,
        },
        evidence: ev,
    })
}
