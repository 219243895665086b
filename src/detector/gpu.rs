//! What the detector keeps of one GPU between evaluations, and when its last analysis of the
//! window can be reused instead of analysing it again.

use std::collections::BTreeMap;

use super::health_track::HealthTrack;
use super::hysteresis::Track;
use super::job::JobContext;
use super::signal::{self, Analysis};
use super::window::{RecentActivity, Window};
use super::DetectorConfig;
use crate::history::GpuHistory;
use crate::model::{FindingKind, UnixTime, Watch};

#[derive(Debug)]
pub(super) struct GpuState {
    pub window: Window,
    pub job: JobContext,
    /// Hysteresis of each kind of finding on this GPU.
    pub tracks: BTreeMap<FindingKind, Track>,
    pub verdict: Option<FindingKind>,
    pub recent: RecentActivity,
    /// Stalls the rules window holds on a GPU without a finding (see [`Watch`]), and when they
    /// were last seen.
    pub watch: Option<Watch>,
    pub watch_at: UnixTime,
    /// A full rules window of data: cross-GPU comparisons may judge it.
    pub comparable: bool,
    pub holds_memory: bool,
    /// The most power the GPU drew on a tick at or above `busy_util`.
    pub busy_power_w: Option<f64>,
    /// The last full analysis of the window and its time.
    pub analysis: Option<Analysis>,
    pub analysed_at: UnixTime,
    /// When a dip's start and a dip's end last brought an evaluation forward
    /// ([`Self::deep_edge_arrives`]).
    early_eval_at: [Option<UnixTime>; 2],
    /// Faults and health counters.
    pub health: HealthTrack,
}

impl GpuState {
    pub fn new(cfg: &DetectorConfig) -> Self {
        GpuState {
            window: Window::new(cfg),
            job: JobContext::default(),
            tracks: BTreeMap::new(),
            verdict: None,
            recent: RecentActivity::default(),
            watch: None,
            watch_at: 0.0,
            comparable: false,
            holds_memory: false,
            busy_power_w: None,
            analysis: None,
            analysed_at: 0.0,
            early_eval_at: [None; 2],
            health: HealthTrack::default(),
        }
    }

    /// Take in the tick of `h`: its new utilization readings (`fresh`, filled in where a polled
    /// source missed a burst) and its memory reading. Samples before `keep_from`, and before the
    /// current job's context, leave the window.
    pub fn absorb(
        &mut self,
        h: &GpuHistory,
        keep_from: UnixTime,
        fresh: &mut Vec<(f64, f32)>,
        polled: bool,
        cfg: &DetectorConfig,
    ) {
        self.window.take_fresh(h, fresh);
        if polled || h.util.is_empty() {
            self.window.fill_missed_burst(h, fresh, cfg);
        }
        self.job.observe(h, cfg);
        self.health.watch_throttle(h);
        if let Some(m) = h.ticks.last().filter(|tk| tk.ok).map(|tk| &tk.metrics) {
            if let (Some(u), Some(p)) = (m.util_gpu, m.power_w) {
                if u >= cfg.busy_util && self.busy_power_w.is_none_or(|b| p > b) {
                    self.busy_power_w = Some(p);
                }
            }
        }
        let job_start = self.job.job_from.unwrap_or(f64::NEG_INFINITY);
        self.window.push(fresh, keep_from.max(job_start));
    }

    /// The job on this GPU ended at `end`: its findings' tracks, its analysis, its stall watch
    /// and its readings go (the caller ends the findings), and what follows starts clean.
    pub fn close_job(&mut self, end: UnixTime) -> Option<Analysis> {
        self.job.close(end);
        self.tracks.clear();
        self.watch = None;
        self.early_eval_at = [None; 2];
        if let Some(from) = self.job.job_from {
            self.window.push(&[], from);
        }
        self.analysis.take()
    }

    /// Seconds of readings the window holds of the current job.
    pub fn job_span(&self) -> f64 {
        match (self.window.ts.front(), self.window.ts.back()) {
            (Some(a), Some(b)) => b - a,
            _ => 0.0,
        }
    }

