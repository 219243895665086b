//! The NDJSON stream's lines: one JSON object per tick, flushed line by line, and nothing else on
//! stdout (logs go to stderr). A reader that goes away (`gpulse stream | head -1`) ends it quietly:
//! Rust ignores SIGPIPE, so the write returns `BrokenPipe`, which is a normal end here.

use std::io::{self, Write};

use crate::engine::Snapshot;
use crate::output::json;

/// Why a line could not be written.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    #[error("cannot write the output: {0}")]
    Io(io::Error),
    #[error("cannot encode JSON: {0}")]
    Json(serde_json::Error),
}

/// Write one snapshot as one line and flush it. `Ok(false)` when the reader has gone.
pub fn write_line(
    out: &mut impl Write,
    s: &Snapshot,
    show: &dyn Fn(u32) -> bool,
) -> Result<bool, StreamError> {
    let mut line = serde_json::to_vec(&json::snapshot_doc(s, show)).map_err(StreamError::Json)?;
    line.push(b'\n');
    match out.write_all(&line).and_then(|()| out.flush()) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(StreamError::Io(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct ClosedPipe;
    impl Write for ClosedPipe {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    struct Full;
    impl Write for Full {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(io::ErrorKind::StorageFull))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn snapshot() -> std::sync::Arc<Snapshot> {
        let engine = crate::engine::Engine::new(
            crate::model::SystemInfo::default(),
            crate::engine::EngineConfig::default(),
        );
        engine.snapshot()
    }

    #[test]
    fn one_line_per_document_and_a_closed_pipe_is_a_quiet_end() {
        let s = snapshot();
        let mut out = Vec::new();
        assert!(write_line(&mut out, &s, &|_| true).expect("written"));
        assert_eq!(out.iter().filter(|b| **b == b'\n').count(), 1);
        assert!(!write_line(&mut ClosedPipe, &s, &|_| true).expect("a quiet end"));
        assert!(
            write_line(&mut Full, &s, &|_| true).is_err(),
            "other errors are errors"
        );
    }
}
