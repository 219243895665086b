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
    if let Some(Command::Output(cmd)) = cli.command {
        return gpulse::output::cli::run(cmd, &cli.global);
    }
    let demo = matches!(cli.command, Some(Command::Demo));
    let settings = match Settings::resolve(&cli.global, demo) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("gpulse: {e}");
            return Ok(ExitCode::from(gpulse::output::cli::USAGE_ERROR));
        }
    };
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
            let _serving = match settings.serve {
                Some(addr) => Some(gpulse::output::prometheus::serve_in_background(
                    addr,
                    live.snapshots.clone(),
                    gpulse::output::show_filter(&settings),
                )?),
                None => None,
            };
            gpulse::tui::run(live, &settings)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Output(_)) => Ok(ExitCode::SUCCESS),
    }
}
