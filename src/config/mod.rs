//! The config file and the settings resolved from it: command line over file over defaults.
//!
//! The file is TOML in the platform's config directory (`~/.config/gpulse/config.toml` on Linux),
//! or the path given by `--config` / `GPULSE_CONFIG`. A file that exists but is invalid is an error
//! that names the key, the value and what is valid, before any screen opens.

pub mod fleet;
pub mod template;
pub mod values;

mod load;
mod resolve;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use load::load_file;
pub use values::{
    format_duration, parse_duration, parse_interval, parse_listen, parse_retention, parse_window,
    window_fits,
};

use crate::backend::sim::{Scenario, SimConfig};
use crate::backend::BackendKind;
use crate::detector::DetectorConfig;
use crate::engine::EngineConfig;
use crate::ledger::Prices;
use crate::output::prometheus::DcgmNames;
use crate::printable;

/// What the config file may hold. Unknown keys are errors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct ConfigFile {
    /// Sampling interval, e.g. "250ms".
    pub interval: Option<String>,
    /// History kept, e.g. "10m".
    pub retention: Option<String>,
    /// Chart window at start, e.g. "60s".
    pub window: Option<String>,
    pub backend: Option<BackendKind>,
    pub color: Option<ColorChoice>,
    /// Colour theme of the dashboard.
    pub theme: Option<Theme>,
    /// Only these GPU indices are shown (all when absent).
    pub gpus: Option<Vec<u32>>,
    /// Whether the dashboard takes mouse clicks and the wheel (default true; `false` leaves the
    /// mouse to the terminal, e.g. for selecting text).
    pub mouse: Option<bool>,
    pub detector: Option<DetectorConfig>,
    pub exporter: Option<ExporterFile>,
    pub fleet: Option<fleet::FleetFile>,
    /// Prices of GPU time and energy, for the waste ledger's costs.
    pub ledger: Option<Prices>,
}

/// The `[exporter]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct ExporterFile {
    /// Address `gpulse serve` listens on, e.g. "127.0.0.1:9400".
    pub listen: Option<String>,
    /// TLS and basic auth: an exporter-toolkit web configuration file (YAML), as
    /// `--web.config.file` takes; relative to the config file.
    pub web_config_file: Option<String>,
    /// Which of dcgm-exporter's metric names to write: "legacy" (up to 4.8, the default) or
    /// "current" (4.10 and later).
    pub dcgm_names: Option<DcgmNames>,
}

/// Colour themes of the dashboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Theme {
    /// Colours for a dark terminal background.
    #[default]
    Dark,
    /// Colours for a light terminal background.
    Light,
    /// No colour, only bold and reverse video.
    Mono,
}

/// When to use colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

/// The exporter's address when none is given: loopback only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9400";

/// The Prometheus server `gpulse fleet` asks when neither `--prometheus` nor `[fleet]` names one.
pub const DEFAULT_PROMETHEUS: &str = "http://127.0.0.1:9090";

/// What the command line sets over the config file (every field optional: absent means "from the
/// file, else the default").
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    pub backend: Option<BackendKind>,
    pub scenario: Option<Scenario>,
    pub gpus: Option<u32>,
    pub seed: Option<u64>,
    pub interval: Option<f64>,
    pub retention: Option<f64>,
    pub window: Option<f64>,
    /// `--config` / `GPULSE_CONFIG`.
    pub config: Option<PathBuf>,
    pub color: Option<ColorChoice>,
    pub readonly: bool,
    /// `--no-mouse`: leave the mouse to the terminal.
    pub no_mouse: bool,
    pub serve: Option<SocketAddr>,
    /// `--web.config.file`.
    pub web_config_file: Option<PathBuf>,
    /// `--dcgm-names`.
    pub dcgm_names: Option<DcgmNames>,
}

/// A problem with the config file, naming the file, the key and what is valid.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config file '{}' does not exist; `gpulse --config {} config init` writes one there, or leave out --config (and GPULSE_CONFIG) to use the defaults", printable::path(.path), printable::path(.path))]
    Missing { path: PathBuf },
    #[error("cannot read config file '{}': {cause}", printable::path(.path))]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    /// The TOML parser's report, several lines with a caret under the fault.
    #[error("invalid config file '{}':\n{}", printable::path(.path), printable::lines(.report))]
    Parse { path: PathBuf, report: String },
    #[error("invalid config file '{}': key '{key}' = '{}': {valid}", printable::path(.path), printable::text(.value))]
    Value {
        path: PathBuf,
        key: String,
        value: String,
        valid: String,
    },
    /// Values that are valid alone but not together (from the command line, the file or the
    /// defaults).
    #[error("{0}")]
    Combination(String),
}

/// Everything the commands need, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub backend: BackendKind,
    pub sim: SimConfig,
    pub engine: EngineConfig,
    /// Chart window at start, seconds.
    pub window_s: f64,
    pub color: ColorChoice,
    pub theme: Theme,
    /// Address `gpulse serve` listens on (from the file's `[exporter] listen`, or loopback:9400).
    pub exporter_listen: SocketAddr,
    /// Serve `/metrics` alongside any command (`--serve ADDR`).
    pub serve: Option<SocketAddr>,
    /// GPU indices to show (all when `None`).
    pub gpu_filter: Option<Vec<u32>>,
    /// The config file that was read, if any.
    pub config_path: Option<PathBuf>,
    /// `--readonly`: never signal processes.
    pub readonly: bool,
    /// The exporter's web configuration file (TLS, basic auth): `--web.config.file`, else the
    /// file's `[exporter] web_config_file`.
    pub web_config_file: Option<PathBuf>,
    /// `[fleet]`: the Prometheus server and how to reach it.
    pub fleet: FleetSettings,
    /// The dashboard takes mouse clicks and the wheel (`--no-mouse` or `mouse = false`: not).
    pub mouse: bool,
    /// Prices for the ledger's costs (the file's `[ledger]` table; none by default).
    pub prices: Prices,
    /// The exporter's metric names: `--dcgm-names`, else the file's `[exporter] dcgm_names`.
    pub dcgm_names: DcgmNames,
}

/// What `gpulse fleet` asks, from the config file's `[fleet]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FleetSettings {
    /// The Prometheus URL (the command line's `--prometheus` wins).
    pub prometheus: Option<String>,
    pub client: crate::fleet::http_options::ClientOptions,
}

/// The folder relative paths in a config file are relative to.
pub fn base_dir(config_path: Option<&Path>) -> PathBuf {
    config_path
        .and_then(Path::parent)
        .filter(|d| !d.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// The default config file location (`~/.config/gpulse/config.toml` on Linux).
pub fn default_path() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "gpulse").map(|d| d.config_dir().join("config.toml"))
}

/// Where the exporter listens without an `[exporter] listen`: loopback only, port 9400.
fn default_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 9400))
}

/// The config file a command uses: `--config` / `GPULSE_CONFIG`, else the default location.
pub fn chosen_path(args: &Overrides) -> Option<PathBuf> {
    args.config.clone().or_else(default_path)
}

#[cfg(test)]
mod tests;