    /// Whether the last analysis still describes the window: a quiet GPU (see [`Self::quiet`]),
    /// or a raised periodic finding whose pattern goes on (see [`Self::pattern_goes_on`]).
    pub fn reusable(&self, t: UnixTime, cfg: &DetectorConfig) -> bool {
        self.quiet(t, cfg) || self.pattern_goes_on(t, cfg)
    }

    /// The tracks of kinds judged on the window's analysis: every kind but tensor cores idle,
    /// which the tick readings alone decide, so it never keeps an analysis from being reused.
    fn window_tracks(&self) -> impl Iterator<Item = (&FindingKind, &Track)> {
        self.tracks
            .iter()
            .filter(|(k, _)| **k != FindingKind::TensorCoresIdle)
    }

    /// A raised starvation or periodic-stall finding is the GPU's only track (beside tensor
    /// cores idle), the last analysis
    /// found its period, less than one period (and `reuse_s`) has passed, and the samples since
    /// hold both a dip and a busy reading of that analysis's bands: the pattern is still there.
    /// The rules then run on the last analysis; a stretch without dips or without work analyses
    /// again at once, so clearing is not delayed.
    fn pattern_goes_on(&self, t: UnixTime, cfg: &DetectorConfig) -> bool {
        let mut window_tracks = self.window_tracks().peekable();
        let periodic_only = window_tracks.peek().is_some()
            && window_tracks.all(|(k, tr)| {
                tr.raised && matches!(k, FindingKind::InputStarvation | FindingKind::PeriodicStall)
            });
        periodic_only
            && self.analysis.as_ref().is_some_and(|a| {
                a.period.as_ref().is_some_and(|p| {
                    t - self.analysed_at < p.period_s.min(cfg.reuse_s)
                        && (self.window.low_since as f64) < 0.5 * a.busy_level
                        && (self.window.high_since as f64) >= 0.8 * a.busy_level
                })
            })
    }

    /// A busy GPU without findings (busy level at least `reuse_min_busy`) whose analysis spans a
    /// rules window, found no period, and whose samples since all stayed at or above
    /// `reuse_band` of its busy level: no dip of any band can have begun. It keeps that analysis
    /// for up to `reuse_s`; the tick rules still run on fresh readings every evaluation.
    fn quiet(&self, t: UnixTime, cfg: &DetectorConfig) -> bool {
        self.window_tracks().next().is_none()
            && t - self.analysed_at < cfg.reuse_s
            && self.analysis.as_ref().is_some_and(|a| {
                a.busy_level >= cfg.reuse_min_busy
                    && a.span_s >= cfg.rules_window_s
                    && a.period.is_none()
                    && (self.window.low_since as f64) >= cfg.reuse_band * a.busy_level
            })
    }

    /// Whether a deep dip begins, or a burst ends one, among the `fresh` samples (`prev` the
    /// sample before them) that could complete a provisional period (see
    /// [`signal::completing_edge`]) on a GPU not yet called starving. Such an edge is evaluated
    /// at once rather than at the next evaluation (up to `eval_interval_s` later); each kind of
    /// edge at most once per shortest provisional period.
    pub fn deep_edge_arrives(
        &mut self,
        prev: Option<f32>,
        fresh: &[(f64, f32)],
        t: UnixTime,
        cfg: &DetectorConfig,
    ) -> bool {
        let Some(a) = self.analysis.as_ref() else {
            return false;
        };
        if self
            .tracks
            .get(&FindingKind::InputStarvation)
            .is_some_and(|tr| tr.raised)
        {
            return false;
        }
        let mut prev = prev;
        for &(_, u) in fresh {
            if let Some(edge) = prev.and_then(|v| signal::completing_edge(a, v, u, cfg)) {
                let last = &mut self.early_eval_at[edge as usize];
                if last.is_none_or(|e| t - e >= cfg.provisional_min_period_s) {
                    *last = Some(t);
                    return true;
                }
            }
            prev = Some(u);
        }
        false
    }

    /// Whether a finding of `kind` is raised on this GPU.
    pub fn raised(&self, kind: FindingKind) -> bool {
        self.tracks.get(&kind).is_some_and(|tr| tr.raised)
    }
}
