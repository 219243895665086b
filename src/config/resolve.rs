//! Settings resolved from the command line, the config file and the defaults, in that order.

use std::path::PathBuf;

use crate::backend::sim::{Scenario, SimConfig};
use crate::backend::BackendKind;
use crate::engine::EngineConfig;

use super::{
    base_dir, default_listen, default_path, load_file, parse_interval, parse_listen,
    parse_retention, parse_window, window_fits, ColorChoice, ConfigError, ConfigFile,
    FleetSettings, Overrides, Settings,
};

/// Where a setting came from, for a message: the command line's `option`, the file's `key`, or
/// the default.
fn origin(cli: Option<f64>, file: Option<f64>, option: &str, key: &str) -> String {
    match (cli, file) {
        (Some(_), _) => option.to_string(),
        (None, Some(_)) => format!("'{key}' in the config file"),
        (None, None) => "the default".to_string(),
    }
}

/// The config file in use and its path: the one named on the command line, else the default
/// location's when it exists, else an empty file.
fn chosen_file(args: &Overrides) -> Result<(ConfigFile, Option<PathBuf>), ConfigError> {
    Ok(match &args.config {
        Some(p) => (load_file(p)?, Some(p.clone())),
        None => match default_path().filter(|p| p.exists()) {
            Some(p) => (load_file(&p)?, Some(p)),
            None => (ConfigFile::default(), None),
        },
    })
}

/// Sampling interval, retention and window in seconds. The window must fit in the retention;
/// when it does not, the error says where each of the two came from.
struct Timing {
    interval: f64,
    retention: f64,
    window: f64,
}

impl Timing {
    /// The timing of `args` over `file` over the defaults.
    fn resolve(args: &Overrides, file: &ConfigFile) -> Result<Timing, ConfigError> {
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
        Ok(Timing {
            interval,
            retention,
            window,
        })
    }
}

/// The colour choice; `auto` becomes `never` when `NO_COLOR` is set and not empty.
fn color_choice(args: &Overrides, file: &ConfigFile) -> ColorChoice {
    match args.color.or(file.color).unwrap_or(ColorChoice::Auto) {
        ColorChoice::Auto if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) => {
            ColorChoice::Never
        }
        c => c,
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
        let (file, config_path) = chosen_file(args)?;
        let timing = Timing::resolve(args, &file)?;
        let backend = if demo {
            BackendKind::Sim
        } else {
            args.backend.or(file.backend).unwrap_or(BackendKind::Auto)
        };
        let base = base_dir(config_path.as_deref());
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
                interval_s: timing.interval,
                retention_s: timing.retention,
                detector: file.detector.clone().unwrap_or_default(),
            },
            window_s: timing.window,
            color: color_choice(args, &file),
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
                    .map(|w| base.join(w))
            }),
            fleet: file
                .fleet
                .as_ref()
                .map(|f| FleetSettings {
                    prometheus: f.prometheus.clone(),
                    client: f.client_options(&base),
                })
                .unwrap_or_default(),
            config_path,
            mouse: !args.no_mouse && file.mouse.unwrap_or(true),
            prices: file.ledger.clone().unwrap_or_default(),
            dcgm_names: args
                .dcgm_names
                .or_else(|| file.exporter.as_ref().and_then(|e| e.dcgm_names))
                .unwrap_or_default(),
        })
    }
}
