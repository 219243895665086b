//! Names why a GPU is not busier, from its history.
//!
//! Each tick the detector takes the new driver utilization windows of every GPU into its own short
//! buffer (cheap). Once per `eval_interval_s` of data time it analyses the last `window_s` of them
//! ([`signal`]), summarises the recent ticks, and runs the [`rules`]; a deep dip (or the burst
//! that ends one) that may complete a provisional period is evaluated at the tick it arrives. A
//! candidate becomes a finding after `raise_after` positive evaluations in a row (starvation over
//! a provisional period at once) and ends after `clear_after_s` without one, so the panel does not
//! flicker.

mod config;
pub mod rules;
pub mod signal;
#[cfg(any(test, feature = "testing"))]
#[cfg(any(test, feature = "testing"))]
pub mod synth;

use std::collections::{BTreeMap, VecDeque};

use crate::history::GpuHistory;
use crate::model::{
    throttle, DeviceInfo, Finding, FindingKind, Severity, SystemInfo, UnixTime, Watch,
};
pub use config::DetectorConfig;
use rules::{Candidate, TickSummary};

/// A finding raised or cleared at one evaluation.
#[derive(Debug, Clone, PartialEq)]
pub enum FindingEvent {
    Raised(Finding),
    Cleared(Finding),
}

/// Hysteresis state of one kind on one GPU.
#[derive(Debug, Clone, Default)]
struct Track {
    positives: u32,
    first_start: Option<UnixTime>,
    last_positive: UnixTime,
    /// Position in `Detector::active` while raised.
    raised: bool,
    /// The numbers of the raised finding's summary text.
    summary: Option<rules::Summary>,
    /// The numbers changed since the text was formatted (only while texts are deferred).
    text_stale: bool,
}

#[derive(Debug, Default)]
struct GpuState {
    /// Utilization samples `(t, percent)` of the last `window_s`, oldest first.
    ts: VecDeque<f64>,
    us: VecDeque<f32>,
    /// Histograms of `us`.
    hist: signal::WindowHist,
    last_t: Option<f64>,
    tracks: BTreeMap<FindingKind, Track>,
    verdict: Option<FindingKind>,
    recent_mean: Option<f64>,
    /// Seconds of the rules window with activity (≥ `idle_util`), and the separate bursts of it.
    recent_active_s: f64,
    recent_bursts: usize,
    /// Stalls the rules window holds on a GPU without a finding (see [`Watch`]), and when they
    /// were last seen.
    watch: Option<Watch>,
    watch_at: UnixTime,
    comparable: bool,
    holds_memory: bool,
    /// The last full analysis of the window, its time, and the lowest sample taken in since.
    analysis: Option<signal::Analysis>,
    analysed_at: UnixTime,
    low_since: f32,
    high_since: f32,
    /// The last power reading of a polled source and the time of its tick (see
    /// [`POWER_BURST_W`]).
    last_power: Option<f64>,
    power_t: Option<UnixTime>,
    /// The last reading taken as a missed burst: its time and the value the source read.
    filled: Option<(UnixTime, f32)>,
    /// The last tick on which no process held a context on the GPU (see
    /// [`rules::NO_CONTEXT_BYTES`]), and the first of that stretch without one.
    no_context_at: Option<UnixTime>,
    context_lost_at: Option<UnixTime>,
    /// Whether the last memory reading showed a context, the first tick of the current context
    /// (the samples before it are other jobs' and leave the window), and the last tick whose
    /// memory was read.
    had_context: Option<bool>,
    context_since: Option<UnixTime>,
    memory_t: UnixTime,
    /// The memory in use the current stretch of steady readings holds to (within
    /// [`rules::MEM_STEADY_SHARE`] or [`rules::MEM_STEADY_BYTES`]), and the first tick of that
    /// stretch: a job's start-up moves it by GiBs (see [`SETTLED_MARGIN_S`]).
    mem_anchor: Option<u64>,
    mem_settled_since: Option<UnixTime>,
    /// When a dip's start and a dip's end last brought an evaluation forward
    /// ([`Self::deep_edge_arrives`]).
    early_eval_at: [Option<UnixTime>; 2],
}

/// A window without a period whose memory in use settled at least this long after its first
/// sample is analysed again from the settling on: a job's start-up (model load, cuDNN trying
/// algorithms: memory moving by GiBs, utilization blips as high as a starving job's bursts) can
/// hide the pattern that follows it for as long as it stays in the window (H200 run 7: a 10 s
/// loader's whole job, 68 s, never named in the whole recording; named from its slice).
const SETTLED_MARGIN_S: f64 = 2.0;

/// A GPU whose last analysis raised nothing, whose busy level is at least this, and whose new
/// samples all stayed in the top band (no dip of any band can have begun) keeps that analysis for
/// up to [`REUSE_S`]: the tick rules still run on fresh readings every evaluation.
const QUIET_MIN_BUSY: f64 = 60.0;
/// Share of the busy level every new sample must reach (the shallow band's leave level).
const QUIET_BAND: f64 = 0.95;
/// Seconds of activity in the rules window before a GPU without findings is called busy.
const BUSY_EVIDENCE_S: f64 = 2.0;
/// Separate bursts of activity in the rules window that make a GPU holding memory not idle.
const MIN_BURSTS: usize = 3;
/// Longest a quiet GPU's analysis is reused, seconds of data time.
const REUSE_S: f64 = 5.0;

