//! Hysteresis: a candidate becomes a finding after `raise_after` positive evaluations in a row
//! (starvation over a provisional period at its first) and ends after `clear_after_s` without
//! one, so the panel does not flicker.

use std::collections::BTreeMap;

use super::rules::{advice, Candidate, Summary};
use super::{DetectorConfig, FindingEvent};
use crate::model::{Finding, FindingKind, UnixTime};

/// Most findings kept after they end (oldest dropped first).
const MAX_ENDED: usize = 100_000;

/// Hysteresis state of one kind on one GPU.
#[derive(Debug, Clone, Default)]
pub(super) struct Track {
    positives: u32,
    first_start: Option<UnixTime>,
    pub last_positive: UnixTime,
    /// A finding of this kind is active.
    pub raised: bool,
    /// The numbers of the raised finding's summary text.
    summary: Option<Summary>,
    /// The numbers changed since the text was formatted (only while texts are deferred).
    text_stale: bool,
}

/// The findings of every GPU: those going on and those that ended.
#[derive(Debug, Default)]
pub(super) struct Findings {
    pub active: Vec<Finding>,
    pub ended: Vec<Finding>,
    /// Format a refreshed finding's summary text only when it clears or is asked for, not at
    /// every evaluation that changes its numbers.
    pub defer_text: bool,
}

impl Findings {
    /// The active finding of `kind` on `gpu`.
    fn active_mut(&mut self, gpu: u32, kind: FindingKind) -> Option<&mut Finding> {
        self.active
            .iter_mut()
            .find(|f| f.gpu == gpu && f.kind == kind)
    }

    /// A raised finding's newest candidate: the worst severity seen, the newest evidence and
    /// summary numbers (the text formatted now, or marked stale while texts are deferred).
    fn refresh(&mut self, gpu: u32, tr: &mut Track, c: Candidate) {
        let defer = self.defer_text;
        let Some(f) = self.active_mut(gpu, c.kind) else {
            return;
        };
        f.severity = f.severity.max(c.severity);
        f.evidence = c.evidence;
        if tr.summary.as_ref() != Some(&c.summary) {
            if defer {
                tr.text_stale = true;
            } else {
                f.summary = c.summary.text();
            }
            tr.summary = Some(c.summary);
        }
    }

    /// Raise a finding from candidate `c`, its pattern begun at `start`.
    fn raise(
        &mut self,
        gpu: u32,
        tr: &mut Track,
        c: Candidate,
        start: UnixTime,
        t: UnixTime,
    ) -> Finding {
        tr.raised = true;
        let f = Finding {
            kind: c.kind,
            severity: c.severity,
            gpu,
            start: start.min(c.start),
            end: None,
            detected_at: t,
            evidence: c.evidence,
            summary: c.summary.text(),
            advice: advice(c.kind).to_string(),
        };
        tr.summary = Some(c.summary);
        tr.text_stale = false;
        self.active.push(f.clone());
        f
    }

    /// End the active finding of `kind` on `gpu` at `end`, its text brought up to date.
    pub fn end(
        &mut self,
        gpu: u32,
        kind: FindingKind,
        tr: &mut Track,
        end: UnixTime,
    ) -> Option<Finding> {
        tr.raised = false;
        tr.positives = 0;
        tr.first_start = None;
        let i = self
            .active
            .iter()
            .position(|f| f.gpu == gpu && f.kind == kind)?;
        let mut f = self.active.remove(i);
        if std::mem::take(&mut tr.text_stale) {
            if let Some(summary) = &tr.summary {
                f.summary = summary.text();
            }
        }
        f.end = Some(end.max(f.start));
        self.ended.push(f.clone());
        if self.ended.len() > MAX_ENDED {
            self.ended.remove(0);
        }
        Some(f)
    }

    /// Bring the summary texts of the active findings of `gpu` up to date.
    pub fn refresh_texts(&mut self, gpu: u32, tracks: &mut BTreeMap<FindingKind, Track>) {
        for (kind, tr) in tracks.iter_mut().filter(|(_, tr)| tr.text_stale) {
            tr.text_stale = false;
            let Some(summary) = &tr.summary else {
                continue;
            };
            if let Some(f) = self.active_mut(gpu, *kind) {
                f.summary = summary.text();
            }
        }
    }
}

/// End every active finding of `gpu` (its job ended at `end`): each ends at its last positive
/// evaluation, at the latest at `end`.
pub(super) fn end_all(
    tracks: &mut BTreeMap<FindingKind, Track>,
    findings: &mut Findings,
    gpu: u32,
    end: UnixTime,
    events: &mut Vec<FindingEvent>,
) {
    for (kind, tr) in tracks.iter_mut().filter(|(_, tr)| tr.raised) {
        let at = tr.last_positive.min(end);
        if let Some(f) = findings.end(gpu, *kind, tr, at) {
            events.push(FindingEvent::Cleared(f));
        }
    }
}

/// Raise, refresh or clear each kind on GPU `gpu` from this evaluation's candidates. While
/// starvation is raised, erratic stalls (a stretch where the period is not recovered) keep it
/// alive rather than raising a second finding for the same cause.
pub(super) fn apply(
    tracks: &mut BTreeMap<FindingKind, Track>,
    findings: &mut Findings,
    gpu: u32,
    t: UnixTime,
    mut cands: Vec<Candidate>,
    cfg: &DetectorConfig,
    events: &mut Vec<FindingEvent>,
) {
    let starving = tracks
        .get(&FindingKind::InputStarvation)
        .is_some_and(|tr| tr.raised);
    let mut kept_alive = false;
    if starving && cands.iter().any(|c| c.kind == FindingKind::ErraticStalls) {
        cands.retain(|c| c.kind != FindingKind::ErraticStalls);
        if let Some(tr) = tracks.get_mut(&FindingKind::InputStarvation) {
            tr.last_positive = t;
            kept_alive = true;
        }
    }
    let mut seen: Vec<FindingKind> = cands.iter().map(|c| c.kind).collect();
    if kept_alive {
        seen.push(FindingKind::InputStarvation);
    }
    for c in cands {
        let tr = tracks.entry(c.kind).or_default();
        tr.positives += 1;
        tr.last_positive = t;
        let start = *tr.first_start.get_or_insert(c.start);
        if tr.raised {
            findings.refresh(gpu, tr, c);
        } else if tr.positives >= cfg.raise_after.max(1) || c.provisional_period() {
            let f = findings.raise(gpu, tr, c, start, t);
            events.push(FindingEvent::Raised(f));
        }
    }
    for (kind, tr) in tracks.iter_mut() {
        if seen.contains(kind) {
            continue;
        }
        if !tr.raised {
            tr.positives = 0;
            tr.first_start = None;
        } else if t - tr.last_positive >= cfg.clear_after_s {
            let end = tr.last_positive;
            if let Some(f) = findings.end(gpu, *kind, tr, end) {
                events.push(FindingEvent::Cleared(f));
            }
        }
    }
    tracks.retain(|_, tr| tr.raised || tr.positives > 0);
}
