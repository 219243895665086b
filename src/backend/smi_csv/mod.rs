//! GPU logs as a recorded source: what nvidia-smi and DCGM write, read sample by sample.
//!
//! Formats, told apart by their first line:
//! - `nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits] -l N` (or `-lms N`): any
//!   subset and order of fields that includes `timestamp` and `utilization.gpu` (or the same
//!   names as wrapper scripts spell them, `utilization_gpu_percent`), with or without units, with
//!   or without `index`. `timestamp` is nvidia-smi's local time, ISO-8601 or Unix seconds. Rows
//!   of several GPUs interleave: with a GPU identity (`index`, `uuid`, `pci.bus_id`) a sample
//!   ends when a GPU repeats; without one, rows are grouped by poll ([`polls`]).
//! - `nvidia-smi dmon` (any `-s`, with or without `-o DT`): the repeated `#` header is skipped,
//!   `-` is absent, `sm` is the utilization.
//! - `dcgmi dmon -e ...`: DCGM's short field names; profiling ratios become percent.
//! - plain `nvidia-smi` in a loop: the default table under its date line ([`table`]).
//!
//! `[N/A]`, `[Not Supported]`, `N/A` and `-` are absent readings. Local times take `TZ`. A log
//! without clock times (dmon without `-o T`, `dcgmi dmon`) is placed 1 s per poll from the Unix
//! epoch, or at the interval given, and says so ([`SampleSource::assumptions`]). Each row is
//! also one driver utilization window, except rows closer than [`MIN_WINDOW_S`] to the previous
//! one, which re-read the same window. Bad lines are skipped and counted. Input may be gzip or
//! zstd compressed.

mod cell;
mod clock;
mod field;
mod group;
mod header;
mod lines;
mod open;
mod polls;
mod row;
mod table;
mod table_rows;

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};

use super::tick_times::TickTimes;
use super::{LineCounts, SampleSource};
use crate::model::{GpuReading, Sample, SystemInfo};
use crate::printable;
use clock::LocalClock;
use group::QueuedRow;
use header::Layout;
use lines::Lines;
use polls::PollShape;
use row::RowMeta;
pub use table::SmiTableSource;

/// The backend name of a system read from an nvidia-smi log (`SystemInfo::backend`).
pub const BACKEND: &str = "nvidia-smi-csv";

/// Rows of one GPU closer than this re-read the same driver window (no new window).
pub const MIN_WINDOW_S: f64 = 0.15;
/// The longest line read. An nvidia-smi row is well under a kilobyte; a longer line is not a
/// log's, and a file without line breaks (`/dev/zero`) would otherwise be read whole into memory.
pub const MAX_LINE_BYTES: u64 = 64 * 1024;
const MIB: f64 = 1048576.0;

/// Why a log cannot be read at all.
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

/// How to read a log that does not say everything itself.
#[derive(Debug, Clone, Default)]
pub struct LogOptions {
    /// The columns of a CSV log written with `noheader`, in query order.
    pub fields: Option<Vec<String>>,
    /// The poll interval of a log without clock times (`nvidia-smi dmon -d N`, `dcgmi dmon -d
    /// MS`), seconds; each tool's default when `None`.
    pub interval_s: Option<f64>,
}

/// Open any of the formats above, uncompressing gzip or zstd.
pub fn open_log(
    path: &Path,
    options: &LogOptions,
) -> Result<Box<dyn SampleSource + Send>, SmiCsvError> {
    let (reader, _) = super::input::open_decompressed(path).map_err(|cause| SmiCsvError::Read {
        path: path.to_path_buf(),
        cause,
    })?;
    read_log(path, reader, options)
}

/// [`open_log`] from any reader; `path` names it in messages.
pub fn read_log(
    path: &Path,
    reader: Box<dyn std::io::BufRead + Send>,
    options: &LogOptions,
) -> Result<Box<dyn SampleSource + Send>, SmiCsvError> {
    match SmiCsvSource::start(path, reader, options)? {
        open::Opened::Columns(src) => Ok(Box::new(*src)),
        open::Opened::Table(src) => Ok(Box::new(*src)),
    }
}

