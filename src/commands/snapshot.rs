//! `gpulse snapshot [--json]`: sample for a short warm-up, print one table (or JSON document),
//! exit.

use std::process::ExitCode;

use super::{
    or_exit, patience, runtime, settings, start_live, wait_for_seq, write_stdout, CommandResult,
};
use crate::cli::GlobalArgs;
use crate::output::{json, snapshot_text};

/// Ticks to wait before the snapshot is printed: rates (PCIe, CPU) need two readings, and the
/// driver's utilization window needs a tick to complete.
pub const WARMUP_TICKS: u64 = 3;

pub fn run(global: &GlobalArgs, as_json: bool) -> CommandResult {
    let settings = or_exit!(settings(global, false));
    let live = or_exit!(start_live(&settings, Some("snapshot")));
    let _serving = or_exit!(super::serve_beside(&settings, &live.snapshots));
    let rt = runtime()?;
    let mut rx = live.snapshots.clone();
    let wait = patience(&settings, WARMUP_TICKS);
    let Some(s) = rt.block_on(wait_for_seq(&mut rx, WARMUP_TICKS, wait)) else {
        anyhow::bail!(
            "no sample arrived within {:.0} s; the backend does not answer",
            wait.as_secs_f64()
        );
    };
    live.stop();
    let show = |i: u32| settings.shows(i);
    let text = if as_json {
        let mut t = serde_json::to_string_pretty(&json::snapshot_doc(&s, &show))?;
        t.push('\n');
        t
    } else {
        crate::printable::lines(&snapshot_text::render(&s, &show))
    };
    write_stdout(text)?;
    Ok(ExitCode::SUCCESS)
}
