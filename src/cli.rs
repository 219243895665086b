//! The command line, all of it: global options valid for every command and one subcommand per
//! front end. `main` parses it and hands each subcommand to its own file under `src/commands/`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::backend::sim::Scenario;
use crate::backend::BackendKind;
use crate::config::{
    parse_duration, parse_interval, parse_listen, parse_retention, parse_window, ColorChoice,
    Overrides,
};

/// A GPU dashboard that tells you why the GPU is not busier.
///
/// With no command, opens the live dashboard of every GPU. `gpulse demo` shows the same dashboard on
/// simulated GPUs, for machines without one.
#[derive(Debug, Parser)]
#[command(name = "gpulse", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Options valid for every command.
#[derive(Debug, Args, Clone)]
pub struct GlobalArgs {
    /// Where readings come from: `auto` uses NVML when an NVIDIA driver answers, else AMD GPUs
    #[arg(long, global = true, value_enum, env = "GPULSE_BACKEND")]
    pub backend: Option<BackendKind>,

    /// Simulated scenario (with `--backend sim` or `demo`)
    #[arg(long, global = true, value_enum)]
    pub scenario: Option<Scenario>,

    /// Number of simulated GPUs (default 4)
    #[arg(long, global = true, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub gpus: Option<u32>,

    /// Seed of the simulation, for reproducible runs
    #[arg(long, global = true)]
    pub seed: Option<u64>,

    /// Sampling interval, e.g. `250ms`, `1s` (100 ms to 10 s; default 250ms)
    #[arg(long, global = true, value_parser = parse_interval)]
    pub interval: Option<f64>,

    /// How much history to keep, e.g. `10m`, `1h` (1m to 6h; default 10m)
    #[arg(long, global = true, value_parser = parse_retention)]
    pub retention: Option<f64>,

    /// Time window the charts show at start, e.g. `60s` (10s up to the retention; default 60s)
    #[arg(long, global = true, value_parser = parse_window)]
    pub window: Option<f64>,

    /// Config file (default: the platform's config directory, e.g. ~/.config/gpulse/config.toml)
    #[arg(long, global = true, env = "GPULSE_CONFIG")]
    pub config: Option<PathBuf>,

    /// When to use colour (`NO_COLOR` also turns it off)
    #[arg(long, global = true, value_enum)]
    pub color: Option<ColorChoice>,

    /// Never send signals to processes (the process table's TERM/KILL is turned off)
    #[arg(long, global = true)]
    pub readonly: bool,

    /// Leave the mouse to the terminal (no clicking in the dashboard; text can be selected)
    #[arg(long, global = true)]
    pub no_mouse: bool,

    /// Also serve Prometheus metrics on this address while the command runs, e.g. 127.0.0.1:9400
    #[arg(long, global = true, value_name = "ADDR", value_parser = parse_listen)]
    pub serve: Option<std::net::SocketAddr>,

    /// TLS and basic auth of the exporter (`serve`, `--serve`): a web configuration file as
    /// node_exporter takes (YAML: tls_server_config, basic_auth_users); default from the config
    /// file's [exporter] web_config_file
    #[arg(long = "web.config.file", global = true, value_name = "FILE")]
    pub web_config_file: Option<PathBuf>,

    /// dcgm-exporter metric names the exporter writes (`serve`, `--serve`): legacy (up to 4.8)
    /// or current (4.10 and later: utilization as a ratio, clocks in Hz, energy in J); default
    /// from the config file's [exporter] dcgm_names, else legacy
    #[arg(long, global = true, value_enum, value_name = "NAMES")]
    pub dcgm_names: Option<crate::output::prometheus::DcgmNames>,

    /// More log messages on stderr from headless commands: -v info, -vv debug, -vvv trace
    /// (`RUST_LOG`, e.g. `RUST_LOG=gpulse=debug`, overrides it)
    #[arg(short, long, global = true, action = clap::ArgAction::Count, conflicts_with = "quiet")]
    pub verbose: u8,

    /// Fewer log messages on stderr from headless commands: -q errors only, -qq none
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub quiet: u8,
}

impl Cli {
    /// Whether the command opens a screen (its log messages go to the screen's event panel);
    /// the others are headless and log to stderr.
    pub fn opens_screen(&self) -> bool {
        match &self.command {
            None | Some(Command::Demo) | Some(Command::Replay { .. }) => true,
            Some(Command::Fleet(args)) => !args.json,
            Some(_) => false,
        }
    }
}

