//! The config file and the settings resolved from it: command line over file over defaults.
//!
//! The file is TOML in the platform's config directory (`~/.config/gpulse/config.toml` on Linux),
//! or the path given by `--config` / `GPULSE_CONFIG`. A file that exists but is invalid is an error
//! that names the key, the value and what is valid, before any screen opens.

pub mod fleet;
pub mod template;
pub mod values;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use values::{
    format_duration, parse_duration, parse_interval, parse_listen, parse_retention, parse_window,
    window_fits,
};

use crate::backend::sim::{Scenario, SimConfig};
use crate::backend::BackendKind;
use crate::detector::DetectorConfig;
use crate::engine::EngineConfig;
use crate::ledger::Prices;
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

fn default_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 9400))
}

/// The config file a command uses: `--config` / `GPULSE_CONFIG`, else the default location.
pub fn chosen_path(args: &Overrides) -> Option<PathBuf> {
    args.config.clone().or_else(default_path)
}

/// Read and validate a config file.
pub fn load_file(path: &Path) -> Result<ConfigFile, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|cause| match cause.kind() {
        std::io::ErrorKind::NotFound => ConfigError::Missing {
            path: path.to_path_buf(),
        },
        _ => ConfigError::Read {
            path: path.to_path_buf(),
            cause,
        },
    })?;
    let file: ConfigFile = toml::from_str(&text).map_err(|e| ConfigError::Parse {
        path: path.to_path_buf(),
        report: e.to_string().trim_end().to_string(),
    })?;
    validate(&file, path)?;
    Ok(file)
}

fn validate(file: &ConfigFile, path: &Path) -> Result<(), ConfigError> {
    let bad = |key: &str, value: &str, valid: &str| ConfigError::Value {
        path: path.to_path_buf(),
        key: key.to_string(),
        value: value.to_string(),
        valid: valid.to_string(),
    };
    if let Some(v) = &file.interval {
        parse_interval(v).map_err(|e| bad("interval", v, &e))?;
    }
    if let Some(v) = &file.retention {
        parse_retention(v).map_err(|e| bad("retention", v, &e))?;
    }
    if let Some(v) = &file.window {
        parse_window(v).map_err(|e| bad("window", v, &e))?;
    }
    if let Some(gpus) = &file.gpus {
        let mut seen = std::collections::BTreeSet::new();
        if gpus.is_empty() {
            return Err(bad(
                "gpus",
                "[]",
                "list at least one GPU index, e.g. [0, 1], or remove the key to show every GPU",
            ));
        }
        if let Some(dup) = gpus.iter().find(|g| !seen.insert(**g)) {
            return Err(bad(
                "gpus",
                &format!("{gpus:?}"),
                &format!("GPU {dup} is listed twice; list each index once"),
            ));
        }
    }
    if let Some(listen) = file.exporter.as_ref().and_then(|e| e.listen.as_ref()) {
        parse_listen(listen).map_err(|e| bad("exporter.listen", listen, &e))?;
    }
    if let Some(web) = file
        .exporter
        .as_ref()
        .and_then(|e| e.web_config_file.as_ref())
    {
        if web.trim().is_empty() {
            return Err(bad(
                "exporter.web_config_file",
                web,
                "name a web configuration file (YAML with tls_server_config, basic_auth_users)",
            ));
        }
    }
    if let Some(f) = &file.fleet {
        f.validate().map_err(|p| bad(p.key, &p.value, &p.valid))?;
    }
    if let (Some(w), Some(r)) = (&file.window, &file.retention) {
        if let (Ok(wv), Ok(rv)) = (parse_window(w), parse_retention(r)) {
            window_fits(wv, rv).map_err(|e| bad("window", w, &e))?;
        }
    }
    if let Some(prices) = &file.ledger {
        validate_prices(prices).map_err(|(key, value, valid)| bad(key, &value, valid))?;
    }
    if let Some(d) = &file.detector {
        for (key, value, lo, hi, unit) in d.ranges() {
            if !(lo..=hi).contains(&value) {
                return Err(bad(
                    &format!("detector.{key}"),
                    &value.to_string(),
                    &format!("use {lo} to {hi}{unit}"),
                ));
            }
        }
    }
    Ok(())
}

/// A price is a finite amount of at least 0; a currency is a short name. On a problem: the key,
/// the value and what is valid.
fn validate_prices(p: &Prices) -> Result<(), (&'static str, String, &'static str)> {
    for (key, v) in [
        ("ledger.price_per_gpu_hour", p.price_per_gpu_hour),
        ("ledger.price_per_kwh", p.price_per_kwh),
    ] {
        if let Some(v) = v.filter(|v| !(v.is_finite() && *v >= 0.0)) {
            return Err((key, v.to_string(), "use a price of 0 or more, e.g. 2.5"));
        }
    }
    if let Some(c) = p
        .currency
        .as_ref()
        .filter(|c| c.trim().is_empty() || c.chars().count() > 8 || c.contains(char::is_control))
    {
        return Err((
            "ledger.currency",
            c.clone(),
            "use a short name of 1 to 8 characters, e.g. \"USD\" or \"€\"",
        ));
    }
    Ok(())
}

