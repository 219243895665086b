//! The fleet client's TLS: the system's trusted CAs (or `tls_config.ca_file` alone), an optional
//! client certificate, on rustls with the ring provider.

use std::sync::Arc;

use ureq::tls::{Certificate, ClientCert, PrivateKey, RootCerts, TlsConfig, TlsProvider};

use super::http_error::HttpError;
use super::http_options::ClientOptions;
use crate::{capped_read, tls_pem};

/// ureq's TLS settings for these options; an unreadable file is an error naming its key.
pub fn tls_config(options: &ClientOptions) -> Result<TlsConfig, HttpError> {
    let tls = &options.tls;
    let roots = match &tls.ca_file {
        Some(path) => {
            let certs =
                tls_pem::certificates(path).map_err(|e| file_error("tls_config.ca_file", e))?;
            RootCerts::new_with_certs(
                &certs
                    .iter()
                    .map(|c| Certificate::from_der(c.as_ref()).to_owned())
                    .collect::<Vec<_>>(),
            )
        }
        None => RootCerts::PlatformVerifier,
    };
    let client_cert = match (&tls.cert_file, &tls.key_file) {
        (Some(cert), Some(key)) => {
            let chain = tls_pem::certificates(cert)
                .map_err(|e| file_error("tls_config.cert_file", e))?
                .iter()
                .map(|c| Certificate::from_der(c.as_ref()).to_owned())
                .collect::<Vec<_>>();
            Some(ClientCert::new_with_certs(&chain, client_key(key)?))
        }
        (None, None) => None,
        (Some(_), None) | (None, Some(_)) => return Err(HttpError::TlsPair),
    };
    Ok(TlsConfig::builder()
        .provider(TlsProvider::Rustls)
        .unversioned_rustls_crypto_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .root_certs(roots)
        .client_cert(client_cert)
        .disable_verification(tls.insecure_skip_verify)
        .build())
}

/// The client certificate's key, checked by the shared reader so a bad file reads the same
/// as everywhere else.
fn client_key(path: &std::path::Path) -> Result<PrivateKey<'static>, HttpError> {
    tls_pem::private_key(path).map_err(|e| file_error("tls_config.key_file", e))?;
    let pem = capped_read::read(path, capped_read::PEM_MAX, "a PEM file").map_err(|e| {
        HttpError::TlsFile {
            key: "tls_config.key_file",
            path: crate::printable::path(path),
            reason: e.to_string(),
        }
    })?;
    PrivateKey::from_pem(&pem).map_err(|e| HttpError::TlsFile {
        key: "tls_config.key_file",
        path: crate::printable::path(path),
        reason: e.to_string(),
    })
}

fn file_error(key: &'static str, e: tls_pem::PemError) -> HttpError {
    HttpError::TlsFile {
        key,
        path: e.path,
        reason: e.reason,
    }
}
