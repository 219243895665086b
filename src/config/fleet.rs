//! The `[fleet]` table: which Prometheus `gpulse fleet` asks and how it gets in, with the names
//! of Prometheus's own `http_client_config`:
//!
//! ```toml
//! [fleet]
//! prometheus = "https://prometheus.example:9090"
//! basic_auth = { username = "gpulse", password_file = "/etc/gpulse/prometheus-password" }
//! # or: authorization = { type = "Bearer", credentials_file = "/etc/gpulse/token" }
//! tls_config = { ca_file = "/etc/gpulse/ca.pem", cert_file = "client.pem", key_file = "client.key" }
//! proxy_url = "http://proxy.example:3128"
//! ```
//!
//! Secrets are read from files only (a value in the config file would be printed by `config
//! show` and copied around with it); relative paths are relative to the config file.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::fleet::http_options::{Auth, ClientOptions, TlsFiles};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct FleetFile {
    /// The Prometheus server, e.g. "https://prometheus.example:9090".
    pub prometheus: Option<String>,
    pub basic_auth: Option<BasicAuthFile>,
    pub authorization: Option<AuthorizationFile>,
    pub tls_config: Option<TlsConfigFile>,
    /// An HTTP proxy, e.g. "http://proxy.example:3128".
    pub proxy_url: Option<String>,
    /// Use HTTPS_PROXY / HTTP_PROXY / NO_PROXY when no proxy_url is set (default false).
    pub proxy_from_environment: Option<bool>,
    /// Follow redirects (default true); credentials go only to the same host.
    pub follow_redirects: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct BasicAuthFile {
    pub username: Option<String>,
    pub password_file: Option<String>,
    /// Refused with what to use instead: a secret belongs in a file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<InlineSecret>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct AuthorizationFile {
    /// The scheme, "Bearer" when absent.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub credentials_file: Option<String>,
    /// Refused with what to use instead: a secret belongs in a file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credentials: Option<InlineSecret>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct TlsConfigFile {
    pub ca_file: Option<String>,
    pub cert_file: Option<String>,
    pub key_file: Option<String>,
    pub insecure_skip_verify: Option<bool>,
}

/// A secret written into the config file: never printed, always refused.
#[derive(Clone, PartialEq, Deserialize)]
#[serde(transparent)]
pub struct InlineSecret(String);

impl std::fmt::Debug for InlineSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

impl Serialize for InlineSecret {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("<redacted>")
    }
}

/// A bad `[fleet]` key: its name, and what is wrong and valid.
pub struct KeyProblem {
    pub key: &'static str,
    pub value: String,
    pub valid: String,
}

fn problem(key: &'static str, value: &str, valid: impl Into<String>) -> KeyProblem {
    KeyProblem {
        key,
        value: value.to_string(),
        valid: valid.into(),
    }
}

impl FleetFile {
    /// Check the keys' shapes (files are read when used, and by `config check`).
    pub fn validate(&self) -> Result<(), KeyProblem> {
        if let Some(url) = &self.prometheus {
            crate::fleet::endpoint::Endpoint::parse(url)
                .map_err(|e| problem("fleet.prometheus", url, e.to_string()))?;
        }
        if self.basic_auth.is_some() && self.authorization.is_some() {
            return Err(problem(
                "fleet.authorization",
                "…",
                "use either basic_auth or authorization, not both",
            ));
        }
        if let Some(b) = &self.basic_auth {
            b.validate()?;
        }
        if let Some(a) = &self.authorization {
            a.validate()?;
        }
        if let Some(t) = &self.tls_config {
            if t.cert_file.is_some() != t.key_file.is_some() {
                let key = if t.cert_file.is_some() {
                    "fleet.tls_config.key_file"
                } else {
                    "fleet.tls_config.cert_file"
                };
                return Err(problem(
                    key,
                    "",
                    "a client certificate needs both cert_file and key_file",
                ));
            }
        }
        if let Some(p) = &self.proxy_url {
            let ok = ["http://", "https://"]
                .iter()
                .any(|s| p.to_ascii_lowercase().starts_with(s));
            if !ok {
                return Err(problem(
                    "fleet.proxy_url",
                    &crate::fleet::http_options::redact_url_userinfo(p),
                    "use http://HOST:PORT",
                ));
            }
        }
        Ok(())
    }

