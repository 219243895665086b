//! How the fleet client reaches Prometheus besides its URL: credentials, TLS files, a proxy.
//! The config file's `[fleet]` table fills these with Prometheus's own `http_client_config`
//! names. Secrets stay in their files; what is held here is where they are.

use std::path::PathBuf;

/// Credentials sent with every request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    /// `Authorization: Basic …` from a user name and a password file.
    Basic {
        username: String,
        password_file: PathBuf,
    },
    /// `Authorization: <kind> <credentials>`, e.g. a Bearer token from a file.
    Credentials {
        kind: String,
        credentials_file: PathBuf,
    },
}

/// TLS settings of an https URL (Prometheus's `tls_config`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsFiles {
    /// CA certificates that sign the server's certificate (instead of the system's).
    pub ca_file: Option<PathBuf>,
    /// A client certificate and its key, for servers that ask for one (mutual TLS).
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    /// Accept any server certificate: for tests only, as anyone on the path can read the traffic.
    pub insecure_skip_verify: bool,
}

/// Everything about the connection besides the URL and the deadline.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientOptions {
    pub auth: Option<Auth>,
    pub tls: TlsFiles,
    /// An HTTP proxy, `http://host:port` (credentials, if any, are never printed).
    pub proxy_url: Option<String>,
    /// Use `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY` from the environment when no `proxy_url` is set.
    pub proxy_from_environment: bool,
    /// Follow redirects (credentials are sent again only to the same host).
    pub follow_redirects: bool,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            auth: None,
            tls: TlsFiles::default(),
            proxy_url: None,
            proxy_from_environment: false,
            follow_redirects: true,
        }
    }
}

impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientOptions")
            .field("auth", &self.auth)
            .field("tls", &self.tls)
            .field(
                "proxy_url",
                &self.proxy_url.as_deref().map(redact_url_userinfo),
            )
            .field("proxy_from_environment", &self.proxy_from_environment)
            .field("follow_redirects", &self.follow_redirects)
            .finish()
    }
}

/// A URL with its `user:password@` part replaced by `<redacted>@`.
pub fn redact_url_userinfo(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (format!("{s}://"), r),
        None => (String::new(), url),
    };
    let end = rest.find('/').unwrap_or(rest.len());
    match rest[..end].rsplit_once('@') {
        Some((_, host)) => format!("{scheme}<redacted>@{host}{}", &rest[end..]),
        None => url.to_string(),
    }
}

/// A secret value: printed as `<redacted>` by `Debug` and `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: String) -> Secret {
        Secret(value)
    }

    /// The value, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_prints_no_secret() {
        let s = Secret::new("hunter2".into());
        assert_eq!(format!("{s:?} {s}"), "<redacted> <redacted>");
        let o = ClientOptions {
            proxy_url: Some("http://bob:pw@proxy.example:3128/".into()),
            ..ClientOptions::default()
        };
        let text = format!("{o:?}");
        assert!(!text.contains("pw") && !text.contains("bob"), "{text}");
        assert!(text.contains("<redacted>@proxy.example:3128/"), "{text}");
        assert_eq!(
            redact_url_userinfo("http://proxy:3128"),
            "http://proxy:3128"
        );
    }
}