/// Where a setting came from, for a message: the command line's `option`, the file's `key`, or
/// the default.
fn origin(cli: Option<f64>, file: Option<f64>, option: &str, key: &str) -> String {
    match (cli, file) {
        (Some(_), _) => option.to_string(),
        (None, Some(_)) => format!("'{key}' in the config file"),
        (None, None) => "the default".to_string(),
    }
}

impl Settings {
    /// Whether GPU `index` is among those shown (`gpus` in the config file).
    pub fn shows(&self, index: u32) -> bool {
        self.gpu_filter
            .as_ref()
            .is_none_or(|only| only.contains(&index))
    }

    /// The GPU filter, shareable with the exporter's threads.
    pub fn show_filter(&self) -> std::sync::Arc<dyn Fn(u32) -> bool + Send + Sync> {
        let filter = self.gpu_filter.clone();
        std::sync::Arc::new(move |i| filter.as_ref().is_none_or(|f| f.contains(&i)))
    }

    /// Resolve settings: command line over file over defaults.
    pub fn resolve(args: &Overrides, demo: bool) -> Result<Settings, ConfigError> {
        let (file, config_path) = match &args.config {
            Some(p) => (load_file(p)?, Some(p.clone())),
            None => match default_path().filter(|p| p.exists()) {
                Some(p) => (load_file(&p)?, Some(p)),
                None => (ConfigFile::default(), None),
            },
        };
        let from_file = |v: &Option<String>, parse: fn(&str) -> Result<f64, String>| {
            v.as_deref().and_then(|s| parse(s).ok())
        };
        let interval = args
            .interval
            .or_else(|| from_file(&file.interval, parse_interval))
            .unwrap_or(0.25);
        let retention_file = from_file(&file.retention, parse_retention);
        let retention = args.retention.or(retention_file).unwrap_or(600.0);
        let window_file = from_file(&file.window, parse_window);
        let window = args.window.or(window_file).unwrap_or(60.0);
        window_fits(window, retention).map_err(|why| {
            ConfigError::Combination(format!(
                "{why} (the window from {}, the retention from {})",
                origin(args.window, window_file, "--window", "window"),
                origin(args.retention, retention_file, "--retention", "retention"),
            ))
        })?;
        let backend = if demo {
            BackendKind::Sim
        } else {
            args.backend.or(file.backend).unwrap_or(BackendKind::Auto)
        };
        let color = match args.color.or(file.color).unwrap_or(ColorChoice::Auto) {
            ColorChoice::Auto if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) => {
                ColorChoice::Never
            }
            c => c,
        };
        Ok(Settings {
            backend,
            sim: SimConfig {
                scenario: args.scenario.unwrap_or(Scenario::Mixed),
                gpus: args.gpus.unwrap_or(4),
                seed: args.seed.unwrap_or(1),
                start: None,
                hostname: None,
            },
            engine: EngineConfig {
                interval_s: interval,
                retention_s: retention,
                detector: file.detector.clone().unwrap_or_default(),
            },
            window_s: window,
            color,
            theme: file.theme.unwrap_or_default(),
            exporter_listen: file
                .exporter
                .as_ref()
                .and_then(|e| e.listen.as_deref())
                .and_then(|l| parse_listen(l).ok())
                .unwrap_or_else(default_listen),
            serve: args.serve,
            gpu_filter: file.gpus.clone(),
            readonly: args.readonly,
            web_config_file: args.web_config_file.clone().or_else(|| {
                file.exporter
                    .as_ref()
                    .and_then(|e| e.web_config_file.as_ref())
                    .map(|w| base_dir(config_path.as_deref()).join(w))
            }),
            fleet: file
                .fleet
                .as_ref()
                .map(|f| FleetSettings {
                    prometheus: f.prometheus.clone(),
                    client: f.client_options(&base_dir(config_path.as_deref())),
                })
                .unwrap_or_default(),
            config_path,
            mouse: !args.no_mouse && file.mouse.unwrap_or(true),
            prices: file.ledger.clone().unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(body: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("config.toml");
        std::fs::write(&p, body).expect("write");
        (dir, p)
    }

    #[test]
    fn unknown_key_is_an_error_naming_it() {
        let (_d, p) = write("intervall = \"1s\"\n");
        let e = load_file(&p).expect_err("unknown key").to_string();
        assert!(e.contains("intervall"), "{e}");
        assert!(e.contains("config.toml"), "{e}");
    }

    #[test]
    fn bad_value_names_key_value_and_what_is_valid() {
        let (_d, p) = write("interval = \"20ms\"\n");
        let e = load_file(&p).expect_err("bad value").to_string();
        assert!(
            e.contains("'interval'") && e.contains("'20ms'") && e.contains("100ms to 10s"),
            "{e}"
        );
    }

    #[test]
    fn detector_thresholds_are_checked() {
        let (_d, p) = write("[detector]\ndip_enter = 0.9\n");
        let e = load_file(&p).expect_err("out of range").to_string();
        assert!(
            e.contains("'detector.dip_enter'") && e.contains("'0.9'"),
            "{e}"
        );
        let (_d, p) = write("[detector]\nwindow_s = 120.0\nmin_cycles = 3\n");
        let f = load_file(&p).expect("valid");
        assert_eq!(f.detector.map(|d| d.min_cycles), Some(3));
        let (_d, p) = write("[detector]\nwindow = 120.0\n");
        assert!(load_file(&p).is_err());
    }

    #[test]
    fn ledger_prices_are_read_and_checked() {
        let (_d, p) =
            write("[ledger]\nprice_per_gpu_hour = 2.5\nprice_per_kwh = 0.3\ncurrency = \"EUR\"\n");
        let args = Overrides {
            config: Some(p),
            ..Overrides::default()
        };
        let s = Settings::resolve(&args, false).expect("valid");
        assert_eq!(s.prices.price_per_gpu_hour, Some(2.5));
        assert_eq!(s.prices.currency.as_deref(), Some("EUR"));
        for (body, key) in [
            ("[ledger]\nprice_per_kwh = -1.0\n", "'ledger.price_per_kwh'"),
            ("[ledger]\ncurrency = \"\"\n", "'ledger.currency'"),
        ] {
            let (_d, p) = write(body);
            let e = load_file(&p).expect_err("invalid").to_string();
            assert!(e.contains(key), "{e}");
        }
        let (_d, p) = write("[ledger]\nprice = 1.0\n");
        assert!(load_file(&p)
            .expect_err("unknown key")
            .to_string()
            .contains("price"));
    }

    #[test]
    fn a_toml_error_keeps_its_report_lines_and_the_caret() {
        let (_d, p) = write("interval = \"1s\"\nretention = 5m\n");
        let e = load_file(&p).expect_err("not TOML").to_string();
        let lines: Vec<&str> = e.lines().collect();
        assert!(lines.len() >= 4, "{e}");
        assert!(lines[0].ends_with("config.toml':"), "{e}");
        let caret = lines
            .iter()
            .position(|l| l.contains('^'))
            .expect("caret line");
        // The caret stands under the bad value on the line above it.
        let col = lines[caret].find('^').expect("caret");
        assert_eq!(lines[caret - 1].get(col..col + 2), Some("5m"), "{e}");
    }

    #[test]
    fn a_named_file_that_does_not_exist_is_an_error_that_says_so() {
        let dir = tempfile::tempdir().expect("tempdir");
        let args = Overrides {
            config: Some(dir.path().join("nope.toml")),
            ..Overrides::default()
        };
        let e = Settings::resolve(&args, false)
            .expect_err("missing")
            .to_string();
        assert!(e.contains("nope.toml' does not exist"), "{e}");
        assert!(!e.contains("os error"), "{e}");
    }

    #[test]
    fn window_and_retention_follow_one_rule_from_either_place() {
        // The command line's window against the default retention.
        let (_empty, empty) = write("");
        let args = Overrides {
            window: Some(7200.0),
            config: Some(empty),
            ..Overrides::default()
        };
        let e = Settings::resolve(&args, false)
            .expect_err("window > retention")
            .to_string();
        assert!(
            e.contains("cannot be longer than the history kept (retention 10m)"),
            "{e}"
        );
        assert!(
            e.contains("window from --window, the retention from the default"),
            "{e}"
        );
        // The file's window against the command line's retention.
        let (_d, p) = write("window = \"5m\"\n");
        let args = Overrides {
            retention: Some(120.0),
            config: Some(p),
            ..Overrides::default()
        };
        let e = Settings::resolve(&args, false)
            .expect_err("window > retention")
            .to_string();
        assert!(
            e.contains("'window' in the config file, the retention from --retention"),
            "{e}"
        );
        // The file alone.
        let (_d, p) = write("window = \"2h\"\nretention = \"1h\"\n");
        let e = load_file(&p).expect_err("window > retention").to_string();
        assert!(
            e.contains("key 'window' = '2h': the chart window (2h) cannot be longer"),
            "{e}"
        );
    }

    #[test]
    fn command_line_over_file_over_default() {
        let (_d, p) = write("interval = \"1s\"\nretention = \"5m\"\n");
        let mut args = Overrides {
            config: Some(p),
            color: Some(ColorChoice::Never),
            ..Overrides::default()
        };
        let s = Settings::resolve(&args, false).expect("valid");
        assert_eq!(s.engine.interval_s, 1.0);
        assert_eq!(s.engine.retention_s, 300.0);
        assert_eq!(s.window_s, 60.0);
        assert_eq!(
            s.exporter_listen.to_string(),
            DEFAULT_LISTEN,
            "loopback by default"
        );
        assert!(s.exporter_listen.ip().is_loopback());
        args.interval = Some(0.5);
        let s = Settings::resolve(&args, true).expect("valid");
        assert_eq!(s.engine.interval_s, 0.5);
        assert_eq!(s.backend, BackendKind::Sim);
    }
}
