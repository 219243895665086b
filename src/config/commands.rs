//! `gpulse config path|show|init|check`.

use std::path::Path;
use std::process::ExitCode;

use crate::cli::GlobalArgs;
use crate::config::{chosen_path, load_file, ConfigFile, ExporterFile, Settings, DEFAULT_LISTEN};
use crate::detector::DetectorConfig;
use crate::output::cli::{ConfigAction, USAGE_ERROR};

/// A duration as the config file writes it (`250ms`, `10m`, `90s`).
pub fn format_duration(s: f64) -> String {
    let ms = (s * 1000.0).round() as u64;
    if ms % 3_600_000 == 0 {
        format!("{}h", ms / 3_600_000)
    } else if ms % 60_000 == 0 {
        format!("{}m", ms / 60_000)
    } else if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// Comment out every line of a TOML fragment.
fn commented(toml: &str) -> String {
    toml.lines()
        .map(|l| {
            if l.is_empty() {
                String::new()
            } else {
                format!("# {l}\n")
            }
        })
        .collect::<Vec<_>>()
        .concat()
}

/// The commented default config file `config init` writes. Every key is commented out, so the
/// file changes nothing until a line is uncommented.
pub fn default_file_text() -> String {
    let detector = toml::to_string(&DetectorConfig::default()).unwrap_or_default();
    format!(
        "# gpulse configuration. Command-line options override these; remove the leading '# ' to set one.\n\
         # Check it with `gpulse config check`; see what is in effect with `gpulse config show`.\n\
         \n\
         # Sampling interval, 100ms to 10s.\n\
         # interval = \"250ms\"\n\
         \n\
         # History kept in memory, e.g. \"10m\", \"1h\".\n\
         # retention = \"10m\"\n\
         \n\
         # Time window the charts show at start (at most `retention`).\n\
         # window = \"60s\"\n\
         \n\
         # Where readings come from: \"auto\", \"nvml\" or \"sim\".\n\
         # backend = \"auto\"\n\
         \n\
         # When to use colour: \"auto\", \"always\" or \"never\" (NO_COLOR also turns it off).\n\
         # color = \"auto\"\n\
         \n\
         # Colour theme: \"dark\", \"light\" or \"mono\".\n\
         # theme = \"dark\"\n\
         \n\
         # Show only these GPUs (indices as nvidia-smi numbers them); all when absent.\n\
         # gpus = [0, 1]\n\
         \n\
         # Prometheus exporter (`gpulse serve`). Other than loopback only when you mean it.\n\
         # [exporter]\n\
         # listen = \"{DEFAULT_LISTEN}\"\n\
         \n\
         # Thresholds of the bottleneck detector.\n\
         # [detector]\n\
         {}",
        commented(&detector)
    )
}

/// The settings in effect as a config file.
pub fn effective_file(s: &Settings) -> ConfigFile {
    ConfigFile {
        interval: Some(format_duration(s.engine.interval_s)),
        retention: Some(format_duration(s.engine.retention_s)),
        window: Some(format_duration(s.window_s)),
        backend: Some(s.backend),
        color: Some(s.color),
        theme: Some(s.theme),
        gpus: s.gpu_filter.clone(),
        detector: Some(s.engine.detector.clone()),
        exporter: Some(ExporterFile {
            listen: Some(s.exporter_listen.to_string()),
        }),
    }
}

fn init(path: &Path, force: bool) -> anyhow::Result<ExitCode> {
    if path.exists() && !force {
        eprintln!(
            "gpulse: '{}' already exists; use `gpulse config init --force` to overwrite it",
            path.display()
        );
        return Ok(ExitCode::from(USAGE_ERROR));
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("cannot create '{}': {e}", dir.display()))?;
    }
    std::fs::write(path, default_file_text())
        .map_err(|e| anyhow::anyhow!("cannot write '{}': {e}", path.display()))?;
    println!("{}", path.display());
    Ok(ExitCode::SUCCESS)
}

/// Run a `config` action.
pub fn run(action: ConfigAction, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let Some(path) = chosen_path(global) else {
        eprintln!("gpulse: no config directory is known on this system; pass --config PATH");
        return Ok(ExitCode::from(USAGE_ERROR));
    };
    match action {
        ConfigAction::Path => {
            println!("{}", path.display());
            if !path.exists() {
                eprintln!("(does not exist; `gpulse config init` creates it)");
            }
            Ok(ExitCode::SUCCESS)
        }
        ConfigAction::Init { force } => init(&path, force),
        ConfigAction::Check => {
            if !path.exists() {
                eprintln!(
                    "gpulse: '{}' does not exist; the defaults apply (`gpulse config init` writes a file to edit)",
                    path.display()
                );
                return Ok(if global.config.is_some() {
                    ExitCode::from(USAGE_ERROR)
                } else {
                    ExitCode::SUCCESS
                });
            }
            match load_file(&path) {
                Ok(_) => {
                    println!("{}: ok", path.display());
                    Ok(ExitCode::SUCCESS)
                }
                Err(e) => {
                    eprintln!("gpulse: {e}");
                    Ok(ExitCode::from(USAGE_ERROR))
                }
            }
        }
        ConfigAction::Show => match Settings::resolve(global, false) {
            Ok(s) => {
                print!("{}", toml::to_string(&effective_file(&s))?);
                Ok(ExitCode::SUCCESS)
            }
            Err(e) => {
                eprintln!("gpulse: {e}");
                Ok(ExitCode::from(USAGE_ERROR))
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_round_trip_through_the_file_format() {
        for (s, text) in [
            (0.25, "250ms"),
            (600.0, "10m"),
            (90.0, "90s"),
            (3600.0, "1h"),
        ] {
            assert_eq!(format_duration(s), text);
            assert_eq!(crate::cli::parse_duration(text), Ok(s));
        }
    }

    #[test]
    fn the_default_file_is_valid_and_changes_nothing() {
        let parsed: ConfigFile = toml::from_str(&default_file_text()).expect("valid TOML");
        assert_eq!(parsed, ConfigFile::default());
        // Uncommenting every key gives a valid file too.
        let all: String = default_file_text()
            .lines()
            .filter(|l| l.starts_with("# ") && (l.contains(" = ") || l.starts_with("# [")))
            .map(|l| format!("{}\n", &l[2..]))
            .collect();
        let file: ConfigFile = toml::from_str(&all).expect("uncommented file parses");
        assert_eq!(
            file.exporter.and_then(|e| e.listen).as_deref(),
            Some(DEFAULT_LISTEN)
        );
        assert_eq!(file.detector, Some(DetectorConfig::default()));
    }
}