    /// The client's options, with paths made absolute against `base` (the config file's folder).
    pub fn client_options(&self, base: &Path) -> ClientOptions {
        let path = |p: &String| -> PathBuf { base.join(p) };
        let auth = if let Some(b) = &self.basic_auth {
            Some(Auth::Basic {
                username: b.username.clone().unwrap_or_default(),
                password_file: b.password_file.as_ref().map(path).unwrap_or_default(),
            })
        } else {
            self.authorization.as_ref().map(|a| Auth::Credentials {
                kind: a.kind.clone().unwrap_or_else(|| "Bearer".into()),
                credentials_file: a.credentials_file.as_ref().map(path).unwrap_or_default(),
            })
        };
        let tls = self.tls_config.as_ref().map(|t| TlsFiles {
            ca_file: t.ca_file.as_ref().map(path),
            cert_file: t.cert_file.as_ref().map(path),
            key_file: t.key_file.as_ref().map(path),
            insecure_skip_verify: t.insecure_skip_verify.unwrap_or(false),
        });
        ClientOptions {
            auth,
            tls: tls.unwrap_or_default(),
            proxy_url: self.proxy_url.clone(),
            proxy_from_environment: self.proxy_from_environment.unwrap_or(false),
            follow_redirects: self.follow_redirects.unwrap_or(true),
        }
    }
}

impl BasicAuthFile {
    fn validate(&self) -> Result<(), KeyProblem> {
        if self.password.is_some() {
            return Err(problem(
                "fleet.basic_auth.password",
                "<redacted>",
                "secrets are not read from the config file; put the password alone in a file and name it with basic_auth.password_file",
            ));
        }
        let username = self.username.as_deref().unwrap_or("");
        if username.is_empty() || username.contains(':') {
            return Err(problem(
                "fleet.basic_auth.username",
                username,
                "name the user (without ':')",
            ));
        }
        if self.password_file.is_none() {
            return Err(problem(
                "fleet.basic_auth.password_file",
                "",
                "name the file that holds the password",
            ));
        }
        Ok(())
    }
}

impl AuthorizationFile {
    fn validate(&self) -> Result<(), KeyProblem> {
        if self.credentials.is_some() {
            return Err(problem(
                "fleet.authorization.credentials",
                "<redacted>",
                "secrets are not read from the config file; put the token alone in a file and name it with authorization.credentials_file",
            ));
        }
        let kind = self.kind.as_deref().unwrap_or("Bearer");
        if kind.is_empty() || !kind.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return Err(problem(
                "fleet.authorization.type",
                kind,
                "a scheme name such as Bearer",
            ));
        }
        if kind.eq_ignore_ascii_case("basic") {
            return Err(problem(
                "fleet.authorization.type",
                kind,
                "for Basic use basic_auth = { username, password_file }",
            ));
        }
        if self.credentials_file.is_none() {
            return Err(problem(
                "fleet.authorization.credentials_file",
                "",
                "name the file that holds the token",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> FleetFile {
        toml::from_str(text).expect("valid TOML")
    }

    #[test]
    fn prometheus_names_become_client_options() {
        let f = parse(
            "prometheus = \"https://p.example\"\n\
             basic_auth = { username = \"u\", password_file = \"pw\" }\n\
             tls_config = { ca_file = \"/etc/ca.pem\", insecure_skip_verify = false }\n",
        );
        assert!(f.validate().is_ok());
        let o = f.client_options(Path::new("/cfg"));
        assert_eq!(
            o.auth,
            Some(Auth::Basic {
                username: "u".into(),
                password_file: PathBuf::from("/cfg/pw")
            })
        );
        assert_eq!(o.tls.ca_file, Some(PathBuf::from("/etc/ca.pem")));
        assert!(o.follow_redirects);
    }

    #[test]
    fn inline_secrets_are_refused_and_never_printed() {
        let f = parse("basic_auth = { username = \"u\", password = \"hunter2\" }\n");
        let p = f.validate().expect_err("refused");
        assert_eq!(p.key, "fleet.basic_auth.password");
        assert!(p.valid.contains("password_file"));
        assert!(!format!("{f:?}").contains("hunter2"));
        assert!(!toml::to_string(&f).expect("toml").contains("hunter2"));
        let f = parse("authorization = { credentials = \"tok\" }\n");
        assert_eq!(
            f.validate().err().map(|p| p.key),
            Some("fleet.authorization.credentials")
        );
    }

    #[test]
    fn shapes_are_checked() {
        for (text, key) in [
            ("prometheus = \"ftp://x\"", "fleet.prometheus"),
            (
                "basic_auth = { password_file = \"p\" }",
                "fleet.basic_auth.username",
            ),
            (
                "tls_config = { cert_file = \"c\" }",
                "fleet.tls_config.key_file",
            ),
            (
                "authorization = { type = \"Basic\", credentials_file = \"f\" }",
                "fleet.authorization.type",
            ),
            ("proxy_url = \"proxy:3128\"", "fleet.proxy_url"),
        ] {
            assert_eq!(
                parse(text).validate().err().map(|p| p.key),
                Some(key),
                "{text}"
            );
        }
    }
}