impl GpuState {
    /// Whether the last analysis still describes the window: a quiet GPU (see
    /// [`QUIET_MIN_BUSY`]), or a raised periodic finding whose pattern goes on (see
    /// [`Self::pattern_goes_on`]).
    fn reusable(&self, t: UnixTime, rules_window_s: f64) -> bool {
        self.quiet(t, rules_window_s) || self.pattern_goes_on(t)
    }

    /// A raised starvation or periodic-stall finding is the GPU's only track, the last analysis
    /// found its period, less than one period (and [`REUSE_S`]) has passed, and the samples since
    /// hold both a dip and a busy reading of that analysis's bands: the pattern is still there.
    /// The rules then run on the last analysis; a stretch without dips or without work analyses
    /// again at once, so clearing is not delayed.
    fn pattern_goes_on(&self, t: UnixTime) -> bool {
        let periodic_only = !self.tracks.is_empty()
            && self.tracks.iter().all(|(k, tr)| {
                tr.raised && matches!(k, FindingKind::InputStarvation | FindingKind::PeriodicStall)
            });
        periodic_only
            && self.analysis.as_ref().is_some_and(|a| {
                a.period.as_ref().is_some_and(|p| {
                    t - self.analysed_at < p.period_s.min(REUSE_S)
                        && (self.low_since as f64) < 0.5 * a.busy_level
                        && (self.high_since as f64) >= 0.8 * a.busy_level
                })
            })
    }

    /// Whether a deep dip begins, or a burst ends one, among the `fresh` samples (`prev` the
    /// sample before them) that could complete a provisional period (see
    /// [`signal::completing_edge`]) on a GPU not yet called starving. Such an edge is
    /// evaluated at once rather than at the next evaluation (up to `eval_interval_s` later); each
    /// kind of edge at most once per shortest provisional period.
    fn deep_edge_arrives(
        &mut self,
        prev: Option<f32>,
        fresh: &[(f64, f32)],
        t: UnixTime,
        p: &signal::SignalParams,
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
            if let Some(edge) = prev.and_then(|v| signal::completing_edge(a, v, u, p)) {
                let last = &mut self.early_eval_at[edge as usize];
                if last.is_none_or(|e| t - e >= signal::EARLY_MIN_PERIOD_S) {
                    *last = Some(t);
                    return true;
                }
            }
            prev = Some(u);
        }
        false
    }

    /// Whether the last analysis still describes a busy GPU without findings (see [`QUIET_MIN_BUSY`]).
    fn quiet(&self, t: UnixTime, rules_window_s: f64) -> bool {
        self.tracks.is_empty()
            && t - self.analysed_at < REUSE_S
            && self.analysis.as_ref().is_some_and(|a| {
                a.busy_level >= QUIET_MIN_BUSY
                    && a.span_s >= rules_window_s
                    && a.period.is_none()
                    && (self.low_since as f64) >= QUIET_BAND * a.busy_level
            })
    }
}

/// Kinds in the order a verdict prefers them when severities tie.
const PRIORITY: [FindingKind; 12] = [
    FindingKind::InputStarvation,
    FindingKind::ErraticStalls,
    FindingKind::TransferBound,
    FindingKind::HostBound,
    FindingKind::BusyButIdle,
    FindingKind::PeriodicStall,
    FindingKind::MemoryIdle,
    FindingKind::Throttled,
    FindingKind::MemoryPressure,
    FindingKind::PcieDegraded,
    FindingKind::SingleGpuBusy,
    FindingKind::Imbalance,
];

/// Rank of a kind in [`PRIORITY`] (lower is preferred).
pub fn priority(kind: FindingKind) -> usize {
    PRIORITY
        .iter()
        .position(|k| *k == kind)
        .unwrap_or(PRIORITY.len())
}

/// Most findings kept after they end (oldest dropped first).
const MAX_ENDED: usize = 100_000;

/// A tick this close before an evaluation is due evaluates already (sample times jitter by a few
/// milliseconds around the interval).
const EVAL_SLACK_S: f64 = 0.05;

/// Runs the rules over every GPU's history.
#[derive(Debug)]
pub struct Detector {
    config: DetectorConfig,
    devices: Vec<DeviceInfo>,
    gpus: Vec<GpuState>,
    active: Vec<Finding>,
    ended: Vec<Finding>,
    next_eval: Option<UnixTime>,
    /// Buffer for the windows of one tick (no allocation per tick).
    scratch: Vec<(f64, f32)>,
    /// Buffers of the window analyses.
    analysis_scratch: signal::Scratch,
    /// Increases whenever an active finding is raised, refreshed or cleared.
    revision: u64,
    /// Format a refreshed finding's summary text only when it clears or is asked for
    /// ([`Self::refresh_summaries`]), not at every evaluation that changes its numbers.
    defer_text: bool,
    /// The utilization windows are polled readings, one per poll (an nvidia-smi log): a burst
    /// they missed may show in the power (see [`POWER_BURST_W`]).
    polled: bool,
}

impl Detector {
    pub fn new(config: DetectorConfig, system: &SystemInfo) -> Self {
        Detector {
            devices: system.devices.clone(),
            gpus: system
                .devices
                .iter()
                .map(|_| GpuState {
                    hist: signal::WindowHist::new(config.signal_params().active_util),
                    ..Default::default()
                })
                .collect(),
            config,
            active: Vec::new(),
            ended: Vec::new(),
            next_eval: None,
            scratch: Vec::new(),
            analysis_scratch: signal::Scratch::default(),
            revision: 0,
            defer_text: false,
            polled: system.backend == crate::backend::smi_csv::BACKEND,
        }
    }

    pub fn config(&self) -> &DetectorConfig {
        &self.config
    }