/// Lines counted while reading.
#[derive(Debug, Default)]
struct Counts {
    /// Data rows read.
    rows: usize,
    bad_lines: usize,
    first_bad: Option<usize>,
    unknown_gpus: usize,
    /// Rows of polls cut short (a log without GPU identity), skipped rather than merged.
    incomplete_rows: usize,
}

/// A log of rows and columns (CSV, `nvidia-smi dmon`, `dcgmi dmon`), read sample by sample.
pub struct SmiCsvSource {
    name: String,
    lines: Lines,
    layout: Layout,
    clock: LocalClock,
    system: SystemInfo,
    /// Stable GPU index of each identity (uuid or bus id) when the log has no `index`.
    ids: HashMap<String, u32>,
    /// Time of each GPU's last driver window, by GPU index.
    last_window: Vec<(u32, f64)>,
    first: Option<Vec<GpuReading>>,
    /// Rows read ahead: the row that ended the previous sample, the rows a poll shape was
    /// learnt from.
    queue: VecDeque<QueuedRow>,
    /// Time and identity of each row of the sample being read (reused).
    metas: Vec<RowMeta>,
    /// How rows without a GPU identity make a poll.
    polls: Option<PollShape>,
    /// A log without clock times: the seconds between polls taken.
    untimed_interval_s: Option<f64>,
    /// Polls given out of a log without clock times.
    untimed_polls: u64,
    /// A time of day without a date: midnights passed, and the last time of day read.
    days: u32,
    last_time_of_day: Option<f64>,
    counts: Counts,
    /// Why reading stopped before the end of the file, if it did.
    stopped: Option<String>,
    /// Checks the samples' times; samples come out of it one sample late.
    times: TickTimes<Sample>,
    samples_read: u64,
    /// Every sample has been read (some may wait in `times`).
    ended: bool,
    done: bool,
    assumptions: Vec<String>,
}

impl std::fmt::Debug for SmiCsvSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmiCsvSource")
            .field("name", &self.name)
            .field("line_no", &self.lines.line_no)
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
            self.place_untimed();
            // Time runs forward and does not jump about: a sample whose time is damaged, or
            // not after the one before (a clock set back, logs concatenated out of order), is
            // dropped, as a recording's reader does.
            self.samples_read += 1;
            let sample = self.build(rows);
            self.times.push(sample, self.samples_read);
        }
    }

    fn warnings(&self) -> Vec<String> {
        let (name, c) = (&self.name, &self.counts);
        let mut w = Vec::new();
        if c.bad_lines > 0 {
            w.push(format!(
                "{name}: skipped {} unreadable line(s), the first at line {}",
                c.bad_lines,
                c.first_bad.unwrap_or(0)
            ));
        }
        if let Some(why) = &self.stopped {
            w.push(format!(
                "{name}: reading stopped early: {why}; what came before is analysed"
            ));
        }
        if c.incomplete_rows > 0 {
            w.push(format!(
                "{name}: skipped {} row(s) of polls that could not be read whole (cut short, or a row as late as a poll; rows without a GPU identity are never merged across polls, and there are {} GPUs a poll)",
                c.incomplete_rows,
                self.system.devices.len()
            ));
        }
        for dropped in self.times.drops().warnings("sample") {
            w.push(format!("{name}: {dropped}"));
        }
        if c.unknown_gpus > 0 {
            w.push(format!(
                "{name}: {} reading(s) of GPUs absent from the first sample were ignored",
                c.unknown_gpus
            ));
        }
        w
    }

    fn assumptions(&self) -> Vec<String> {
        self.assumptions.clone()
    }

    fn line_counts(&self) -> Option<LineCounts> {
        Some(LineCounts {
            read: self.counts.rows as u64,
            skipped: self.counts.bad_lines as u64,
            first_skipped: self.counts.first_bad.map(|l| l as u64),
        })
    }
}
