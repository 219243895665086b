//! Reads a recording line by line (plain, zstd or gzip, told apart by the file's magic bytes).
//!
//! A recording may be damaged: a file cut in the middle of a line (a crash, `kill -9`, a full
//! disk) is read up to the cut; a line in the middle that is not valid JSON is skipped; a tick or
//! driver window whose time is damaged is dropped ([`TickTimes`]). All are reported by
//! [`SampleSource::warnings`], naming the line (the first few skipped lines one by one, then a
//! count).

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use super::{Header, Record, FORMAT, VERSION};
use crate::backend::tick_times::TickTimes;
use crate::backend::{LineCounts, SampleSource};
use crate::model::{Sample, SystemInfo};
use crate::printable;

/// Skipped lines named one by one in the warnings; those after are counted.
const MAX_LISTED: u64 = 20;

/// Why a recording cannot be opened at all.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    #[error("cannot open recording '{}': {cause}", printable::path(.path))]
    Open {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("'{}' is not a gpulse recording: {why}; record one with `gpulse record FILE`", printable::path(.path))]
    NotRecording { path: PathBuf, why: String },
    #[error("recording '{}' has format version {found}; this gpulse reads version {VERSION}", printable::path(.path))]
    Version { path: PathBuf, found: u32 },
    #[error("recording '{}' holds no samples; record some with `gpulse record FILE --count N`", printable::path(.0))]
    NoSamples(PathBuf),
}

/// Reads a recording line by line.
pub struct RecordingReader {
    path: PathBuf,
    header: Header,
    lines: Box<dyn BufRead + Send>,
    /// Number of the last line read (1-based; the header is line 1).
    line_no: u64,
    /// Checks the ticks' times; ticks come out of it one tick late.
    times: TickTimes<Record>,
    /// Problems met, each naming its line: at most [`MAX_LISTED`] skipped lines, then a count.
    warnings: Vec<String>,
    listed_skips: u64,
    /// Ticks read, and lines skipped as not valid samples.
    counts: LineCounts,
    done: bool,
}

impl std::fmt::Debug for RecordingReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingReader")
            .field("path", &self.path)
            .field("line_no", &self.line_no)
            .finish_non_exhaustive()
    }
}

enum Line {
    /// A whole line (it ended with a newline).
    Whole(Vec<u8>),
    /// The file (or the compressed stream) ends inside this line; `why` says how.
    Cut(Vec<u8>, Option<String>),
    End,
}

/// The longest line read: far above any tick's (a few KiB per GPU), and a bound on what a file
/// without line breaks makes the reader hold.
pub const MAX_LINE_BYTES: u64 = 64 << 20;

fn read_line(r: &mut dyn BufRead) -> Line {
    let mut buf = Vec::new();
    match r.take(MAX_LINE_BYTES).read_until(b'\n', &mut buf) {
        Ok(0) => Line::End,
        Ok(n) if n as u64 == MAX_LINE_BYTES && buf.last() != Some(&b'\n') => Line::Cut(
            buf,
            Some(format!(
                "a line longer than {} MiB without a line break",
                MAX_LINE_BYTES >> 20
            )),
        ),
        Ok(_) if buf.last() == Some(&b'\n') => {
            buf.pop();
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            Line::Whole(buf)
        }
        Ok(_) => Line::Cut(buf, None),
        Err(e) => Line::Cut(buf, Some(e.to_string())),
    }
}

impl RecordingReader {
    /// Open a recording and read its header.
    pub fn open(path: &Path) -> Result<RecordingReader, RecordingError> {
        let open_err = |cause| RecordingError::Open {
            path: path.to_path_buf(),
            cause,
        };
        let (lines, _) = crate::backend::input::open_decompressed(path).map_err(open_err)?;
        Self::from_reader(path, lines)
    }