impl GlobalArgs {
    /// What these options set over the config file.
    pub fn overrides(&self) -> Overrides {
        Overrides {
            backend: self.backend,
            scenario: self.scenario,
            gpus: self.gpus,
            seed: self.seed,
            interval: self.interval,
            retention: self.retention,
            window: self.window,
            config: self.config.clone(),
            color: self.color,
            readonly: self.readonly,
            no_mouse: self.no_mouse,
            serve: self.serve,
            web_config_file: self.web_config_file.clone(),
            dcgm_names: self.dcgm_names,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The dashboard on simulated GPUs (the same as `gpulse --backend sim`)
    Demo,
    /// Check the stack from the driver up (driver, CUDA, frameworks, each GPU, host) and say what to fix
    Doctor(DoctorArgs),
    /// Analyse nvidia-smi CSV logs and recordings: per GPU the verdict, the findings with their times, statistics
    Analyze(AnalyzeArgs),
    /// Every GPU a Prometheus server knows (gpulse and dcgm-exporter targets), worst first
    Fleet(FleetArgs),

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
        /// Stop after this many lines (at least 1)
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        count: Option<u64>,
    },
    /// Record every tick to FILE (NDJSON, zstd with --compress or a .zst name) until Ctrl-C.
    ///
    /// Lines are flushed at least once a second, so a crash loses at most the last second.
    /// Play the file back with `gpulse replay FILE`.
    Record {
        /// The recording to write (overwritten if it exists)
        file: PathBuf,
        /// Stop after this many ticks (at least 1)
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
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
    /// Endpoints: /metrics, /healthz (503 when sampling is stale) and /. With
    /// `--web.config.file FILE` (the YAML node_exporter takes) it serves https only and/or asks
    /// for the basic-auth users listed there.
    Serve {
        /// Address to listen on; only loopback unless you give another (default from the config
        /// file's [exporter] listen, else 127.0.0.1:9400)
        #[arg(long, value_parser = parse_listen, value_name = "ADDR")]
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

/// Options of `gpulse doctor`.
#[derive(Debug, Args, Clone)]
pub struct DoctorArgs {
    /// Print `{"checks":[{"name","status","found","advice"}]}` instead of the checklist
    #[arg(long)]
    pub json: bool,

    /// Sample this long while your job runs (e.g. `30s`) and judge the PCIe link and throttling then
    #[arg(long, value_name = "SECONDS", value_parser = parse_duration)]
    pub under_load: Option<f64>,

    /// How long each framework probe (`python3 -c 'import torch'`, ...) may take
    #[arg(long, value_name = "SECONDS", value_parser = parse_duration, default_value = "30")]
    pub probe_timeout: f64,
}

/// Options of `gpulse fleet`.
#[derive(Debug, Args, Clone)]
pub struct FleetArgs {
    /// The Prometheus server, e.g. `https://host:9090` or `http://host:9090/prometheus` (default:
    /// the config file's [fleet] prometheus, else http://127.0.0.1:9090). Credentials, CA and
    /// client certificate go in the config file's [fleet] table (basic_auth, authorization,
    /// tls_config), never here
    #[arg(long, env = "GPULSE_PROMETHEUS", value_name = "URL")]
    pub prometheus: Option<String>,

    /// Print the fleet once as JSON and exit, instead of opening the screen
    #[arg(long)]
    pub json: bool,

    /// How far back the sparklines reach, e.g. `10m`, `1h`
    #[arg(long, default_value = "10m", value_parser = parse_duration)]
    pub span: f64,

    /// Seconds between refreshes of the screen, e.g. `5s`
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub refresh: f64,

    /// Deadline of each request to Prometheus, e.g. `5s`
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub timeout: f64,

    /// Rank hosts and GPUs by the GPU time lost over this range, e.g. `24h` (from the gpulse
    /// exporters' ledger counters)
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub range: Option<f64>,
}

/// `gpulse analyze FILE...`
#[derive(Debug, Args, Clone)]
pub struct AnalyzeArgs {
    /// Files to analyse (plain, gzip or zstd): gpulse recordings; nvidia-smi CSV logs (`nvidia-smi --query-gpu=timestamp,index,utilization.gpu,... --format=csv -lms 250`), `nvidia-smi dmon` logs, the plain `nvidia-smi` table logged in a loop, `dcgmi dmon` logs
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Print one JSON document per file instead of text (times as Unix seconds)
    #[arg(long)]
    pub json: bool,

    /// Column names of a CSV log written with `noheader`, in query order, e.g. `timestamp,index,utilization.gpu`
    #[arg(long, value_delimiter = ',', value_name = "FIELDS")]
    pub fields: Option<Vec<String>>,

    /// The poll interval of a log without clock times, e.g. `5s` for `nvidia-smi dmon -d 5`, `250ms` for `dcgmi dmon -d 250` (default: 1 s, both tools' default)
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub interval: Option<f64>,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_definition_is_valid() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
