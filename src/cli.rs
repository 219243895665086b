//! The command line: global options valid for every command, and one subcommand per front end.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::backend::sim::Scenario;
use crate::backend::BackendKind;

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

    /// How much history to keep, e.g. `10m`, `1h` (default 10m)
    #[arg(long, global = true, value_parser = parse_duration)]
    pub retention: Option<f64>,

    /// Time window the charts show at start, e.g. `60s` (default 60s)
    #[arg(long, global = true, value_parser = parse_duration)]
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

    /// Also serve Prometheus metrics on this address while the command runs, e.g. 127.0.0.1:9400
    #[arg(long, global = true, value_name = "ADDR", value_parser = crate::config::parse_listen)]
    pub serve: Option<std::net::SocketAddr>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
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
    #[command(flatten)]
    Output(crate::output::cli::OutputCommand),
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
    /// The Prometheus server, e.g. `http://127.0.0.1:9090` or `http://host:9090/prometheus`
    #[arg(
        long,
        env = "GPULSE_PROMETHEUS",
        default_value = "http://127.0.0.1:9090"
    )]
    pub prometheus: String,

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
}

/// `gpulse analyze FILE...`
#[derive(Debug, Args, Clone)]
pub struct AnalyzeArgs {
    /// Files to analyse: nvidia-smi CSV logs (`nvidia-smi --query-gpu=timestamp,index,utilization.gpu,... --format=csv -lms 250`)
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Print one JSON document per file instead of text (times as Unix seconds)
    #[arg(long)]
    pub json: bool,

    /// Column names of a CSV log written with `noheader`, in query order, e.g. `timestamp,index,utilization.gpu`
    #[arg(long, value_delimiter = ',', value_name = "FIELDS")]
    pub fields: Option<Vec<String>>,
}

/// Parse a duration such as `250ms`, `1.5s`, `2m`, `1h` or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a duration; use e.g. 250ms, 1s, 2m, 1h"))?;
    if !v.is_finite() || v <= 0.0 {
        return Err(format!("'{s}' must be a positive duration"));
    }
    Ok(v * scale)
}

/// A sampling interval: a duration between 100 ms and 10 s.
pub fn parse_interval(s: &str) -> Result<f64, String> {
    let v = parse_duration(s)?;
    if !(0.1..=10.0).contains(&v) {
        return Err(format!("interval '{s}' is out of range; use 100ms to 10s"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms"), Ok(0.25));
        assert_eq!(parse_duration("2m"), Ok(120.0));
        assert_eq!(parse_duration("1.5"), Ok(1.5));
        assert!(parse_duration("abc").is_err());
        assert!(parse_duration("-1s").is_err());
        assert!(parse_interval("50ms").is_err());
        assert!(parse_interval("11s").is_err());
        assert_eq!(parse_interval("10s"), Ok(10.0));
    }

    #[test]
    fn cli_definition_is_valid() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
