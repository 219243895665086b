//! `gpulse completions bash|zsh|fish` and `gpulse man`: shell completions and the manual page,
//! both generated from the command-line definition so they never disagree with `--help`.

use std::process::ExitCode;

use clap::CommandFactory;

use super::CommandResult;
use crate::cli::{Cli, CompletionShell};

/// Print a completion script for `shell`.
pub fn completions(shell: CompletionShell) -> CommandResult {
    let shell = match shell {
        CompletionShell::Bash => clap_complete::Shell::Bash,
        CompletionShell::Zsh => clap_complete::Shell::Zsh,
        CompletionShell::Fish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(shell, &mut Cli::command(), "gpulse", &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}

/// Print the manual page (roff).
pub fn man() -> CommandResult {
    clap_mangen::Man::new(Cli::command()).render(&mut std::io::stdout())?;
    Ok(ExitCode::SUCCESS)
}
