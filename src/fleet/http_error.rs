//! What can go wrong asking Prometheus over HTTP(S), each in words that name the server and,
//! where there is one, the fix.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum HttpError {
    #[error(
        "'{0}' is not a Prometheus URL; use http(s)://HOST:PORT or http(s)://HOST:PORT/PATH-PREFIX"
    )]
    BadUrl(String),
    #[error(
        "'{0}' holds credentials; they would show in the process list. Put the user in the \
         config file's [fleet] basic_auth.username and the password in a file named by \
         basic_auth.password_file"
    )]
    CredentialsInUrl(String),
    #[error("cannot resolve '{host}': {reason}")]
    Resolve { host: String, reason: String },
    #[error("cannot connect to {addr}: {reason}")]
    Connect { addr: String, reason: String },
    #[error("{addr} did not answer within {timeout_s:.1} s")]
    Timeout { addr: String, timeout_s: f64 },
    #[error("reading from {addr}: {reason}")]
    Io { addr: String, reason: String },
    #[error("{addr} sent a malformed HTTP response: {reason}")]
    Malformed { addr: String, reason: String },
    #[error("{addr}: its answer is larger than {limit_mib} MiB; ask a narrower question or a smaller fleet")]
    TooLarge { addr: String, limit_mib: usize },
    #[error("TLS with {addr} failed: {reason}{hint}")]
    Tls {
        addr: String,
        reason: String,
        hint: &'static str,
    },
    #[error("cannot read the {what} '{path}': {reason}")]
    Secret {
        what: &'static str,
        path: String,
        reason: String,
    },
    #[error("the TLS setting {key} = '{path}': {reason}")]
    TlsFile {
        key: &'static str,
        path: String,
        reason: String,
    },
    #[error("tls_config: a client certificate needs both cert_file and key_file")]
    TlsPair,
    #[error("proxy_url '{url}' is not a proxy URL ({reason}); use http://HOST:PORT")]
    Proxy { url: String, reason: String },
}

const UNKNOWN_CA_HINT: &str = "; the server's certificate is signed by a CA this machine does \
     not trust: name that CA's certificate in the config file's [fleet] tls_config.ca_file";
const NAME_HINT: &str = "; the server's certificate is not valid for the host in --prometheus: \
     use the name the certificate was issued for";

/// What a certificate problem means for the user, by the rustls error.
pub fn tls_hint(e: &rustls::Error) -> &'static str {
    use rustls::CertificateError;
    match e {
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => UNKNOWN_CA_HINT,
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => NAME_HINT,
        rustls::Error::InvalidCertificate(CertificateError::Other(other))
            if other.to_string().contains("UnknownIssuer") =>
        {
            UNKNOWN_CA_HINT
        }
        _ => "",
    }
}
