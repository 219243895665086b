//! Which job a GPU's readings belong to. Jobs come and go: the memory in use says when no
//! process holds a context on the GPU (below `no_context_mib`), and the process list says when
//! one job's processes gave way to another's. Readings before the current job are another
//! job's: they leave the window, and that job's findings end with it. The memory in use also
//! says when a job has settled after its start-up (model load, algorithm search: memory moving
//! by GiBs).

use super::ticks::mem_steady_band;
use super::DetectorConfig;
use crate::history::GpuHistory;
use crate::model::UnixTime;

/// What the memory readings and process lists said of the jobs on one GPU.
#[derive(Debug, Default)]
pub(super) struct JobContext {
    /// The last tick whose memory was read.
    memory_t: UnixTime,
    /// Whether the last memory reading showed a context.
    had_context: Option<bool>,
    /// The first tick of the current context (after a stretch without one).
    pub context_since: Option<UnixTime>,
    /// The last tick on which no process held a context, and the first of that stretch.
    pub no_context_at: Option<UnixTime>,
    pub context_lost_at: Option<UnixTime>,
    /// The memory in use the current stretch of steady readings holds to, and the first tick of
    /// that stretch.
    mem_anchor: Option<u64>,
    pub mem_settled_since: Option<UnixTime>,
    /// The processes of the current job: the last list that was not empty.
    pids: Vec<u32>,
    /// Where the current job's readings begin: its first tick, or the end of the last job while
    /// none holds the GPU. `None` while no job boundary was seen.
    pub job_from: Option<UnixTime>,
    /// When a job ended whose findings have not been ended yet.
    pub ended_at: Option<UnixTime>,
}

impl JobContext {
    /// Take in the memory reading of the latest tick of `h`, when it is new.
    pub fn observe(&mut self, h: &GpuHistory, cfg: &DetectorConfig) {
        let Some(tk) = h.ticks.last().filter(|tk| tk.ok && tk.t > self.memory_t) else {
            return;
        };
        let Some(m) = tk.metrics.mem_used_bytes else {
            return;
        };
        self.memory_t = tk.t;
        let context = m >= DetectorConfig::bytes(cfg.no_context_mib);
        if self
            .mem_anchor
            .is_none_or(|a| m.abs_diff(a) > mem_steady_band(a, cfg))
        {
            self.mem_anchor = Some(m);
            self.mem_settled_since = Some(tk.t);
        }
        if !context {
            if self.had_context != Some(false) {
                self.context_lost_at = Some(tk.t);
            }
            if self.had_context == Some(true) {
                self.ended_at.get_or_insert(tk.t);
            }
            self.no_context_at = Some(tk.t);
            self.pids.clear();
        } else if self.had_context == Some(false) {
            self.context_since = Some(tk.t);
            self.job_from = Some(tk.t);
        }
        self.had_context = Some(context);
    }

    /// Take in the processes holding the GPU at tick `t`: a list with none of the current job's
    /// processes is another job, begun at `t`. An empty list says nothing (a source that does
    /// not list processes, or a list read between two jobs).
    pub fn observe_processes(&mut self, t: UnixTime, pids: &[u32]) {
        if pids.is_empty() {
            return;
        }
        if !self.pids.is_empty() && !pids.iter().any(|p| self.pids.contains(p)) {
            self.ended_at.get_or_insert(t);
            self.job_from = Some(t);
            self.context_since = Some(t);
        }
        self.pids.clear();
        self.pids.extend_from_slice(pids);
    }

    /// The memory readings say no process holds a context on the GPU.
    pub fn no_context(&self) -> bool {
        self.had_context == Some(false)
    }

    /// Whether the job that ended (if any) is over for good at `t`: `job_end_grace_s` after its
    /// end (its pattern's evidence counts that long), or at once when the next job has begun.
    pub fn ended_job_over(&self, t: UnixTime, cfg: &DetectorConfig) -> Option<UnixTime> {
        let end = self.ended_at?;
        let next_begun = self.job_from.is_some_and(|f| f >= end) && !self.no_context();
        (next_begun || t >= end + cfg.job_end_grace_s).then_some(end)
    }

    /// The ended job's findings were ended: readings from `end` on belong to what follows it.
    pub fn close(&mut self, end: UnixTime) {
        self.ended_at = None;
        if self.job_from.is_none_or(|f| f < end) {
            self.job_from = Some(end);
        }
    }
}
