//! `gpulse` (no command) and `gpulse demo`: the live dashboard, of real GPUs or simulated ones.

use std::process::ExitCode;

use super::{
    or_exit, require_terminal, serve_beside, settings, start_live, CommandResult, HEADLESS_COMMANDS,
};
use crate::cli::GlobalArgs;

/// Open the dashboard; `demo` shows simulated GPUs (the same as `--backend sim`).
pub fn run(global: &GlobalArgs, demo: bool) -> CommandResult {
    let settings = or_exit!(settings(global, demo));
    let live = or_exit!(start_live(&settings, None));
    or_exit!(require_terminal(
        "the dashboard",
        &format!("a headless command: {HEADLESS_COMMANDS}")
    ));
    crate::tui::init_tui_logging();
    let serving = or_exit!(serve_beside(&settings, &live.snapshots));
    let options = crate::tui::RunOptions {
        serving: serving.as_ref().map(|s| s.addr),
        ..Default::default()
    };
    crate::tui::run(live, &settings, options)?;
    Ok(ExitCode::SUCCESS)
}
