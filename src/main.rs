use std::process::ExitCode;

use clap::Parser;

use gpulse::backend::{self, BackendKind};
use gpulse::cli::{Cli, Command};
use gpulse::config::Settings;
use gpulse::host::HostProbe;
use gpulse::live::Live;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("gpulse: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let demo = matches!(cli.command, Some(Command::Demo));
    let settings = Settings::resolve(&cli.global, demo)?;
    match cli.command {
        None | Some(Command::Demo) => {
            let backend = match backend::open(settings.backend, &settings.sim) {
                Ok(b) => b,
                Err(e) => {
                    eprintln!("{e}");
                    return Ok(ExitCode::from(2));
                }
            };
            let _ = BackendKind::Auto;
            let live = Live::start(backend, settings.engine.clone(), HostProbe::new());
            gpulse::tui::run(live, &settings)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Analyze(args)) => Ok(gpulse::analyze::run(&args, &settings.engine.detector)),
    }
}
