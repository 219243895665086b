//! The exporter's web configuration file: TLS and basic auth, in the YAML format of the
//! Prometheus exporter toolkit (`--web.config.file`, as node_exporter reads it), so one file
//! serves both:
//!
//! ```yaml
//! tls_server_config:
//!   cert_file: server.crt          # relative paths are relative to this file
//!   key_file: server.key
//!   client_auth_type: RequireAndVerifyClientCert   # optional: mutual TLS
//!   client_ca_file: clients-ca.crt
//!   min_version: TLS12             # TLS12 (default) or TLS13
//! basic_auth_users:
//!   prometheus: $2y$10$...         # bcrypt hashes (htpasswd -nBC 10 "" | tr -d ':\n')
//! ```
//!
//! Unknown keys are errors, as in the toolkit. Keys of the toolkit that gpulse does not
//! implement (cipher and curve lists, allowed client SANs, HTTP headers) are errors that say so,
//! rather than settings silently ignored.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use super::http_server::auth::BasicAuthUsers;
use crate::{capped_read, cert_validity, printable, tls_pem};

/// A web configuration file that cannot be used: the file, the key and what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum WebConfigError {
    #[error("cannot read web config file '{}': {reason}", printable::path(.path))]
    Read { path: PathBuf, reason: String },
    #[error("invalid web config file '{}': {}", printable::path(.path), printable::text(.message))]
    Parse { path: PathBuf, message: String },
    #[error("invalid web config file '{}': key '{}': {}", printable::path(.path), printable::text(.key), printable::text(.message))]
    Key {
        path: PathBuf,
        key: String,
        message: String,
    },
}

/// What the exporter serves with: TLS (when a certificate is configured) and the users allowed
/// in (when any are listed).
#[derive(Clone, Default)]
pub struct WebSecurity {
    pub tls: Option<Arc<rustls::ServerConfig>>,
    pub users: Option<Arc<BasicAuthUsers>>,
    /// What works but will fail clients (a certificate out of date), to tell at start.
    pub warnings: Vec<String>,
}

