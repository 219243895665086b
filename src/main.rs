use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use gpulse::cli::{Cli, Command};
use gpulse::commands::{self, record::RecordArgs, CommandResult};

fn main() -> ExitCode {
    let cli = Cli::parse();
    if !cli.opens_screen() {
        commands::logging::init_stderr_logging(cli.global.verbose, cli.global.quiet);
    }
    match dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            // A stderr nobody reads any more loses the message; it is no reason to panic.
            // Its causes quote files and servers: their escapes are shown, not obeyed.
            let text = gpulse::printable::lines(&format!("{e:#}"));
            let _ = writeln!(std::io::stderr(), "gpulse: {text}");
            ExitCode::from(1)
        }
    }
}

/// One command, one `run`.
fn dispatch(cli: Cli) -> CommandResult {
    let global = &cli.global;
    match cli.command {
        None => commands::dashboard::run(global, false),
        Some(Command::Demo) => commands::dashboard::run(global, true),
        Some(Command::Doctor(args)) => commands::doctor::run(global, &args),
        Some(Command::Analyze(args)) => commands::analyze::run(global, &args),
        Some(Command::Fleet(args)) => commands::fleet::run(global, &args),
        Some(Command::Snapshot { json }) => commands::snapshot::run(global, json),
        Some(Command::Stream { count }) => commands::stream::run(global, count),
        Some(Command::Record {
            file,
            count,
            duration,
            compress,
        }) => commands::record::run(
            global,
            RecordArgs {
                path: &file,
                count,
                duration_s: duration,
                compress,
            },
        ),
        Some(Command::Replay { file }) => commands::replay::run(global, &file),
        Some(Command::Serve { listen }) => commands::serve::run(global, listen),
        Some(Command::Config { action }) => commands::config::run(global, action),
        Some(Command::Completions { shell }) => commands::completions::completions(shell),
        Some(Command::Man) => commands::completions::man(),
    }
}