    /// Defer the summary texts of refreshed findings: a reader that only looks at the findings
    /// when they clear and at the end (`analyze`) skips formatting the texts in between. Every
    /// text is the same when read: a clearing finding's text is brought up to date before it is
    /// reported, and [`Self::refresh_summaries`] does so for the active ones.
    pub fn defer_summaries(&mut self) {
        self.defer_text = true;
    }

    /// Bring the summary texts of the active findings up to date (needed only after
    /// [`Self::defer_summaries`]).
    pub fn refresh_summaries(&mut self) {
        for (pos, state) in self.gpus.iter_mut().enumerate() {
            let gpu = self.devices.get(pos).map(|d| d.index).unwrap_or(pos as u32);
            for (kind, tr) in state.tracks.iter_mut().filter(|(_, tr)| tr.text_stale) {
                tr.text_stale = false;
                let Some(summary) = &tr.summary else {
                    continue;
                };
                if let Some(f) = self
                    .active
                    .iter_mut()
                    .find(|f| f.gpu == gpu && f.kind == *kind)
                {
                    f.summary = summary.text();
                }
            }
        }
    }

    /// Take in the tick at `t` and, when due, evaluate every GPU.
    pub fn update(&mut self, t: UnixTime, gpus: &[&GpuHistory]) -> Vec<FindingEvent> {
        let params = self.config.signal_params();
        let mut early = false;
        for (state, h) in self.gpus.iter_mut().zip(gpus) {
            let prev = state.us.back().copied();
            absorb(
                state,
                h,
                t - self.config.window_s,
                &mut self.scratch,
                self.polled,
            );
            early |= state.deep_edge_arrives(prev, &self.scratch, t, &params);
        }
        let interval = self.config.eval_interval_s;
        let due = self.next_eval.is_none_or(|n| t >= n - EVAL_SLACK_S);
        if !due && !early {
            return Vec::new();
        }
        if due {
            // On the cadence, not from this tick: ticks a few milliseconds early would otherwise
            // stretch each interval by one tick.
            self.next_eval = Some(match self.next_eval {
                Some(n) if t < n + interval - EVAL_SLACK_S => n + interval,
                _ => t + interval,
            });
        }
        self.revision += 1;
        self.evaluate(t, gpus)
    }

    fn evaluate(&mut self, t: UnixTime, gpus: &[&GpuHistory]) -> Vec<FindingEvent> {
        let params = self.config.signal_params();
        let mut per_gpu: Vec<Vec<Candidate>> = Vec::with_capacity(self.gpus.len());
        for (pos, state) in self.gpus.iter_mut().enumerate() {
            if !state.reusable(t, self.config.rules_window_s) {
                if let Some(old) = state.analysis.take() {
                    self.analysis_scratch.recycle(old.dips);
                }
                let (ts, us) = (state.ts.make_contiguous(), state.us.make_contiguous());
                let mut analysis = signal::analyse_window(
                    ts,
                    us,
                    &params,
                    Some(&state.hist),
                    &mut self.analysis_scratch,
                );
                let settled = state
                    .mem_settled_since
                    .filter(|s| ts.first().is_some_and(|t0| *s >= t0 + SETTLED_MARGIN_S));
                if let (None, Some(settled)) = (&analysis.period, settled) {
                    let from = ts.partition_point(|t| *t < settled);
                    let since = signal::analyse_window(
                        &ts[from..],
                        &us[from..],
                        &params,
                        None,
                        &mut self.analysis_scratch,
                    );
                    if since.period.is_some() {
                        self.analysis_scratch
                            .recycle(std::mem::replace(&mut analysis, since).dips);
                    } else {
                        self.analysis_scratch.recycle(since.dips);
                    }
                }
                state.analysis = Some(analysis);
                state.analysed_at = t;
                state.low_since = f32::INFINITY;
                state.high_since = f32::NEG_INFINITY;
            }
            let Some(analysis) = state.analysis.as_ref() else {
                continue;
            };
            let since = t - self.config.rules_window_s;
            let busy_tick = self.config.busy_util * 0.5;
            let mut summary = gpus
                .get(pos)
                .map(|h| summarise(h, since, busy_tick))
                .unwrap_or_default();
            if let (Some(h), Some(dev)) = (gpus.get(pos), self.devices.get(pos)) {
                degraded_link(&mut summary, h, dev, since, busy_tick);
            }
            // Steady over every tick summarised: since it settled, as far back as that goes.
            if summary.mem_steady_since.is_some_and(|m| m <= since) {
                if let Some(settled) = state.mem_settled_since {
                    summary.mem_steady_since = Some(settled.min(since));
                }
            }
            summary.no_context_at = state.no_context_at;
            summary.context_lost_at = state.context_lost_at;
            let recent_from = t - self.config.rules_window_s;
            let (mut rn, mut rsum) = (0usize, 0.0f64);
            let (mut active_s, mut bursts, mut next_t) = (0.0f64, 0usize, None::<f64>);
            let mut active_n = 0usize;
            let mut next_active = false;
            // Newest first over plain slices (no-op when the window is already contiguous).
            let (ts, us) = (state.ts.make_contiguous(), state.us.make_contiguous());
            for (tt, u) in ts.iter().zip(us.iter()).rev() {
                if *tt < recent_from {
                    break;
                }
                rn += 1;
                rsum += *u as f64;
                let active = *u as f64 >= self.config.idle_util;
                if active {
                    active_n += 1;
                    // Each reading stands for the time to the next one (at most a second).
                    active_s += next_t.map_or(signal::GRID_S, |n| (n - tt).clamp(0.0, 1.0));
                } else if next_active {
                    bursts += 1;
                }
                next_active = active;
                next_t = Some(*tt);
            }
            bursts += usize::from(next_active);
            state.recent_mean = (rn > 0).then(|| rsum / rn as f64);
            // A source that reads seldom (a scrape every 15 s) has few readings, each standing
            // for its whole interval: most of them active is evidence too.
            state.recent_active_s = if rn >= 2 && active_n * 2 >= rn {
                active_s.max(BUSY_EVIDENCE_S)
            } else {
                active_s
            };
            state.recent_bursts = bursts;
            // Cross-GPU comparisons wait for a full rules window of data.
            state.comparable = analysis.span_s >= self.config.rules_window_s * 0.95;
            state.holds_memory = summary.mem_used_last.is_some_and(|m| m >= 1 << 30);
            let stalls_named = [FindingKind::ErraticStalls, FindingKind::InputStarvation]
                .iter()
                .any(|k| state.tracks.get(k).is_some_and(|tr| tr.raised));
            per_gpu.push(rules::per_gpu(
                &self.config,
                self.devices.get(pos),
                analysis,
                &summary,
                t,
                stalls_named,
            ));
        }
        let means: Vec<Option<f64>> = self
            .gpus
            .iter()
            .map(|g| g.recent_mean.filter(|_| g.comparable))
            .collect();
        let holds: Vec<bool> = self.gpus.iter().map(|g| g.holds_memory).collect();
        let explained: Vec<bool> = per_gpu
            .iter()
            .enumerate()
            .map(|(pos, c)| {
                let gpu = self.devices.get(pos).map(|d| d.index);
                c.iter().any(|c| c.severity >= Severity::Warn)
                    || self.active.iter().any(|f| {
                        Some(f.gpu) == gpu
                            && f.severity >= Severity::Warn
                            && f.kind != FindingKind::Imbalance
                    })
            })
            .collect();
        for (pos, c) in rules::cross_gpu(
            &self.config,
            &means,
            &holds,
            &explained,
            t,
            self.config.rules_window_s,
        ) {
            if let Some(v) = per_gpu.get_mut(pos) {
                v.push(c);
            }
        }
        let mut events = Vec::new();
        for (pos, cands) in per_gpu.into_iter().enumerate() {
            self.apply(pos, t, cands, &mut events);
        }
        events
    }

