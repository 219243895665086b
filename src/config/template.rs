//! The config file as text: the commented default file `gpulse config init` writes, and the
//! settings in effect as a file (`gpulse config show`).

use super::fleet::{AuthorizationFile, BasicAuthFile, FleetFile, TlsConfigFile};
use super::{
    format_duration, ConfigFile, ExporterFile, FleetSettings, Settings, DEFAULT_LISTEN,
    DEFAULT_PROMETHEUS,
};
use crate::detector::DetectorConfig;
use crate::fleet::http_options::{redact_url_userinfo, Auth, TlsFiles};

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
         # Clicks and the wheel in the dashboard; false leaves the mouse to the terminal (as --no-mouse).\n\
         # mouse = true\n\
         \n\
         # Prometheus exporter (`gpulse serve`). Other than loopback only when you mean it.\n\
         # [exporter]\n\
         # listen = \"{DEFAULT_LISTEN}\"\n\
         # TLS and basic auth: a web configuration file as node_exporter takes with\n\
         # --web.config.file (YAML: tls_server_config.cert_file/key_file, optional\n\
         # client_auth_type + client_ca_file; basic_auth_users with bcrypt hashes). With TLS set,\n\
         # plain http is refused. Relative to this file.\n\
         # web_config_file = \"web-config.yml\"\n\
         # dcgm-exporter's metric names: \"legacy\" (up to 4.8) or \"current\" (4.10 and later:\n\
         # DCGM_FI_DEV_GPU_UTIL_RATIO, clocks in Hz, energy in J, ...), as --dcgm-names.\n\
         # dcgm_names = \"legacy\"\n\
         \n\
         # Where `gpulse fleet` asks (--prometheus overrides `prometheus`), with Prometheus's own\n\
         # http_client_config names. Secrets are read from files, never from this file.\n\
         # [fleet]\n\
         # prometheus = \"https://prometheus.example:9090\"\n\
         # basic_auth = {{ username = \"gpulse\", password_file = \"prometheus-password\" }}\n\
         # Or, instead of basic_auth, a token (the Authorization header's scheme and credentials):\n\
         # authorization = {{ type = \"Bearer\", credentials_file = \"prometheus-token\" }}\n\
         # A CA of your own (unknown CAs are refused), a client certificate for mutual TLS:\n\
         # tls_config = {{ ca_file = \"ca.pem\", cert_file = \"client.pem\", key_file = \"client.key\", insecure_skip_verify = false }}\n\
         # proxy_url = \"http://proxy.example:3128\"\n\
         # proxy_from_environment = false\n\
         # follow_redirects = true\n\
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
        mouse: Some(s.mouse),
        detector: Some(s.engine.detector.clone()),
        exporter: Some(ExporterFile {
            listen: Some(s.exporter_listen.to_string()),
            web_config_file: s.web_config_file.as_ref().map(|p| p.display().to_string()),
            dcgm_names: Some(s.dcgm_names),
        }),
        fleet: Some(effective_fleet(&s.fleet)),
        ledger: s.prices.any().then(|| s.prices.clone()),
    }
}

/// `[fleet]` as in effect: where the secrets are, never what they are.
fn effective_fleet(f: &FleetSettings) -> FleetFile {
    let shown = |p: &std::path::PathBuf| Some(p.display().to_string());
    let (basic_auth, authorization) = match &f.client.auth {
        Some(Auth::Basic {
            username,
            password_file,
        }) => (
            Some(BasicAuthFile {
                username: Some(username.clone()),
                password_file: shown(password_file),
                password: None,
            }),
            None,
        ),
        Some(Auth::Credentials {
            kind,
            credentials_file,
        }) => (
            None,
            Some(AuthorizationFile {
                kind: Some(kind.clone()),
                credentials_file: shown(credentials_file),
                credentials: None,
            }),
        ),
        None => (None, None),
    };
    let tls = &f.client.tls;
    let tls_config = (*tls != TlsFiles::default()).then(|| TlsConfigFile {
        ca_file: tls.ca_file.as_ref().and_then(shown),
        cert_file: tls.cert_file.as_ref().and_then(shown),
        key_file: tls.key_file.as_ref().and_then(shown),
        insecure_skip_verify: Some(tls.insecure_skip_verify),
    });
    FleetFile {
        prometheus: Some(
            f.prometheus
                .clone()
                .unwrap_or_else(|| DEFAULT_PROMETHEUS.to_string()),
        ),
        basic_auth,
        authorization,
        tls_config,
        proxy_url: f.client.proxy_url.as_deref().map(redact_url_userinfo),
        proxy_from_environment: Some(f.client.proxy_from_environment),
        follow_redirects: Some(f.client.follow_redirects),
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
