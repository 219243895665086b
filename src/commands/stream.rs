//! `gpulse stream [--count N]`: one JSON object per tick (NDJSON) on stdout, flushed line by line,
//! until `count` lines, Ctrl-C, or the reader goes away (`gpulse stream | head -1` ends quietly).

use std::io;
use std::process::ExitCode;

use super::{or_exit, patience, runtime, settings, start_live, wait_for_seq, CommandResult};
use crate::cli::GlobalArgs;
use crate::output::stream::write_line;

pub fn run(global: &GlobalArgs, count: Option<u64>) -> CommandResult {
    let settings = or_exit!(settings(global, false));
    let live = or_exit!(start_live(&settings, Some("stream")));
    let _serving = or_exit!(super::serve_beside(&settings, &live.snapshots));
    let rt = runtime()?;
    let show = |i: u32| settings.shows(i);
    let mut rx = live.snapshots.clone();
    rt.block_on(async {
        // Two ticks so the first line already has rates.
        let wait = patience(&settings, 2);
        if wait_for_seq(&mut rx, 2, wait).await.is_none() {
            anyhow::bail!(
                "no sample arrived within {:.0} s; the backend does not answer",
                wait.as_secs_f64()
            );
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
    })?;
    Ok(ExitCode::SUCCESS)
}
