//! Which job a GPU's readings belong to. Jobs come and go: the memory in use says when no
//! process holds a context on the GPU (below `no_context_mib`), and the readings before a new
//! context are another job's. The memory in use also says when a job has settled after its
//! start-up (model load, algorithm search: memory moving by GiBs).

use super::ticks::mem_steady_band;
use super::DetectorConfig;
use crate::history::GpuHistory;
use crate::model::UnixTime;

/// What the memory readings said of the jobs on one GPU.
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
            self.no_context_at = Some(tk.t);
        } else if self.had_context == Some(false) {
            self.context_since = Some(tk.t);
        }
        self.had_context = Some(context);
    }
}