    /// Hysteresis: raise, refresh or clear each kind on GPU `pos`.
    fn apply(
        &mut self,
        pos: usize,
        t: UnixTime,
        cands: Vec<Candidate>,
        events: &mut Vec<FindingEvent>,
    ) {
        let gpu = self.devices.get(pos).map(|d| d.index).unwrap_or(pos as u32);
        let raise_after = self.config.raise_after.max(1);
        let clear_after = self.config.clear_after_s;
        let Some(state) = self.gpus.get_mut(pos) else {
            return;
        };
        // While starvation is raised, a stretch where the period is not recovered (erratic
        // stalls) keeps it alive rather than raising a second finding for the same cause.
        let mut cands = cands;
        let starving = state
            .tracks
            .get(&FindingKind::InputStarvation)
            .is_some_and(|tr| tr.raised);
        if starving && cands.iter().any(|c| c.kind == FindingKind::ErraticStalls) {
            cands.retain(|c| c.kind != FindingKind::ErraticStalls);
            if let Some(tr) = state.tracks.get_mut(&FindingKind::InputStarvation) {
                tr.last_positive = t;
            }
        }
        let seen: Vec<FindingKind> = cands
            .iter()
            .map(|c| c.kind)
            .chain(
                starving
                    .then_some(FindingKind::InputStarvation)
                    .filter(|_| {
                        state
                            .tracks
                            .get(&FindingKind::InputStarvation)
                            .is_some_and(|tr| tr.last_positive == t)
                    }),
            )
            .collect();
        for c in cands {
            let tr = state.tracks.entry(c.kind).or_default();
            tr.positives += 1;
            tr.last_positive = t;
            let start = *tr.first_start.get_or_insert(c.start);
            if tr.raised {
                if let Some(f) = self
                    .active
                    .iter_mut()
                    .find(|f| f.gpu == gpu && f.kind == c.kind)
                {
                    f.severity = f.severity.max(c.severity);
                    f.evidence = c.evidence;
                    if tr.summary.as_ref() != Some(&c.summary) {
                        if self.defer_text {
                            tr.text_stale = true;
                        } else {
                            f.summary = c.summary.text();
                        }
                        tr.summary = Some(c.summary);
                    }
                }
            } else if tr.positives >= raise_after || c.provisional_period() {
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
                    advice: rules::advice(c.kind).to_string(),
                };
                tr.summary = Some(c.summary);
                tr.text_stale = false;
                events.push(FindingEvent::Raised(f.clone()));
                self.active.push(f);
            }
        }
        for (kind, tr) in state.tracks.iter_mut() {
            if seen.contains(kind) {
                continue;
            }
            if !tr.raised {
                tr.positives = 0;
                tr.first_start = None;
            } else if t - tr.last_positive >= clear_after {
                tr.raised = false;
                tr.positives = 0;
                tr.first_start = None;
                if let Some(i) = self
                    .active
                    .iter()
                    .position(|f| f.gpu == gpu && f.kind == *kind)
                {
                    let mut f = self.active.remove(i);
                    if std::mem::take(&mut tr.text_stale) {
                        if let Some(summary) = &tr.summary {
                            f.summary = summary.text();
                        }
                    }
                    f.end = Some(tr.last_positive);
                    events.push(FindingEvent::Cleared(f.clone()));
                    self.ended.push(f);
                    if self.ended.len() > MAX_ENDED {
                        self.ended.remove(0);
                    }
                }
            }
        }
        state.tracks.retain(|_, tr| tr.raised || tr.positives > 0);
        let verdict = self
            .active
            .iter()
            .filter(|f| f.gpu == gpu && f.severity >= Severity::Warn)
            .min_by_key(|f| (std::cmp::Reverse(f.severity), priority(f.kind)))
            .map(|f| f.kind);
        // Without a finding: busy on enough evidence (a mean at or above `idle_util` from at
        // least BUSY_EVIDENCE_S of activity, not a lone blip), or work that keeps coming in
        // bursts to a GPU holding a context (a job waiting between batches is not idle).
        let busy = state
            .recent_mean
            .is_some_and(|m| m >= self.config.idle_util)
            && state.recent_active_s >= BUSY_EVIDENCE_S;
        let bursts_keep_coming = state.holds_memory && state.recent_bursts >= MIN_BURSTS;
        let verdict = verdict.unwrap_or(if busy || bursts_keep_coming {
            FindingKind::Healthy
        } else {
            FindingKind::Idle
        });
        state.verdict = Some(verdict);
        // A GPU without a finding: called healthy, or idle while a process holds its memory
        // (a slow loader's bursts come too seldom to call it busy). Stalls already shown stay
        // while a longer span, as for named stalls, still holds enough of them: a slow loader's
        // two stalls in 20 s would otherwise come and go with each burst.
        let unnamed =
            verdict == FindingKind::Healthy || (verdict == FindingKind::Idle && state.holds_memory);
        let rules_window = self.config.rules_window_s;
        let seen = match &state.analysis {
            Some(a) if unnamed && a.span_s >= self.config.min_span_s => {
                watch_of(a, t, rules_window).or_else(|| {
                    state
                        .watch
                        .and_then(|_| watch_of(a, t, rules::NAMED_STALLS_WINDOWS * rules_window))
                })
            }
            _ => None,
        };
        // An evaluation that sees too few stalls (a window analysed again from another start)
        // does not hide them at once: they stay up to WATCH_HOLD_S unless a finding came.
        state.watch = match (seen, state.watch) {
            (Some(w), _) => {
                state.watch_at = t;
                Some(w)
            }
            (None, Some(w)) if unnamed && t - state.watch_at < WATCH_HOLD_S => Some(w),
            _ => None,
        };
    }

    /// What the detector sees on GPU `gpu` while it has no finding (see [`Watch`]).
    pub fn watch(&self, gpu: usize) -> Option<Watch> {
        self.gpus.get(gpu).and_then(|g| g.watch)
    }

    /// The current verdict of GPU `gpu` (position in the system's device list).
    pub fn verdict(&self, gpu: usize) -> FindingKind {
        self.gpus
            .get(gpu)
            .and_then(|g| g.verdict)
            .unwrap_or(FindingKind::Idle)
    }

    /// Changes whenever the active findings or verdicts may have changed (each evaluation), so a
    /// reader can skip copying them otherwise.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Findings still going on.
    pub fn active(&self) -> &[Finding] {
        &self.active
    }

    /// Findings that have ended.
    pub fn ended(&self) -> &[Finding] {
        &self.ended
    }
}

