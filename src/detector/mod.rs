//! Names why a GPU is not busier, from its history.
//!
//! Each tick the detector takes the new utilization readings of every GPU into its own short
//! window ([`window`]), noting which job they belong to ([`job`]). Once per `eval_interval_s` of
//! data time it analyses the window ([`signal`]), summarises the recent ticks ([`ticks`]) and
//! runs the [`rules`]; a deep dip (or the burst that ends one) that may complete a provisional
//! period is evaluated at the tick it arrives. The [`hysteresis`] turns candidates into
//! findings, and each GPU gets a verdict and a stall watch ([`verdict`]).

mod config;
mod gpu;
mod health_track;
mod hysteresis;
mod job;
pub(crate) mod rules;
pub mod signal;
#[cfg(any(test, feature = "testing"))]
pub mod synth;
mod ticks;
mod verdict;
mod window;

pub use config::DetectorConfig;
pub use verdict::priority;

use gpu::GpuState;
use hysteresis::Findings;
use rules::{Candidate, Evaluation, GpuLoad, HealthView, ThrottleShares};
use ticks::{degraded_link, summarise, TickSummary};

use crate::history::GpuHistory;
use crate::model::{
    DeviceInfo, Finding, FindingKind, Severity, SystemInfo, UnixTime, UtilSampling, Watch,
};

/// A finding raised or cleared at one evaluation.
#[derive(Debug, Clone, PartialEq)]
pub enum FindingEvent {
    Raised(Finding),
    Cleared(Finding),
}

/// A tick this close before an evaluation is due evaluates already (sample times jitter by a few
/// milliseconds around the interval).
const EVAL_SLACK_S: f64 = 0.05;

/// Runs the rules over every GPU's history.
#[derive(Debug)]
pub struct Detector {
    config: DetectorConfig,
    devices: Vec<DeviceInfo>,
    gpus: Vec<GpuState>,
    findings: Findings,
    next_eval: Option<UnixTime>,
    /// Buffer for the readings of one tick (no allocation per tick).
    scratch: Vec<(f64, f32)>,
    /// Buffers of the window analyses.
    analysis_scratch: signal::Scratch,
    /// Increases whenever an active finding is raised, refreshed or cleared.
    revision: u64,
}

