//! Reading a log line by line, each line bounded in length.

use std::io::BufRead;

use super::MAX_LINE_BYTES;

/// What one bounded read found.
pub(super) enum RawLine {
    Line,
    End,
    /// [`MAX_LINE_BYTES`] without a line break.
    TooLong,
}

/// The error of a line longer than [`MAX_LINE_BYTES`].
pub(super) fn too_long(line: usize) -> std::io::Error {
    std::io::Error::other(format!(
        "line {line} is longer than {} KiB without a line break; an nvidia-smi log's lines are far shorter",
        MAX_LINE_BYTES / 1024
    ))
}

/// A log's lines, read one at a time into a reused buffer, counted from 1.
pub(super) struct Lines {
    reader: Box<dyn BufRead + Send>,
    /// The last line read, with its line break.
    pub(super) raw: Vec<u8>,
    /// Number of the last line read.
    pub(super) line_no: usize,
}

impl Lines {
    pub(super) fn new(reader: Box<dyn BufRead + Send>) -> Self {
        Lines {
            reader,
            raw: Vec::new(),
            line_no: 0,
        }
    }

    /// Read the next line into [`Self::raw`], at most [`MAX_LINE_BYTES`] of it.
    pub(super) fn read_raw(&mut self) -> std::io::Result<RawLine> {
        use std::io::Read;
        self.raw.clear();
        let n = self
            .reader
            .by_ref()
            .take(MAX_LINE_BYTES)
            .read_until(b'\n', &mut self.raw)?;
        if n == 0 {
            return Ok(RawLine::End);
        }
        self.line_no += 1;
        if n as u64 == MAX_LINE_BYTES && self.raw.last() != Some(&b'\n') {
            return Ok(RawLine::TooLong);
        }
        Ok(RawLine::Line)
    }

    /// The next line as text, trimmed (invalid UTF-8 replaced); `None` at the end. A line longer
    /// than [`MAX_LINE_BYTES`] is an error.
    pub(super) fn next_text(&mut self) -> std::io::Result<Option<String>> {
        match self.read_raw()? {
            RawLine::End => Ok(None),
            RawLine::Line => Ok(Some(
                String::from_utf8_lossy(self.raw.trim_ascii()).into_owned(),
            )),
            RawLine::TooLong => Err(too_long(self.line_no)),
        }
    }
}