    fn from_reader(
        path: &Path,
        mut lines: Box<dyn BufRead + Send>,
    ) -> Result<RecordingReader, RecordingError> {
        let not = |why: String| RecordingError::NotRecording {
            path: path.to_path_buf(),
            why,
        };
        let first = match read_line(&mut *lines) {
            Line::End => return Err(not("the file is empty".into())),
            Line::Whole(b) => b,
            Line::Cut(b, _) => b,
        };
        let header: Header = serde_json::from_slice(&first).map_err(|e| {
            not(format!(
                "its first line is not a recording header ({})",
                printable::text(&e.to_string())
            ))
        })?;
        if header.format != FORMAT {
            return Err(not(format!(
                "its format is '{}', not '{FORMAT}'",
                printable::text(&header.format)
            )));
        }
        if header.version != VERSION {
            return Err(RecordingError::Version {
                path: path.to_path_buf(),
                found: header.version,
            });
        }
        Ok(RecordingReader {
            path: path.to_path_buf(),
            header,
            lines,
            line_no: 1,
            times: TickTimes::new(),
            warnings: Vec::new(),
            listed_skips: 0,
            counts: LineCounts::default(),
            done: false,
        })
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The next tick with the findings recorded at it, skipping damaged lines and ticks whose
    /// times are damaged ([`TickTimes`]).
    pub fn next_record(&mut self) -> Option<Record> {
        loop {
            if let Some(rec) = self.times.pop() {
                self.counts.read += 1;
                return Some(rec);
            }
            if self.done {
                return None;
            }
            match self.read_record() {
                Some(rec) => self.times.push(rec, self.line_no),
                None => self.times.finish(),
            }
        }
    }

    /// The next line that holds a tick, as written.
    fn read_record(&mut self) -> Option<Record> {
        while !self.done {
            let line = read_line(&mut *self.lines);
            let (bytes, cut) = match line {
                Line::End => {
                    self.done = true;
                    return None;
                }
                Line::Whole(b) => (b, None),
                Line::Cut(b, why) => {
                    self.done = true;
                    (b, Some(why))
                }
            };
            self.line_no += 1;
            if bytes.iter().all(u8::is_ascii_whitespace) {
                if let Some(Some(why)) = cut {
                    self.warn_cut(None, &why);
                }
                continue;
            }
            match serde_json::from_slice::<Record>(&bytes) {
                Ok(rec) => {
                    if let Some(Some(why)) = &cut {
                        self.warn_cut(None, why);
                    }
                    return Some(rec);
                }
                Err(e) => match cut {
                    Some(why) => {
                        let n = self.line_no;
                        self.warn_cut(Some(n), why.as_deref().unwrap_or("the file ends mid-line"));
                    }
                    None => {
                        self.counts.skipped += 1;
                        self.counts.first_skipped.get_or_insert(self.line_no);
                        if self.listed_skips < MAX_LISTED {
                            self.listed_skips += 1;
                            self.warnings.push(format!(
                                "line {}: not a valid sample ({}); skipped",
                                self.line_no,
                                printable::text(&e.to_string())
                            ));
                        }
                    }
                },
            }
        }
        None
    }

    fn warn_cut(&mut self, partial_line: Option<u64>, why: &str) {
        let msg = match partial_line {
            Some(n) => format!(
                "line {n} is cut off ({why}): '{}' was read up to line {}",
                printable::path(&self.path),
                n - 1
            ),
            None => format!(
                "the recording ends early after line {} ({why})",
                self.line_no
            ),
        };
        self.warnings.push(msg);
    }

    /// Read every remaining tick.
    pub fn read_all(&mut self) -> Vec<Record> {
        std::iter::from_fn(|| self.next_record()).collect()
    }
}

impl SampleSource for RecordingReader {
    fn system(&self) -> &SystemInfo {
        &self.header.system
    }

    fn next_sample(&mut self) -> Option<Sample> {
        self.next_record().map(|r| r.sample)
    }

    fn warnings(&self) -> Vec<String> {
        let mut out = self.warnings.clone();
        let unlisted = self.counts.skipped.saturating_sub(self.listed_skips);
        if unlisted > 0 {
            out.push(format!(
                "{unlisted} more line(s) that are not valid samples were skipped"
            ));
        }
        out.extend(self.times.drops().warnings("line"));
        out
    }

    fn line_counts(&self) -> Option<LineCounts> {
        Some(self.counts)
    }
}