impl Detector {
    pub fn new(config: DetectorConfig, system: &SystemInfo) -> Self {
        Detector {
            devices: system.devices.clone(),
            gpus: system
                .devices
                .iter()
                .map(|_| GpuState::new(&config))
                .collect(),
            config,
            findings: Findings::default(),
            next_eval: None,
            scratch: Vec::new(),
            analysis_scratch: signal::Scratch::default(),
            revision: 0,
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
        self.findings.defer_text = true;
    }

    /// Bring the summary texts of the active findings up to date (needed only after
    /// [`Self::defer_summaries`]).
    pub fn refresh_summaries(&mut self) {
        for (pos, state) in self.gpus.iter_mut().enumerate() {
            let gpu = self.devices.get(pos).map(|d| d.index).unwrap_or(pos as u32);
            self.findings.refresh_texts(gpu, &mut state.tracks);
        }
    }

    /// The index of the GPU at position `pos`.
    fn gpu_index(&self, pos: usize) -> u32 {
        self.devices.get(pos).map(|d| d.index).unwrap_or(pos as u32)
    }

    /// Take in the tick at `t` and, when due, evaluate every GPU.
    pub fn update(&mut self, t: UnixTime, gpus: &[&GpuHistory]) -> Vec<FindingEvent> {
        let mut early = false;
        for (pos, (state, h)) in self.gpus.iter_mut().zip(gpus).enumerate() {
            let prev = state.window.us.back().copied();
            // A polled source's readings may miss a burst that its power shows.
            let polled = self
                .devices
                .get(pos)
                .is_some_and(|d| d.util_sampling == UtilSampling::Polled);
            state.absorb(
                h,
                t - self.config.window_s,
                &mut self.scratch,
                polled,
                &self.config,
            );
            early |= state.deep_edge_arrives(prev, &self.scratch, t, &self.config);
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
        let mut events = Vec::new();
        for pos in 0..self.gpus.len() {
            self.end_ended_job(pos, t, &mut events);
        }
        let mut per_gpu: Vec<Vec<Candidate>> = (0..self.gpus.len())
            .map(|pos| self.evaluate_gpu(pos, t, gpus.get(pos).copied()))
            .collect();
        let loads: Vec<GpuLoad> = per_gpu
            .iter()
            .enumerate()
            .map(|(pos, cands)| self.load_of(pos, cands))
            .collect();
        for (pos, c) in rules::cross_gpu(&self.config, &loads, t, self.config.rules_window_s) {
            if let Some(v) = per_gpu.get_mut(pos) {
                v.push(c);
            }
        }
        for (pos, cands) in per_gpu.into_iter().enumerate() {
            self.apply(pos, t, cands, &mut events);
        }
        events
    }

    /// A finding belongs to the job it was seen in: when the job on GPU `pos` has ended for good
    /// (see [`job::JobContext::ended_job_over`]), its findings end with it, and the next job
    /// starts clean.
    fn end_ended_job(&mut self, pos: usize, t: UnixTime, events: &mut Vec<FindingEvent>) {
        let gpu = self.gpu_index(pos);
        let state = &mut self.gpus[pos];
        let Some(end) = state.job.ended_job_over(t, &self.config) else {
            return;
        };
        hysteresis::end_all(&mut state.tracks, &mut self.findings, gpu, end, events);
        if let Some(old) = state.close_job(end) {
            self.analysis_scratch.recycle(old.dips);
        }
    }

    /// Take in the processes holding GPU `pos` at tick `t` (a source that lists them): a list
    /// with none of the current job's processes is the next job.
    pub fn note_processes(&mut self, pos: usize, t: UnixTime, pids: &[u32]) {
        if let Some(state) = self.gpus.get_mut(pos) {
            state.job.observe_processes(t, pids);
        }
    }

    /// Analyse the window of GPU `pos` again unless the last analysis still describes it. A
    /// window without a period whose memory in use settled at least `settled_margin_s` after its
    /// first sample is also analysed from the settling on: a job's start-up (model load,
    /// algorithm search: memory moving by GiBs, utilization blips as high as a starving job's
    /// bursts) can hide the pattern that follows it for as long as it stays in the window.
    fn analyse(&mut self, pos: usize, t: UnixTime) {
        let cfg = &self.config;
        let scratch = &mut self.analysis_scratch;
        let state = &mut self.gpus[pos];
        if state.reusable(t, cfg) {
            return;
        }
        if let Some(old) = state.analysis.take() {
            scratch.recycle(old.dips);
        }
        let w = &mut state.window;
        let (ts, us) = (w.ts.make_contiguous(), w.us.make_contiguous());
        let mut analysis = signal::analyse_window(ts, us, cfg, Some(&w.hist), scratch);
        let settled = state
            .job
            .mem_settled_since
            .filter(|s| ts.first().is_some_and(|t0| *s >= t0 + cfg.settled_margin_s));
        if let (None, Some(settled)) = (&analysis.period, settled) {
            let from = ts.partition_point(|t| *t < settled);
            let since = signal::analyse_window(&ts[from..], &us[from..], cfg, None, scratch);
            if since.period.is_some() {
                scratch.recycle(std::mem::replace(&mut analysis, since).dips);
            } else {
                scratch.recycle(since.dips);
            }
        }
        state.analysis = Some(analysis);
        state.analysed_at = t;
        w.analysed();
    }

    /// The tick summary of GPU `pos` over the last rules window of the current job.
    fn tick_summary(&self, pos: usize, t: UnixTime, h: Option<&GpuHistory>) -> TickSummary {
        let cfg = &self.config;
        let state = &self.gpus[pos];
        let since = state
            .job
            .job_from
            .map_or(t - cfg.rules_window_s, |f| f.max(t - cfg.rules_window_s));
        let busy_tick = cfg.busy_util * 0.5;
        let mut summary = h
            .map(|h| summarise(h, since, busy_tick, cfg))
            .unwrap_or_default();
        if let (Some(h), Some(dev)) = (h, self.devices.get(pos)) {
            degraded_link(&mut summary, h, dev, since, busy_tick);
        }
        // Steady over every tick summarised: since it settled, as far back as that goes.
        if summary.mem_steady_since.is_some_and(|m| m <= since) {
            if let Some(settled) = state.job.mem_settled_since {
                summary.mem_steady_since = Some(settled.min(since));
            }
        }
        summary.busy_power_peak = state.busy_power_w;
        summary.no_context_at = state.job.no_context_at;
        summary.context_lost_at = state.job.context_lost_at;
        summary
    }

    /// Analyse GPU `pos` and run the per-GPU rules on it.
    fn evaluate_gpu(&mut self, pos: usize, t: UnixTime, h: Option<&GpuHistory>) -> Vec<Candidate> {
        self.analyse(pos, t);
        let summary = self.tick_summary(pos, t, h);
        let cfg = &self.config;
        let state = &mut self.gpus[pos];
        state.recent = state.window.recent_activity(t - cfg.rules_window_s, cfg);
        let Some(analysis) = state.analysis.as_ref() else {
            return Vec::new();
        };
        // Cross-GPU comparisons wait for a full rules window of data.
        state.comparable = analysis.span_s >= cfg.rules_window_s * 0.95;
        state.holds_memory = summary
            .mem_used_last
            .is_some_and(|m| m >= DetectorConfig::bytes(cfg.holds_memory_mib));
        let stalls_named =
            state.raised(FindingKind::ErraticStalls) || state.raised(FindingKind::InputStarvation);
        // The throttle shares, read only where a serious reason held the clocks in the window
        // (else the rule has nothing to raise).
        let since = state
            .job
            .job_from
            .map_or(t - cfg.rules_window_s, |f| f.max(t - cfg.rules_window_s));
        let throttle = match h {
            Some(h)
                if state
                    .health
                    .serious_throttle_at
                    .is_some_and(|at| at >= since) =>
            {
                rules::held_over(h, since, cfg.busy_util * 0.5)
            }
            _ => ThrottleShares::default(),
        };
        rules::per_gpu(&Evaluation {
            cfg,
            dev: self.devices.get(pos),
            a: analysis,
            s: &summary,
            now: t,
            stalls_named,
            health: HealthView {
                track: &state.health,
                job_from: state.job.job_from,
                throttle,
            },
        })
    }

    /// What the cross-GPU rules know of GPU `pos`, given its candidates `cands`.
    fn load_of(&self, pos: usize, cands: &[Candidate]) -> GpuLoad {
        let g = &self.gpus[pos];
        let gpu = self.gpu_index(pos);
        let explained = cands.iter().any(|c| c.severity >= Severity::Warn)
            || self.findings.active.iter().any(|f| {
                f.gpu == gpu && f.severity >= Severity::Warn && f.kind != FindingKind::Imbalance
            });
        GpuLoad {
            mean: g.recent.mean.filter(|_| g.comparable),
            holds_memory: g.holds_memory,
            explained,
        }
    }

    /// Hysteresis, verdict and watch of GPU `pos`.
    fn apply(
        &mut self,
        pos: usize,
        t: UnixTime,
        cands: Vec<Candidate>,
        events: &mut Vec<FindingEvent>,
    ) {
        let gpu = self.gpu_index(pos);
        let cfg = &self.config;
        let Some(state) = self.gpus.get_mut(pos) else {
            return;
        };
        hysteresis::apply(
            &mut state.tracks,
            &mut self.findings,
            gpu,
            t,
            cands,
            cfg,
            events,
        );
        state.verdict = Some(verdict::decide(&self.findings.active, gpu, state, t, cfg));
    }

    /// What the detector sees on GPU `gpu` while it has no finding (see [`Watch`]).
    pub fn watch(&self, gpu: usize) -> Option<Watch> {
        self.gpus.get(gpu).and_then(|g| g.watch)
    }

    /// The level the last analysis of GPU `gpu` measures lost time against (its busy level, or
    /// 100% for bursts shorter than a reading): the level of its findings' lost fractions. `None`
    /// before anything ran on it.
    pub fn full_level(&self, gpu: usize) -> Option<f64> {
        self.gpus
            .get(gpu)
            .and_then(|g| g.analysis.as_ref())
            .map(|a| a.full_level)
            .filter(|l| *l > 0.0)
    }

    /// The current verdict of GPU `gpu` (position in the system's device list); `pending`
    /// before its first evaluation.
    pub fn verdict(&self, gpu: usize) -> FindingKind {
        self.gpus
            .get(gpu)
            .and_then(|g| g.verdict)
            .unwrap_or(FindingKind::Pending)
    }

    /// Changes whenever the active findings or verdicts may have changed (each evaluation), so a
    /// reader can skip copying them otherwise.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Findings still going on.
    pub fn active(&self) -> &[Finding] {
        &self.findings.active
    }

    /// Findings that have ended.
    pub fn ended(&self) -> &[Finding] {
        &self.findings.ended
    }
}

#[cfg(test)]
mod tests;