/// A rise of the power reading from one tick to the next of at least this many watts (and this
/// share of the earlier reading), on a tick whose polled utilization shows no activity, is a
/// burst the reading missed: a source without driver windows (an nvidia-smi log) sees one 200 ms
/// window per poll and misses some single-window bursts, while the power, a ~1 s average, rises
/// at every one (H200: 12–27 W over 120 W idle; no such rise on the idle, memory-hog, healthy,
/// checkpoint or host-bound traces).
const POWER_BURST_W: f64 = 6.0;
const POWER_BURST_SHARE: f64 = 0.04;

/// Append the utilization that arrived since the last tick and drop what left the window.
/// `polled`: the source's windows are polled readings, one per poll (an nvidia-smi log), not
/// every driver window.
fn absorb(
    state: &mut GpuState,
    h: &GpuHistory,
    keep_from: UnixTime,
    fresh: &mut Vec<(f64, f32)>,
    polled: bool,
) {
    let last = state.last_t;
    fresh.clear();
    if h.util.is_empty() {
        // A source without driver windows: the tick's own reading.
        if let Some(tk) = h.ticks.last() {
            if let Some(u) = tk
                .metrics
                .util_gpu
                .filter(|_| last.is_none_or(|l| tk.t > l))
            {
                fresh.push((tk.t, u as f32));
            }
        }
    } else {
        for w in h.util.iter_rev() {
            if last.is_some_and(|l| w.t <= l) {
                break;
            }
            fresh.push((w.t, w.util as f32));
        }
        fresh.reverse();
    }
    if polled || h.util.is_empty() {
        caught_after_all(state, fresh);
        missed_burst(state, h, fresh);
    }
    // Jobs come and go: the memory in use says when the GPU holds no context (see
    // `rules::NO_CONTEXT_BYTES`), and the samples before a new context are other jobs'.
    if let Some(tk) = h.ticks.last().filter(|tk| tk.ok && tk.t > state.memory_t) {
        if let Some(m) = tk.metrics.mem_used_bytes {
            state.memory_t = tk.t;
            let context = m >= rules::NO_CONTEXT_BYTES;
            if state
                .mem_anchor
                .is_none_or(|a| m.abs_diff(a) > rules::mem_steady_band(a))
            {
                state.mem_anchor = Some(m);
                state.mem_settled_since = Some(tk.t);
            }
            if !context {
                if state.had_context != Some(false) {
                    state.context_lost_at = Some(tk.t);
                }
                state.no_context_at = Some(tk.t);
            } else if state.had_context == Some(false) {
                state.context_since = Some(tk.t);
            }
            state.had_context = Some(context);
        }
    }
    for &(t, u) in fresh.iter() {
        state.ts.push_back(t);
        state.us.push_back(u);
        state.hist.add(u);
        state.last_t = Some(t);
        state.low_since = state.low_since.min(u);
        state.high_since = state.high_since.max(u);
    }
    let keep_from = keep_from.max(state.context_since.unwrap_or(f64::NEG_INFINITY));
    while state.ts.front().is_some_and(|t| *t < keep_from) {
        state.ts.pop_front();
        if let Some(u) = state.us.pop_front() {
            state.hist.remove(u);
        }
    }
}

