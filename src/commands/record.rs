//! `gpulse record FILE`: write every tick to a recording until `--count` ticks, `--duration`,
//! Ctrl-C or SIGTERM. Lines are flushed at least once a second, so a crash loses at most the last
//! second.

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use super::{or_exit, runtime, say, settings, start_live, CommandResult};
use crate::cli::GlobalArgs;
use crate::model::Finding;
use crate::recording::Recorder;

/// What to record and when to stop.
pub struct RecordArgs<'a> {
    pub path: &'a Path,
    pub count: Option<u64>,
    pub duration_s: Option<f64>,
    pub compress: bool,
}

pub fn run(global: &GlobalArgs, args: RecordArgs<'_>) -> CommandResult {
    let settings = or_exit!(settings(global, false));
    let live = or_exit!(start_live(&settings, Some("record")));
    let _serving = or_exit!(super::serve_beside(&settings, &live.snapshots));
    let mut rec = Recorder::create(
        args.path,
        &live.system,
        settings.engine.interval_s,
        args.compress,
    )?;
    let rt = runtime()?;
    let mut rx = live.snapshots.clone();
    let deadline = args
        .duration_s
        .map(|d| Instant::now() + Duration::from_secs_f64(d));
    let mut written = 0u64;
    let mut last_seq = rx.borrow().seq;
    let result: anyhow::Result<()> = rt.block_on(async {
        // Listen for the signals once, before the loop, so none is missed between ticks.
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let mut int = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
        loop {
            let until_end = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if until_end.is_some_and(|d| d.is_zero()) || args.count.is_some_and(|c| written >= c) {
                return Ok(());
            }
            let sleep = tokio::time::sleep(until_end.unwrap_or(Duration::from_secs(3600)));
            tokio::select! {
                changed = rx.changed() => {
                    if changed.is_err() { return Ok(()); }
                    let s = rx.borrow_and_update().clone();
                    if s.seq > last_seq + 1 {
                        tracing::warn!("recording skipped {} tick(s): the writer fell behind", s.seq - last_seq - 1);
                    }
                    last_seq = s.seq;
                    if let Some(sample) = &s.sample {
                        let findings: Vec<Finding> = s.active_findings().cloned().collect();
                        rec.write_with_findings(sample, &findings)?;
                        written += 1;
                    }
                }
                _ = sleep => return Ok(()),
                _ = int.recv() => return Ok(()),
                _ = term.recv() => return Ok(()),
            }
        }
    });
    live.stop();
    let path = rec.finish()?;
    say!(
        "gpulse: recorded {written} tick(s) to '{}'",
        crate::printable::path(&path)
    );
    result.map(|()| ExitCode::SUCCESS)
}
