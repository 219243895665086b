//! The headless subcommands and their dispatch, so `main` stays a thin switch.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Subcommand, ValueEnum};

use crate::cli::{parse_duration, GlobalArgs};
use crate::config::{self, Settings};

/// Subcommands that print, write or serve instead of opening the dashboard.
#[derive(Debug, Subcommand)]
pub enum OutputCommand {
    /// Print every GPU once (a readable table, or JSON with --json) and exit.
    ///
    /// Samples for a short warm-up first (three ticks, about 0.75 s at the default 250ms
    /// interval) so that rates such as PCIe throughput and the driver's utilization window exist.
    Snapshot {
        /// One JSON document (schema: assets/snapshot.schema.json, docs/OUTPUTS.md)
        #[arg(long)]
        json: bool,
    },
    /// Print one JSON object per tick (NDJSON) on stdout until Ctrl-C or --count lines.
    ///
    /// Each line has the same shape as `snapshot --json`. Only data goes to stdout (logs go to
    /// stderr); every line is flushed; a reader that closes the pipe ends the stream quietly.
    Stream {
        /// Stop after this many lines
        #[arg(long, value_name = "N")]
        count: Option<u64>,
    },
    /// Record every tick to FILE (NDJSON, zstd with --compress or a .zst name) until Ctrl-C.
    ///
    /// Lines are flushed at least once a second, so a crash loses at most the last second.
    /// Play the file back with `gpulse replay FILE`.
    Record {
        /// The recording to write (overwritten if it exists)
        file: PathBuf,
        /// Stop after this many ticks
        #[arg(long, value_name = "N")]
        count: Option<u64>,
        /// Stop after this long, e.g. `30s`, `10m`
        #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
        duration: Option<f64>,
        /// Compress with zstd (implied by a `.zst` file name)
        #[arg(long)]
        compress: bool,
    },
    /// Play a recording in the dashboard (speed, pause, seek, jump to the next finding).
    Replay {
        /// A file written by `gpulse record` (plain or zstd)
        file: PathBuf,
    },
    /// Serve Prometheus metrics (dcgm-exporter names plus gpulse_*) until Ctrl-C.
    ///
    /// Endpoints: /metrics, /healthz (503 when sampling is stale) and /.
    Serve {
        /// Address to listen on; only loopback unless you give another (default from the config
        /// file's [exporter] listen, else 127.0.0.1:9400)
        #[arg(long, value_parser = config::parse_listen, value_name = "ADDR")]
        listen: Option<std::net::SocketAddr>,
    },
    /// Show, create or check the config file.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Print a shell completion script (e.g. `gpulse completions bash > /etc/bash_completion.d/gpulse`).
    Completions {
        #[arg(value_enum)]
        shell: CompletionShell,
    },
    /// Print the manual page (roff), e.g. `gpulse man | man -l -`.
    Man,
}

#[derive(Debug, Subcommand, Clone, Copy)]
pub enum ConfigAction {
    /// Print the config file's path (and whether it exists).
    Path,
    /// Print the settings in effect (command line over file over defaults) as TOML.
    Show,
    /// Write a commented default config file.
    Init {
        /// Overwrite an existing file
        #[arg(long)]
        force: bool,
    },
    /// Check the config file and report the first problem.
    Check,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum CompletionShell {
    Bash,
    Zsh,
    Fish,
}

/// Exit status of usage and config errors.
pub const USAGE_ERROR: u8 = 2;

fn settings(global: &GlobalArgs) -> Result<Settings, ExitCode> {
    Settings::resolve(global, false).map_err(|e| {
        eprintln!("gpulse: {e}");
        ExitCode::from(USAGE_ERROR)
    })
}

/// Run a headless subcommand.
pub fn run(cmd: OutputCommand, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    use clap::CommandFactory;
    match cmd {
        OutputCommand::Completions { shell } => {
            let mut c = crate::cli::Cli::command();
            let mut out = std::io::stdout();
            match shell {
                CompletionShell::Bash => {
                    clap_complete::generate(clap_complete::Shell::Bash, &mut c, "gpulse", &mut out)
                }
                CompletionShell::Zsh => {
                    clap_complete::generate(clap_complete::Shell::Zsh, &mut c, "gpulse", &mut out)
                }
                CompletionShell::Fish => {
                    clap_complete::generate(clap_complete::Shell::Fish, &mut c, "gpulse", &mut out)
                }
            }
            return Ok(ExitCode::SUCCESS);
        }
        OutputCommand::Man => {
            clap_mangen::Man::new(crate::cli::Cli::command()).render(&mut std::io::stdout())?;
            return Ok(ExitCode::SUCCESS);
        }
        OutputCommand::Config { action } => return config::commands::run(action, global),
        _ => {}
    }
    let settings = match settings(global) {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    if let OutputCommand::Replay { file } = &cmd {
        return crate::backend::replay::run_replay(&settings, file).map(|()| ExitCode::SUCCESS);
    }
    let live = match crate::output::start_live(&settings) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("{e}");
            return Ok(ExitCode::from(USAGE_ERROR));
        }
    };
    let _serving = match (&cmd, settings.serve) {
        (OutputCommand::Serve { .. }, _) | (_, None) => None,
        (_, Some(addr)) => match crate::output::prometheus::serve_in_background(
            addr,
            live.snapshots.clone(),
            crate::output::show_filter(&settings),
        ) {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("gpulse: {e}");
                return Ok(ExitCode::from(USAGE_ERROR));
            }
        },
    };
    match cmd {
        OutputCommand::Snapshot { json } => {
            crate::output::stream::run_snapshot(&settings, &live, json)?
        }
        OutputCommand::Stream { count } => {
            crate::output::stream::run_stream(&settings, &live, count)?
        }
        OutputCommand::Record {
            file,
            count,
            duration,
            compress,
        } => crate::output::record::run_record(&settings, &live, &file, count, duration, compress)?,
        OutputCommand::Serve { listen } => crate::output::prometheus::run_serve(
            &settings,
            &live,
            listen.unwrap_or(settings.exporter_listen),
        )?,
        OutputCommand::Replay { .. }
        | OutputCommand::Config { .. }
        | OutputCommand::Completions { .. }
        | OutputCommand::Man => {}
    }
    Ok(ExitCode::SUCCESS)
}