/// A polled reading that shows no activity on a tick whose power rose (see [`POWER_BURST_W`])
/// becomes the busy level of the window's active readings (with none yet there is no scale, and
/// it stays as it is).
fn missed_burst(state: &mut GpuState, h: &GpuHistory, fresh: &mut [(f64, f32)]) {
    let Some(tk) = h
        .ticks
        .last()
        .filter(|tk| state.power_t.is_none_or(|t| tk.t > t))
    else {
        return;
    };
    state.power_t = Some(tk.t);
    let power = tk.metrics.power_w;
    let rose = match (state.last_power, power) {
        (Some(q), Some(p)) => p - q >= POWER_BURST_W.max(POWER_BURST_SHARE * q),
        _ => false,
    };
    state.last_power = power.or(state.last_power);
    if !rose {
        return;
    }
    if let (Some(m), Some(reading)) = (state.hist.busy_level(), fresh.last_mut()) {
        if !state.hist.active(reading.1 as f64) {
            state.filled = Some((reading.0, reading.1));
            reading.1 = m as f32;
        }
    }
}

/// A reading taken as a missed burst (see [`missed_burst`]) followed by one that shows activity:
/// the power rose a tick before the source's utilization caught the burst (H200 logs: 0% at
/// +7 W, then 31%), so the burst was not missed and the reading goes back to what the source read.
/// Left filled, a burst caught at a third of the busy level would stand beside one at the full
/// level, and the caught bursts without a rise before them would end no dip.
fn caught_after_all(state: &mut GpuState, fresh: &[(f64, f32)]) {
    let Some(&(_, next)) = fresh.first() else {
        return;
    };
    let Some((t, read)) = state.filled.take() else {
        return;
    };
    if !state.hist.active(next as f64) || state.ts.back() != Some(&t) {
        return;
    }
    if let Some(u) = state.us.back_mut() {
        state.hist.remove(*u);
        state.hist.add(read);
        *u = read;
    }
}

/// Reduce the ticks since `since` to what the rules need. (Not inlined: inside the caller its
/// loop compiled to more instructions, and how many changed with unrelated code.)
#[inline(never)]
fn summarise(h: &GpuHistory, since: UnixTime, busy_util: f64) -> TickSummary {
    let mut s = TickSummary::default();
    let (mut util, mut sm, mut power, mut rx) = (
        Mean::default(),
        Mean::default(),
        Mean::default(),
        Mean::default(),
    );
    // Memory in use still at its latest reading (within `band` of it), going back.
    let mut steady = true;
    let mut band = 0u64;
    // Newest first, a plain loop per chunk of history.
    'ticks: for chunk in h.ticks.chunks_rev() {
        for tk in chunk.iter().rev() {
            if tk.t < since {
                break 'ticks;
            }
            if !tk.ok {
                continue;
            }
            let m = &tk.metrics;
            s.ticks += 1;
            util.add(m.util_gpu);
            sm.add(m.sm_active);
            power.add(m.power_w);
            rx.add(m.pcie_rx_bytes_per_s);
            if s.power_limit.is_none() {
                s.power_limit = m.power_limit_w;
            }
            if let Some(used) = m.mem_used_bytes {
                let last = match s.mem_used_last {
                    Some(last) => last,
                    None => {
                        band = rules::mem_steady_band(used);
                        *s.mem_used_last.insert(used)
                    }
                };
                s.mem_used_first = Some(used);
                if steady {
                    steady = used.abs_diff(last) <= band;
                    if steady {
                        s.mem_steady_since = Some(tk.t);
                    }
                }
            }
            if s.mem_total.is_none() {
                s.mem_total = m.mem_total_bytes;
            }
            if let (Some(g), Some(w)) = (m.pcie_gen, m.pcie_width) {
                s.link_current.get_or_insert((g, w));
            }
            if m.util_gpu.is_some_and(|u| u >= busy_util) {
                s.busy_ticks += 1;
                if let Some(bits) = m.throttle {
                    if bits & throttle::SERIOUS != 0 {
                        s.throttled_ticks += 1;
                        s.throttle_bits |= bits;
                    }
                }
            }
        }
    }
    if steady {
        // Steady over every tick summarised: as far back as they go.
        s.mem_steady_since = s.mem_steady_since.map(|t| t.min(since));
    }
    s.util_mean = util.get();
    s.sm_mean = sm.get();
    s.power_mean = power.get();
    s.rx_mean = rx.get();
    s
}

/// Stalls a watch line needs in the rules window, and the share of it they take.
const WATCH_MIN_STALLS: usize = 2;
const WATCH_MIN_STALLED: f64 = 0.1;
/// Seconds a watch line stays after the evaluation that last saw its stalls.
const WATCH_HOLD_S: f64 = 5.0;

