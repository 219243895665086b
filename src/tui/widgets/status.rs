//! Whether a GPU's readings are current, and how to say it.

use crate::engine::GpuSnapshot;
use crate::model::{GpuStatus, UnixTime};
use crate::tui::format;

/// How current a GPU's readings are at the time of drawing.
#[derive(Debug, Clone, PartialEq)]
pub enum Liveness {
    /// Answered within the last few ticks.
    Live,
    /// Has not answered once yet.
    Waiting,
    /// Answered last this many seconds ago.
    Stale(f64),
    /// Gone, with the reason the driver gave.
    Lost(String),
}

/// Readings older than this many intervals are stale even if the last tick said nothing.
pub const STALE_INTERVALS: f64 = 3.0;

impl Liveness {
    pub fn of(g: &GpuSnapshot, now: UnixTime, interval_s: f64) -> Liveness {
        if let GpuStatus::Lost { reason } = &g.status {
            return Liveness::Lost(reason.clone());
        }
        let Some(age) = g.age(now) else {
            return Liveness::Waiting;
        };
        let stale_status = matches!(g.status, GpuStatus::Stale { .. });
        if stale_status || age > STALE_INTERVALS * interval_s {
            Liveness::Stale(age)
        } else {
            Liveness::Live
        }
    }

    /// Words for the panel title, `None` when live.
    pub fn words(&self) -> Option<String> {
        match self {
            Liveness::Live => None,
            Liveness::Waiting => Some("waiting for first reading".to_string()),
            Liveness::Stale(age) => Some(format!("stale {}", format::seconds(*age))),
            Liveness::Lost(reason) => Some(format!("LOST: {reason}")),
        }
    }
}
