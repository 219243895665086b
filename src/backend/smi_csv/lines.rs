//! Reading the log line by line, each line bounded in length.

use std::io::BufRead;

use super::{SmiCsvSource, MAX_LINE_BYTES};

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

impl SmiCsvSource {
    /// Count line `line` as unreadable.
    pub(super) fn bad(&mut self, line: usize) {
        self.bad_lines += 1;
        self.first_bad.get_or_insert(line);
    }

    /// The next line, without its end; `None` at the end of the input. A line longer than
    /// [`MAX_LINE_BYTES`] is an error.
    pub(super) fn read_line(&mut self) -> std::io::Result<Option<String>> {
        let mut raw = std::mem::take(&mut self.raw);
        let read = self.read_raw(&mut raw);
        self.raw = raw;
        match read? {
            RawLine::End => Ok(None),
            RawLine::Line => Ok(Some(String::from_utf8_lossy(&self.raw).into_owned())),
            RawLine::TooLong => Err(too_long(self.line_no)),
        }
    }

    /// Read the next line into `raw` (cleared first), at most [`MAX_LINE_BYTES`] of it.
    pub(super) fn read_raw(&mut self, raw: &mut Vec<u8>) -> std::io::Result<RawLine> {
        use std::io::Read;
        raw.clear();
        let n = self
            .reader
            .by_ref()
            .take(MAX_LINE_BYTES)
            .read_until(b'\n', raw)?;
        if n == 0 {
            return Ok(RawLine::End);
        }
        self.line_no += 1;
        if n as u64 == MAX_LINE_BYTES && raw.last() != Some(&b'\n') {
            return Ok(RawLine::TooLong);
        }
        Ok(RawLine::Line)
    }
}
