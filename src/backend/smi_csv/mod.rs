//! nvidia-smi CSV logs as a recorded source.
//!
//! Reads what `nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits] -l N` (or `-lms N`)
//! writes: any subset and order of fields that includes `timestamp` and `utilization.gpu`, with or
//! without units, with or without `index` (rows of several GPUs interleave; a sample ends when a
//! GPU repeats). `[N/A]`, `[Not Supported]` and `N/A` are absent readings. Timestamps are local time
//! (`TZ` applies). A headerless file needs its field list (`--fields`). Each row is also one driver
//! utilization window, except rows closer than [`MIN_WINDOW_S`] to the previous one, which re-read
//! the same window. Bad lines are skipped and counted.

mod cell;
mod clock;
mod field;
mod group;
mod lines;
mod open;
mod row;

use std::collections::HashMap;
use std::io::BufRead;
use std::path::PathBuf;

use super::tick_times::TickTimes;
use super::{LineCounts, SampleSource};
use crate::model::{GpuReading, Sample, SystemInfo};
use crate::printable;
use clock::LocalClock;
use field::Field;
use group::Pending;
use row::RowMeta;

/// The backend name of a system read from an nvidia-smi log (`SystemInfo::backend`).
pub const BACKEND: &str = "nvidia-smi-csv";

/// Rows of one GPU closer than this re-read the same driver window (no new window).
pub const MIN_WINDOW_S: f64 = 0.15;
/// The longest line read. An nvidia-smi row is well under a kilobyte; a longer line is not a
/// log's, and a file without line breaks (`/dev/zero`) would otherwise be read whole into memory.
pub const MAX_LINE_BYTES: u64 = 64 * 1024;
const MIB: f64 = 1048576.0;

/// Why a CSV log cannot be read at all.
#[derive(Debug, thiserror::Error)]
pub enum SmiCsvError {
    #[error("cannot read '{}': {cause}", printable::path(.path))]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("'{}' is empty: expected an nvidia-smi CSV log (nvidia-smi --query-gpu=timestamp,utilization.gpu,... --format=csv -lms 250)", printable::path(.path))]
    Empty { path: PathBuf },
    #[error("'{}' is not a recognised format: {why}", printable::path(.path))]
    Unrecognised { path: PathBuf, why: String },
}

/// An nvidia-smi CSV log, read sample by sample.
pub struct SmiCsvSource {
    name: String,
    reader: Box<dyn BufRead>,
    fields: Vec<Field>,
    has_index: bool,
    clock: LocalClock,
    system: SystemInfo,
    /// Stable GPU index of each identity (uuid or bus id) when the log has no `index`.
    ids: HashMap<String, u32>,
    /// Time of each GPU's last driver window, by GPU index.
    last_window: Vec<(u32, f64)>,
    first: Option<Vec<GpuReading>>,
    pending: Option<Pending>,
    /// Time and identity of each row of the sample being read (reused).
    metas: Vec<RowMeta>,
    line_no: usize,
    raw: Vec<u8>,
    /// Data rows read.
    rows: usize,
    bad_lines: usize,
    first_bad: Option<usize>,
    unknown_gpus: usize,
    /// Why reading stopped before the end of the file, if it did.
    stopped: Option<String>,
    /// Checks the samples' times; samples come out of it one sample late.
    times: TickTimes<Sample>,
    samples_read: u64,
    /// Every sample has been read (some may wait in `times`).
    ended: bool,
    done: bool,
}

impl std::fmt::Debug for SmiCsvSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmiCsvSource")
            .field("name", &self.name)
            .field("line_no", &self.line_no)
            .finish()
    }
}

impl SampleSource for SmiCsvSource {
    fn system(&self) -> &SystemInfo {
        &self.system
    }

    fn next_sample(&mut self) -> Option<Sample> {
        loop {
            if let Some(s) = self.times.pop() {
                return Some(s);
            }
            if self.ended {
                return None;
            }
            let rows = match self.first.take() {
                Some(rows) => rows,
                None => self.next_group(None),
            };
            if rows.is_empty() {
                self.ended = true;
                self.times.finish();
                continue;
            }
            // Time runs forward and does not jump about: a sample whose time is damaged, or
            // not after the one before (a clock set back, logs concatenated out of order), is
            // dropped, as a recording's reader does.
            self.samples_read += 1;
            let sample = self.build(rows);
            self.times.push(sample, self.samples_read);
        }
    }

    fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.bad_lines > 0 {
            w.push(format!(
                "{}: skipped {} unreadable line(s), the first at line {}",
                self.name,
                self.bad_lines,
                self.first_bad.unwrap_or(0)
            ));
        }
        if let Some(why) = &self.stopped {
            w.push(format!(
                "{}: reading stopped early: {why}; what came before is analysed",
                self.name
            ));
        }
        for dropped in self.times.drops().warnings("sample") {
            w.push(format!("{}: {dropped}", self.name));
        }
        if self.unknown_gpus > 0 {
            w.push(format!(
                "{}: {} reading(s) of GPUs absent from the first sample were ignored",
                self.name, self.unknown_gpus
            ));
        }
        w
    }

    fn line_counts(&self) -> Option<LineCounts> {
        Some(LineCounts {
            read: self.rows as u64,
            skipped: self.bad_lines as u64,
            first_skipped: self.first_bad.map(|l| l as u64),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn source(text: &[u8]) -> Result<SmiCsvSource, SmiCsvError> {
        let reader = std::io::Cursor::new(text.to_vec());
        SmiCsvSource::from_reader(Path::new("log.csv"), Box::new(reader), None)
    }

    #[test]
    fn a_first_line_that_is_not_a_header_is_quoted_with_its_bytes_escaped() {
        let e = source(b"\x7fELF\x02\x01\0\0\r\x1b[2J\xff rest\n")
            .expect_err("not a log")
            .to_string();
        assert!(
            e.contains("first line '\\x7fELF\\x02\\x01\\0\\0\\r\\x1b[2J\\xff rest'"),
            "{e}"
        );
        assert!(!e.chars().any(char::is_control), "{e:?}");
    }

    #[test]
    fn read_and_skipped_lines_are_counted_and_time_only_runs_forward() {
        let mut text = String::from("timestamp, index, utilization.gpu [%]\n");
        for (sec, util) in [(10, 50), (11, 60), (9, 70), (11, 80), (12, 90)] {
            text.push_str(&format!("2026/12/02 13:28:{sec:02}.000, 0, {util} %\n"));
        }
        text.push_str("garbage\n,,,\n");
        let mut src = source(text.as_bytes()).expect("a log");
        let utils: Vec<Option<f64>> = std::iter::from_fn(|| src.next_sample())
            .map(|s| s.gpus[0].metrics.util_gpu)
            .collect();
        assert_eq!(utils, vec![Some(50.0), Some(60.0), Some(90.0)]);
        let counts = src.line_counts().expect("counts");
        assert_eq!(
            counts,
            LineCounts {
                read: 5,
                skipped: 2,
                first_skipped: Some(7)
            }
        );
        assert!(!counts.mostly_unreadable());
        let w = src.warnings().join("\n");
        assert!(
            w.contains("dropped 2 tick(s) whose time was not after"),
            "{w}"
        );
    }
}
