//! The recording format: NDJSON with a header line and one line per tick, optionally
//! zstd-compressed. [`Recorder`] writes it, [`RecordingReader`] reads it back.
//!
//! ```text
//! {"format":"gpulse-recording","version":1,"created":"…","interval_s":0.25,"system":{…SystemInfo…}}
//! {"t":1733140000.25,"gpus":[…],"host":{…},"sample_duration_s":0.003,"findings":[…]}
//! …
//! ```
//! Lines are flushed at least once a second (and the compressor's block with them), so a crash or
//! `kill -9` loses at most the last second. A reader reads a file cut in the middle of a line up to
//! the cut and skips a damaged line in the middle, naming it.

pub mod reader;
pub mod writer;

use serde::{Deserialize, Serialize};

use crate::model::{Finding, Sample, SystemInfo, UnixTime};

pub use reader::{RecordingError, RecordingReader};
pub use writer::{wants_zstd, RecordError, Recorder, FLUSH_EVERY};

/// The `format` of a recording's header line.
pub const FORMAT: &str = "gpulse-recording";
/// The recording format's version.
pub const VERSION: u32 = 1;

/// The first line of a recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub format: String,
    pub version: u32,
    /// When recording started (RFC 3339).
    pub created: String,
    /// The sampling interval, seconds.
    pub interval_s: f64,
    /// Host, backend and every device's static facts.
    pub system: SystemInfo,
}

/// One tick of a recording, as read back.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Record {
    #[serde(flatten)]
    pub sample: Sample,
    /// Findings that were active at this tick when it was recorded.
    #[serde(default)]
    pub findings: Vec<Finding>,
}

impl crate::backend::tick_times::HasSample for Record {
    fn sample(&self) -> &Sample {
        &self.sample
    }
    fn sample_mut(&mut self) -> &mut Sample {
        &mut self.sample
    }
}

/// One tick's line as written: the sample as read, plus the findings active at that tick.
#[derive(Debug, Serialize)]
struct TickLine<'a> {
    #[serde(flatten)]
    sample: &'a Sample,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    findings: &'a [Finding],
}

/// Times where recorded findings were first raised, for "jump to the next finding".
pub fn finding_marks(records: &[Record]) -> Vec<UnixTime> {
    let mut seen = std::collections::BTreeSet::new();
    let mut marks = Vec::new();
    for r in records {
        for f in &r.findings {
            if seen.insert((f.gpu, f.kind, f.start.to_bits())) {
                marks.push(f.detected_at);
            }
        }
    }
    marks
}