/// The stalls of the last `span_s` before `now` in analysis `a`: dips that began in it, and the
/// share of it spent in any dip (one that began before it counts from its start), when there are
/// at least [`WATCH_MIN_STALLS`] taking at least [`WATCH_MIN_STALLED`] of it.
fn watch_of(a: &signal::Analysis, now: UnixTime, span_s: f64) -> Option<Watch> {
    let span = span_s.min(a.span_s);
    let from = now - span;
    if span <= 0.0 || a.busy_level <= 0.0 {
        return None;
    }
    let mut stalls = 0usize;
    let mut stalled = 0.0f64;
    for d in &a.dips {
        let end = d.end.unwrap_or(now).min(now);
        if end <= from {
            continue;
        }
        if !d.open_start && d.start >= from {
            stalls += 1;
        }
        stalled += end - d.start.max(from);
    }
    let fraction = (stalled / span).clamp(0.0, 1.0);
    (stalls >= WATCH_MIN_STALLS && fraction >= WATCH_MIN_STALLED).then_some(Watch {
        stalls: stalls as u32,
        stalled_fraction: fraction,
        span_s: span,
    })
}

/// The mean of the readings present, summed in the order given.
#[derive(Debug, Default, Clone, Copy)]
struct Mean {
    n: usize,
    sum: f64,
}

impl Mean {
    #[inline]
    fn add(&mut self, v: Option<f64>) {
        if let Some(v) = v {
            self.n += 1;
            self.sum += v;
        }
    }

    fn get(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / self.n as f64)
    }
}

