//! `gpulse completions bash|zsh|fish` and `gpulse man`: shell completions and the manual page,
//! both generated from the command-line definition so they never disagree with `--help`.

use std::process::ExitCode;

use clap::CommandFactory;

use super::{write_stdout, CommandResult};
use crate::cli::{Cli, CompletionShell};

/// Print a completion script for `shell`.
pub fn completions(shell: CompletionShell) -> CommandResult {
    let shell = match shell {
        CompletionShell::Bash => clap_complete::Shell::Bash,
        CompletionShell::Zsh => clap_complete::Shell::Zsh,
        CompletionShell::Fish => clap_complete::Shell::Fish,
    };
    // Rendered whole first: the generator panics on a failed write (a reader that has gone).
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "gpulse", &mut script);
    write_stdout(script)?;
    Ok(ExitCode::SUCCESS)
}

/// Print the manual page (roff).
pub fn man() -> CommandResult {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut page)?;
    write_stdout(page)?;
    Ok(ExitCode::SUCCESS)
}
