//! Writes a recording: the header, then one line per tick, flushed at least every
//! [`FLUSH_EVERY`].

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::{Header, TickLine, FORMAT, VERSION};
use crate::clock::rfc3339;
use crate::model::{Finding, Sample, SystemInfo};
use crate::printable;

/// A write flushes when the last flush is this old, so with ticks up to 500 ms apart a line waits
/// in a buffer for less than a second.
pub const FLUSH_EVERY: Duration = Duration::from_millis(500);

/// Why a recording could not be written.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("cannot create recording '{}': {cause}; check that the directory exists and is writable", printable::path(.path))]
    Create { path: PathBuf, cause: io::Error },
    #[error("cannot write recording '{}': {cause}", printable::path(.path))]
    Write { path: PathBuf, cause: io::Error },
    #[error("cannot encode a sample: {0}")]
    Json(serde_json::Error),
    #[error("the recording '{}' is already finished", printable::path(.0))]
    Finished(PathBuf),
}

enum Sink {
    Plain(BufWriter<File>),
    Zstd(zstd::Encoder<'static, BufWriter<File>>),
}

impl Sink {
    fn writer(&mut self) -> &mut dyn Write {
        match self {
            Sink::Plain(w) => w,
            Sink::Zstd(w) => w,
        }
    }
}

/// Writes a recording. `Send`: it can be moved to (or created on) any thread.
pub struct Recorder {
    path: PathBuf,
    sink: Option<Sink>,
    last_flush: Instant,
    lines: u64,
}

/// Whether a path asks for compression by its extension (`.zst`).
pub fn wants_zstd(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "zst")
}

impl Recorder {
    /// Create `path` (truncating it) and write the header. `compress` (or a `.zst` extension) writes zstd.
    pub fn create(
        path: &Path,
        system: &SystemInfo,
        interval_s: f64,
        compress: bool,
    ) -> Result<Recorder, RecordError> {
        let file = File::create(path).map_err(|cause| RecordError::Create {
            path: path.to_path_buf(),
            cause,
        })?;
        let buf = BufWriter::with_capacity(64 * 1024, file);
        let sink = if compress || wants_zstd(path) {
            let enc = zstd::Encoder::new(buf, 3).map_err(|cause| RecordError::Create {
                path: path.to_path_buf(),
                cause,
            })?;
            Sink::Zstd(enc)
        } else {
            Sink::Plain(buf)
        };
        let mut rec = Recorder {
            path: path.to_path_buf(),
            sink: Some(sink),
            last_flush: Instant::now(),
            lines: 0,
        };
        let header = Header {
            format: FORMAT.to_string(),
            version: VERSION,
            created: rfc3339(crate::clock::now()),
            interval_s,
            system: system.clone(),
        };
        rec.write_json(&header)?;
        rec.flush()?;
        Ok(rec)
    }

    fn io_err(&self, cause: io::Error) -> RecordError {
        RecordError::Write {
            path: self.path.clone(),
            cause,
        }
    }

    fn write_json<T: Serialize>(&mut self, value: &T) -> Result<(), RecordError> {
        let mut line = serde_json::to_vec(value).map_err(RecordError::Json)?;
        line.push(b'\n');
        let sink = self
            .sink
            .as_mut()
            .ok_or_else(|| RecordError::Finished(self.path.clone()))?;
        sink.writer().write_all(&line).map_err(|e| self.io_err(e))?;
        self.lines += 1;
        Ok(())
    }

    /// Append one tick.
    pub fn write(&mut self, sample: &Sample) -> Result<(), RecordError> {
        self.write_with_findings(sample, &[])
    }

    /// Append one tick with the findings active at it.
    pub fn write_with_findings(
        &mut self,
        sample: &Sample,
        findings: &[Finding],
    ) -> Result<(), RecordError> {
        self.write_json(&TickLine { sample, findings })?;
        if self.last_flush.elapsed() >= FLUSH_EVERY {
            self.flush()?;
        }
        Ok(())
    }

    /// Push everything written so far to the file (a complete zstd block when compressing).
    pub fn flush(&mut self) -> Result<(), RecordError> {
        self.last_flush = Instant::now();
        let Some(sink) = self.sink.as_mut() else {
            return Ok(());
        };
        let r = match sink {
            Sink::Plain(w) => w.flush(),
            Sink::Zstd(w) => w.flush().and_then(|()| w.get_mut().flush()),
        };
        r.map_err(|e| self.io_err(e))
    }

    /// Lines written, the header included.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Close the recording: ends the zstd frame and flushes the file.
    pub fn finish(mut self) -> Result<PathBuf, RecordError> {
        self.close()?;
        Ok(self.path.clone())
    }

    fn close(&mut self) -> Result<(), RecordError> {
        let r = match self.sink.take() {
            None => return Ok(()),
            Some(Sink::Plain(mut w)) => w.flush(),
            Some(Sink::Zstd(w)) => w.finish().and_then(|mut b| b.flush()),
        };
        r.map_err(|e| self.io_err(e))
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            tracing::error!("{e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorder_can_move_to_another_thread() {
        fn assert_send<T: Send>() {}
        assert_send::<Recorder>();
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.ndjson.zst");
        let rec = Recorder::create(&path, &SystemInfo::default(), 0.5, false).expect("create");
        let lines = std::thread::spawn(move || {
            let mut rec = rec;
            rec.write(&Sample {
                t: 1.0,
                ..Default::default()
            })
            .expect("write");
            let n = rec.lines();
            rec.finish().expect("finish");
            n
        })
        .join()
        .expect("thread");
        assert_eq!(lines, 2, "header and one tick");
        assert!(wants_zstd(&path));
    }
}