/// Count the busy ticks whose link is below the device's maximum (needs the maximum to judge).
fn degraded_link(
    s: &mut TickSummary,
    h: &GpuHistory,
    dev: &DeviceInfo,
    since: UnixTime,
    busy_util: f64,
) {
    let (Some(gm), Some(wm)) = (dev.pcie_gen_max, dev.pcie_width_max) else {
        return;
    };
    for tk in h.ticks.iter_rev() {
        if tk.t < since {
            break;
        }
        let m = &tk.metrics;
        if !tk.ok || !m.util_gpu.is_some_and(|u| u >= busy_util) {
            continue;
        }
        if let (Some(g), Some(w)) = (m.pcie_gen, m.pcie_width) {
            if g < gm || w < wm {
                s.degraded_ticks += 1;
                s.link_seen = Some((g, w));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::UtilWindow;

    /// Add the 200 ms windows from `*next_w` up to tick time `t`, valued `util(window end)`.
    fn push_windows(h: &mut GpuHistory, next_w: &mut f64, t: f64, util: impl Fn(f64) -> f64) {
        while *next_w <= t {
            h.util.push(UtilWindow {
                t: *next_w,
                util: util(*next_w),
            });
            *next_w += 0.2;
        }
    }

    /// Feed `seconds` of 200 ms windows from `util(t)` at 250 ms ticks; count full analyses.
    fn run(seconds: f64, util: impl Fn(f64) -> f64) -> (Detector, u32) {
        let system = SystemInfo {
            devices: vec![DeviceInfo::default()],
            ..Default::default()
        };
        let mut d = Detector::new(DetectorConfig::default(), &system);
        let mut h = GpuHistory::new(120.0, 0.25);
        let (mut t, mut next_w, mut analyses, mut last) = (0.0, 0.2, 0, f64::NAN);
        while t < seconds {
            t += 0.25;
            push_windows(&mut h, &mut next_w, t, &util);
            d.update(t, &[&h]);
            if d.gpus[0].analysed_at.to_bits() != last.to_bits() {
                analyses += 1;
                last = d.gpus[0].analysed_at;
            }
        }
        (d, analyses)
    }

    #[test]
    fn a_steady_busy_gpu_reuses_its_analysis_and_a_starving_one_does_not() {
        let (_, steady) = run(120.0, |t| 98.0 + (t * 7.0).sin().abs() * 2.0);
        // Evaluated every second; analysed every second until the window spans the rules
        // window, then every REUSE_S.
        assert!((25..=45).contains(&steady), "{steady} analyses in 120 s");
        let (d, starving) = run(120.0, |t| if t % 1.7 < 0.7 { 90.0 } else { 0.0 });
        // Every second until raised, then while the pattern goes on about every other second
        // (less than one 1.7 s period between analyses).
        assert!(
            (55..=100).contains(&starving),
            "{starving} analyses in 120 s"
        );
        assert_eq!(d.verdict(0), FindingKind::InputStarvation);
    }

    #[test]
    fn deferred_summary_texts_read_the_same() {
        let system = SystemInfo {
            devices: vec![DeviceInfo::default()],
            ..Default::default()
        };
        let mut eager = Detector::new(DetectorConfig::default(), &system);
        let mut deferred = Detector::new(DetectorConfig::default(), &system);
        deferred.defer_summaries();
        let mut h = GpuHistory::new(120.0, 0.25);
        let (mut t, mut next_w) = (0.0, 0.2);
        let (mut raised, mut cleared, mut refreshed) = (0, 0, 0);
        let mut last_text = String::new();
        // Starving with a stall share that drifts (the summary's numbers change while raised),
        // then steady work until the finding clears, then starving again.
        let util = |t: f64| {
            let busy = 0.6 + 0.3 * (t / 40.0).sin().abs();
            if (60.0..150.0).contains(&t) || t % 2.0 < 2.0 * busy {
                99.0
            } else {
                0.0
            }
        };
        while t < 240.0 {
            t += 0.25;
            push_windows(&mut h, &mut next_w, t, util);
            let a = eager.update(t, &[&h]);
            let b = deferred.update(t, &[&h]);
            assert_eq!(a, b, "events at {t}");
            raised += a
                .iter()
                .filter(|e| matches!(e, FindingEvent::Raised(_)))
                .count();
            cleared += a
                .iter()
                .filter(|e| matches!(e, FindingEvent::Cleared(_)))
                .count();
            if let Some(f) = eager.active().first() {
                if f.summary != last_text {
                    refreshed += 1;
                    last_text = f.summary.clone();
                }
            }
        }
        assert!(
            raised >= 2 && cleared >= 1,
            "{raised} raised, {cleared} cleared"
        );
        assert!(refreshed > raised, "texts changed {refreshed} times");
        deferred.refresh_summaries();
        assert_eq!(eager.active(), deferred.active());
        assert_eq!(eager.ended(), deferred.ended());
    }

    #[test]
    fn a_lone_blip_is_not_a_busy_gpu_and_seconds_of_work_are() {
        // Idle with one 0.6 s blip at the start (the driver's buffer at start-up): idle.
        let (d, _) = run(4.0, |t| if t < 0.8 { 60.0 } else { 0.0 });
        assert_eq!(d.verdict(0), FindingKind::Idle);
        // Three seconds of steady work: busy, no finding.
        let (d, _) = run(3.5, |_| 60.0);
        assert_eq!(d.verdict(0), FindingKind::Healthy);
        // Bursts every 4 s on a GPU holding no memory (no context in the history): idle.
        let (d, _) = run(12.0, |t| if t % 4.0 < 0.2 { 30.0 } else { 0.0 });
        assert_eq!(d.verdict(0), FindingKind::Idle);
    }

    #[test]
    fn a_dip_after_a_quiet_stretch_is_analysed_at_the_next_evaluation() {
        // Steady for 60 s, then starving: the first new dip ends the reuse.
        let (d, _) = run(80.0, |t| if t < 60.0 || t % 1.5 < 0.8 { 99.0 } else { 0.0 });
        let f = d
            .active()
            .iter()
            .find(|f| f.kind == FindingKind::InputStarvation)
            .expect("starvation raised");
        assert!(
            f.detected_at - 60.0 <= 15.0,
            "detected at {}",
            f.detected_at
        );
    }

    /// Feed 200 ms windows of `util` at ticks `step` apart (each `jitter` s early) for
    /// `seconds`; the times of the evaluations (revisions) and of the first starvation raised.
    fn evaluations(
        seconds: f64,
        step: f64,
        jitter: f64,
        util: impl Fn(f64) -> f64,
    ) -> (Vec<f64>, Option<f64>) {
        let system = SystemInfo {
            devices: vec![DeviceInfo::default()],
            ..Default::default()
        };
        let mut d = Detector::new(DetectorConfig::default(), &system);
        let mut h = GpuHistory::new(120.0, 0.25);
        let (mut k, mut next_w, mut evals, mut raised) = (0u32, 0.2, Vec::new(), None);
        loop {
            k += 1;
            let t = k as f64 * step - jitter;
            if t > seconds {
                break (evals, raised);
            }
            push_windows(&mut h, &mut next_w, t, &util);
            let before = d.revision;
            for e in d.update(t, &[&h]) {
                if let FindingEvent::Raised(f) = e {
                    if f.kind == FindingKind::InputStarvation {
                        raised = raised.or(Some(t));
                    }
                }
            }
            if d.revision != before {
                evals.push(t);
            }
        }
    }

    #[test]
    fn evaluations_keep_their_cadence_when_ticks_come_a_little_early() {
        // Ticks 3 ms early: evaluating from each tick would wait five ticks (1.25 s) each time.
        let (evals, _) = evaluations(60.0, 0.25, 0.003, |_| 90.0);
        let spacing = (evals[evals.len() - 1] - evals[0]) / (evals.len() - 1) as f64;
        assert!((spacing - 1.0).abs() < 0.01, "mean spacing {spacing} s");
    }

    #[test]
    fn the_edge_that_completes_a_provisional_period_is_named_when_it_arrives() {
        // A steady GPU is evaluated on the cadence only (every second from the first tick).
        let (regular, _) = evaluations(30.0, 0.25, 0.0, |_| 90.0);
        assert!(regular.iter().all(|t| t.fract() == 0.25), "{regular:?}");
        // A job that computes for 0.3 s every 5.6 s from t = 3: the third burst (the end of the
        // second long dip) begins at 14.2 s; its first window ends at 14.4 s and arrives with the
        // tick at 14.5 s, between two evaluations.
        let bursts = |t: f64| {
            if t >= 3.0 && (t - 3.0) % 5.6 < 0.3 {
                90.0
            } else {
                0.0
            }
        };
        let (evals, raised) = evaluations(30.0, 0.25, 0.0, bursts);
        assert_eq!(raised, Some(14.5), "{evals:?}");
        assert!(evals.contains(&14.5) && !regular.contains(&14.5));
        // The same job busy until t = 3.3: its first dip has no burst before it, so only the
        // third dip's start can complete three cycles; its first window ends at 14.6 s and is
        // evaluated when it arrives with the tick at 14.75 s.
        let busy_first = |t: f64| if t < 3.3 { 90.0 } else { bursts(t) };
        let (evals, _) = evaluations(30.0, 0.25, 0.0, busy_first);
        assert!(
            evals.contains(&14.75) && !regular.contains(&14.75),
            "{evals:?}"
        );
    }
}