impl std::fmt::Debug for WebSecurity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebSecurity")
            .field("tls", &self.tls.is_some())
            .field("users", &self.users.as_ref().map(|u| u.names()))
            .finish()
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct WebConfigFile {
    #[serde(default)]
    tls_server_config: Option<TlsServerFile>,
    #[serde(default)]
    http_server_config: Option<HttpServerFile>,
    #[serde(default)]
    basic_auth_users: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TlsServerFile {
    #[serde(default)]
    cert_file: Option<String>,
    #[serde(default)]
    key_file: Option<String>,
    #[serde(default)]
    client_auth_type: Option<String>,
    #[serde(default)]
    client_ca_file: Option<String>,
    #[serde(default)]
    min_version: Option<String>,
    #[serde(default)]
    max_version: Option<String>,
    // The toolkit's keys that are not implemented here; present means an error saying so.
    #[serde(default)]
    cipher_suites: Option<serde_yaml_ng::Value>,
    #[serde(default)]
    curve_preferences: Option<serde_yaml_ng::Value>,
    #[serde(default)]
    prefer_server_cipher_suites: Option<serde_yaml_ng::Value>,
    #[serde(default)]
    client_allowed_sans: Option<serde_yaml_ng::Value>,
    #[serde(default)]
    cert: Option<serde_yaml_ng::Value>,
    #[serde(default)]
    key: Option<serde_yaml_ng::Value>,
    #[serde(default)]
    client_ca: Option<serde_yaml_ng::Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct HttpServerFile {
    /// Accepted for compatibility: the exporter speaks HTTP/1.1 only, which every client takes.
    #[serde(default)]
    #[allow(dead_code)]
    http2: Option<bool>,
    #[serde(default)]
    headers: Option<serde_yaml_ng::Value>,
}

/// Read, check and build a web configuration file: every file it names is read now, so a
/// missing certificate or a bad hash is found before the server starts.
pub fn load(path: &Path) -> Result<WebSecurity, WebConfigError> {
    let limit = capped_read::WEB_CONFIG_MAX;
    let text = capped_read::read_text(path, limit, "a web config file").map_err(|e| {
        WebConfigError::Read {
            path: path.to_path_buf(),
            reason: e.to_string(),
        }
    })?;
    let file: Option<WebConfigFile> =
        serde_yaml_ng::from_str(&text).map_err(|e| WebConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string().trim().replace('\n', " "),
        })?;
    let file = file.unwrap_or_default();
    let key_error = |key: &str, message: String| WebConfigError::Key {
        path: path.to_path_buf(),
        key: key.to_string(),
        message,
    };
    if file
        .http_server_config
        .as_ref()
        .is_some_and(|h| h.headers.is_some())
    {
        return Err(key_error(
            "http_server_config.headers",
            "extra response headers are not supported by gpulse; remove the key".into(),
        ));
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut warnings = Vec::new();
    let tls = match &file.tls_server_config {
        Some(t) => tls_server(t, dir, &key_error, &mut warnings)?,
        None => None,
    };
    let users = match &file.basic_auth_users {
        Some(users) if !users.is_empty() => Some(Arc::new(
            BasicAuthUsers::new(users)
                .map_err(|(user, why)| key_error(&format!("basic_auth_users.{user}"), why))?,
        )),
        _ => None,
    };
    Ok(WebSecurity {
        tls,
        users,
        warnings,
    })
}

type KeyError<'a> = &'a dyn Fn(&str, String) -> WebConfigError;

fn unsupported(t: &TlsServerFile) -> Option<&'static str> {
    [
        ("cipher_suites", t.cipher_suites.is_some()),
        ("curve_preferences", t.curve_preferences.is_some()),
        (
            "prefer_server_cipher_suites",
            t.prefer_server_cipher_suites.is_some(),
        ),
        ("client_allowed_sans", t.client_allowed_sans.is_some()),
        ("cert", t.cert.is_some()),
        ("key", t.key.is_some()),
        ("client_ca", t.client_ca.is_some()),
    ]
    .into_iter()
    .find(|(_, present)| *present)
    .map(|(key, _)| key)
}

/// The rustls server configuration of `tls_server_config`; `None` when it names no certificate
/// (the toolkit then serves plain HTTP too).
fn tls_server(
    t: &TlsServerFile,
    dir: &Path,
    key_error: KeyError<'_>,
    warnings: &mut Vec<String>,
) -> Result<Option<Arc<rustls::ServerConfig>>, WebConfigError> {
    if let Some(key) = unsupported(t) {
        return Err(key_error(
            &format!("tls_server_config.{key}"),
            "not supported by gpulse (rustls chooses safe ciphers and curves itself); remove the key"
                .into(),
        ));
    }
    let (cert_file, key_file) = match (non_empty(&t.cert_file), non_empty(&t.key_file)) {
        (None, None) if t.client_ca_file.is_none() && t.client_auth_type.is_none() => {
            return Ok(None)
        }
        (Some(c), Some(k)) => (dir.join(c), dir.join(k)),
        (None, _) => {
            return Err(key_error(
                "tls_server_config.cert_file",
                "missing: TLS needs a certificate (cert_file) and its key (key_file)".into(),
            ))
        }
        (_, None) => {
            return Err(key_error(
                "tls_server_config.key_file",
                "missing: TLS needs a certificate (cert_file) and its key (key_file)".into(),
            ))
        }
    };
    let chain = tls_pem::certificates(&cert_file)
        .map_err(|e| key_error("tls_server_config.cert_file", e.to_string()))?;
    // The first certificate is the server's own (the chain's leaf).
    if let Some(v) = chain
        .first()
        .and_then(|c| cert_validity::validity(c.as_ref()))
    {
        let now = jiff::Timestamp::now();
        warnings.extend(cert_validity::warning(
            &printable::path(&cert_file),
            &v,
            now,
        ));
    }
    let key = tls_pem::private_key(&key_file)
        .map_err(|e| key_error("tls_server_config.key_file", e.to_string()))?;
    let versions = versions(t, key_error)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = super::http_server::tls::client_verifier(
        t.client_auth_type.as_deref(),
        t.client_ca_file.as_deref().map(|f| dir.join(f)).as_deref(),
        provider.clone(),
    )
    .map_err(|(key, why)| key_error(&format!("tls_server_config.{key}"), why))?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| key_error("tls_server_config.min_version", e.to_string()))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(|e| {
            key_error(
                "tls_server_config.key_file",
                format!("does not match cert_file or is not usable: {e}"),
            )
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Some(Arc::new(config)))
}

fn non_empty(v: &Option<String>) -> Option<&str> {
    v.as_deref().filter(|s| !s.trim().is_empty())
}

fn versions(
    t: &TlsServerFile,
    key_error: KeyError<'_>,
) -> Result<Vec<&'static rustls::SupportedProtocolVersion>, WebConfigError> {
    let rank = |key: &str, v: &Option<String>, default: u8| match v.as_deref() {
        None | Some("") => Ok(default),
        Some("TLS12") => Ok(12),
        Some("TLS13") => Ok(13),
        Some("TLS10" | "TLS11") => Err(key_error(
            &format!("tls_server_config.{key}"),
            "TLS 1.0 and 1.1 are not offered; use TLS12 or TLS13".into(),
        )),
        Some(other) => Err(key_error(
            &format!("tls_server_config.{key}"),
            format!("'{other}' is not a TLS version; use TLS12 or TLS13"),
        )),
    };
    let min = rank("min_version", &t.min_version, 12)?;
    let max = rank("max_version", &t.max_version, 13)?;
    if min > max {
        return Err(key_error(
            "tls_server_config.min_version",
            "is above max_version".into(),
        ));
    }
    let mut out = Vec::new();
    if min <= 12 {
        out.push(&rustls::version::TLS12);
    }
    if max >= 13 {
        out.push(&rustls::version::TLS13);
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
