//! `gpulse replay FILE`: play a recording in the dashboard (speed, pause, seek, jump to the next
//! finding).

use std::path::Path;
use std::process::ExitCode;

use super::{or_exit, say, serve_beside, settings, CommandResult};
use crate::cli::GlobalArgs;
use crate::pipeline::playback;

pub fn run(global: &GlobalArgs, path: &Path) -> CommandResult {
    let settings = or_exit!(settings(global, false));
    let replay = playback::open(&settings.engine, path)?;
    or_exit!(super::require_terminal(
        "replay",
        "`gpulse analyze FILE` for the findings of a recording as text"
    ));
    for w in &replay.warnings {
        tracing::warn!("{w}");
        say!("gpulse: {w}");
    }
    let serving = or_exit!(serve_beside(&settings, &replay.live.snapshots));
    let options = crate::tui::RunOptions {
        replay: Some(crate::tui::ReplaySession {
            control: replay.control,
            file: path.to_path_buf(),
            start: replay.start,
            end: replay.end,
            warnings: replay.warnings,
        }),
        serving: serving.as_ref().map(|s| s.addr),
        record_dir: None,
    };
    crate::tui::run(replay.live, &settings, options)?;
    Ok(ExitCode::SUCCESS)
}
