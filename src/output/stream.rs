//! `gpulse stream` and `gpulse snapshot`: documents on stdout.
//!
//! The stream writes one JSON object per tick (NDJSON), flushed line by line, and nothing else on
//! stdout (logs go to stderr). A reader that goes away (`gpulse stream | head -1`) ends it quietly:
//! Rust ignores SIGPIPE, so the write returns `BrokenPipe`, which is a normal end here.

use std::io::{self, Write};
use std::time::Duration;

use crate::config::Settings;
use crate::engine::Snapshot;
use crate::live::Live;
use crate::output::{json, shows, table, wait_for_seq, WARMUP_TICKS};

/// Why a headless command could not finish.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("cannot write the output: {0}")]
    Io(#[from] io::Error),
    #[error("cannot encode JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("no sample arrived within {0:.0} s; the backend does not answer")]
    NoSample(f64),
}

/// Write one snapshot as one line and flush it. `Ok(false)` when the reader has gone.
pub fn write_line(
    out: &mut impl Write,
    s: &Snapshot,
    show: &dyn Fn(u32) -> bool,
) -> Result<bool, OutputError> {
    let mut line = serde_json::to_vec(&json::snapshot_doc(s, show))?;
    line.push(b'\n');
    match out.write_all(&line).and_then(|()| out.flush()) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// How long to wait for a sample before saying the backend does not answer.
fn patience(settings: &Settings, ticks: u64) -> Duration {
    Duration::from_secs_f64(10.0 + settings.engine.interval_s * ticks as f64 * 2.0)
}

/// `gpulse stream`: one line per tick until `count` lines are written, the reader goes away, or
/// Ctrl-C.
pub fn run_stream(settings: &Settings, live: &Live, count: Option<u64>) -> Result<(), OutputError> {
    let rt = crate::output::runtime()?;
    let show = |i: u32| shows(settings, i);
    let mut rx = live.snapshots.clone();
    rt.block_on(async {
        // Two ticks so the first line already has rates.
        let first = wait_for_seq(&mut rx, 2, patience(settings, 2)).await;
        if first.is_none() {
            return Err(OutputError::NoSample(patience(settings, 2).as_secs_f64()));
        }
        let mut int = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
        let stdout = io::stdout();
        let mut written = 0u64;
        let mut last_seq = 0u64;
        loop {
            let s = rx.borrow_and_update().clone();
            if s.seq != last_seq {
                last_seq = s.seq;
                if !write_line(&mut stdout.lock(), &s, &show)? {
                    return Ok(());
                }
                written += 1;
                if count.is_some_and(|c| written >= c) {
                    return Ok(());
                }
            }
            tokio::select! {
                changed = rx.changed() => if changed.is_err() { return Ok(()) },
                _ = int.recv() => return Ok(()),
            }
        }
    })
}

/// `gpulse snapshot`: sample for a short warm-up, print one table (or JSON document), exit.
pub fn run_snapshot(settings: &Settings, live: &Live, as_json: bool) -> Result<(), OutputError> {
    let rt = crate::output::runtime()?;
    let mut rx = live.snapshots.clone();
    let wait = patience(settings, WARMUP_TICKS);
    let s = rt
        .block_on(wait_for_seq(&mut rx, WARMUP_TICKS, wait))
        .ok_or(OutputError::NoSample(wait.as_secs_f64()))?;
    live.stop();
    let show = |i: u32| shows(settings, i);
    let text = if as_json {
        let mut t = serde_json::to_string_pretty(&json::snapshot_doc(&s, &show))?;
        t.push('\n');
        t
    } else {
        table::render(&s, &show)
    };
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
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
