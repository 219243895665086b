//! The config file as text: the commented default file `gpulse config init` writes, and the
//! settings in effect as a file (`gpulse config show`).

use super::{format_duration, ConfigFile, ExporterFile, Settings, DEFAULT_LISTEN};
use crate::detector::DetectorConfig;

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
         # History kept in memory, 1m to 6h, e.g. \"10m\", \"1h\".\n\
         # retention = \"10m\"\n\
         \n\
         # Time window the charts show at start, 10s up to `retention`.\n\
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
         # Prices for the waste ledger's costs (GPU time and energy, either or both).\n\
         # [ledger]\n\
         # price_per_gpu_hour = 2.5\n\
         # price_per_kwh = 0.3\n\
         # currency = \"USD\"\n\
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
        ledger: s.prices.any().then(|| s.prices.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
