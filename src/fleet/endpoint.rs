//! Where Prometheus listens: `http(s)://host[:port][/prefix]`, parsed strictly so that a typo is
//! an error naming the URL, and credentials never ride in it.

use super::http_error::HttpError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

impl Scheme {
    fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }

    fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }
}

/// A Prometheus server's address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub scheme: Scheme,
    pub host: String,
    pub port: u16,
    /// Path prefix without a trailing slash ("" or "/prometheus").
    pub prefix: String,
}

impl Endpoint {
    /// Parse `http(s)://host[:port][/prefix]`; a URL without a scheme is http. The port is the
    /// scheme's (80, 443) when absent: 9090 is Prometheus's own default, but a URL names it.
    pub fn parse(url: &str) -> Result<Endpoint, HttpError> {
        let bad = || HttpError::BadUrl(url.to_string());
        let u = url.trim();
        let (scheme, rest) = match u.split_once("://") {
            Some((s, rest)) if s.eq_ignore_ascii_case("http") => (Scheme::Http, rest),
            Some((s, rest)) if s.eq_ignore_ascii_case("https") => (Scheme::Https, rest),
            Some(_) => return Err(bad()),
            None => (Scheme::Http, u),
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.contains('@') {
            return Err(HttpError::CredentialsInUrl(redact_userinfo(url)));
        }
        if authority.is_empty() {
            return Err(bad());
        }
        let (host, port) = split_host_port(authority, scheme.default_port()).ok_or_else(bad)?;
        let host_ok = !host.is_empty()
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'_'));
        let path_ok = !path.contains(['?', '#']) && !path.bytes().any(|b| b <= b' ' || b >= 0x7f);
        if !host_ok || !path_ok {
            return Err(bad());
        }
        Ok(Endpoint {
            scheme,
            host,
            port,
            prefix: path.trim_end_matches('/').to_string(),
        })
    }

    /// `host:port` as written in messages.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// `scheme://host:port/prefix`, what requests are made below.
    pub fn base_url(&self) -> String {
        format!(
            "{}://{}{}",
            self.scheme.as_str(),
            self.authority(),
            self.prefix
        )
    }
}

/// `host[:port]` or `[v6][:port]`; `None` when the port is not a number.
fn split_host_port(authority: &str, default_port: u16) -> Option<(String, u16)> {
    if let Some(stripped) = authority.strip_prefix('[') {
        let end = stripped.find(']')?;
        let host = &stripped[..end];
        let port = match &stripped[end + 1..] {
            "" => default_port,
            after => after.strip_prefix(':')?.parse().ok()?,
        };
        return Some((host.to_string(), port));
    }
    match authority.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => Some((h.to_string(), p.parse().ok()?)),
        Some(_) => None,
        None => Some((authority.to_string(), default_port)),
    }
}

/// The URL with anything before an `@` in its authority replaced, for messages.
fn redact_userinfo(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let at = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(at);
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let scheme = if scheme.is_empty() {
        String::new()
    } else {
        format!("{scheme}://")
    };
    format!("{scheme}…@{host}{path}")
}

/// Percent-encode a query-string value.
pub fn encode_query_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls() {
        let e = Endpoint::parse("http://127.0.0.1:9090").unwrap();
        assert_eq!(
            (e.scheme, e.host.as_str(), e.port, e.prefix.as_str()),
            (Scheme::Http, "127.0.0.1", 9090, "")
        );
        let e = Endpoint::parse("http://prom.example:8080/prometheus/").unwrap();
        assert_eq!(e.prefix, "/prometheus");
        assert_eq!(e.base_url(), "http://prom.example:8080/prometheus");
        assert_eq!(Endpoint::parse("localhost:9090").unwrap().port, 9090);
        let e = Endpoint::parse("http://[::1]:9090/").unwrap();
        assert_eq!((e.host.as_str(), e.port), ("::1", 9090));
        assert_eq!(e.authority(), "[::1]:9090");
        assert_eq!(Endpoint::parse("http://h").unwrap().port, 80);
        let e = Endpoint::parse("HTTPS://prom.example/api-prefix").unwrap();
        assert_eq!((e.scheme, e.port), (Scheme::Https, 443));
        assert_eq!(e.base_url(), "https://prom.example:443/api-prefix");
        for bad in [
            "ftp://h",
            "http://h:notaport",
            "http://:9090",
            "http://h:9090/?x=1",
            "http://h h:9090",
            "http://::1:9090",
        ] {
            assert!(
                matches!(Endpoint::parse(bad), Err(HttpError::BadUrl(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn credentials_in_the_url_are_refused_and_not_repeated() {
        let e = Endpoint::parse("https://alice:s3cr3t@prom.example/x").unwrap_err();
        let msg = e.to_string();
        assert!(!msg.contains("s3cr3t") && !msg.contains("alice"), "{msg}");
        assert!(msg.contains("https://…@prom.example/x"), "{msg}");
        assert!(msg.contains("basic_auth.password_file"), "{msg}");
    }

    #[test]
    fn encodes_query_values() {
        assert_eq!(
            encode_query_value("up{job=\"a b\"}"),
            "up%7Bjob%3D%22a%20b%22%7D"
        );
    }
}
