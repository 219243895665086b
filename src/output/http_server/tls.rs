//! The exporter's TLS side: client certificate policies of the exporter toolkit, and the
//! handshake, which answers a plain-HTTP request on the TLS port with a 400 that says why (as
//! Go's servers do) instead of a handshake failure the user cannot read.

use std::path::Path;
use std::sync::Arc;

use rustls::server::danger::ClientCertVerifier;
use rustls::server::WebPkiClientVerifier;
use rustls::RootCertStore;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

use crate::tls_pem;

/// What a client hears when it speaks plain HTTP to the TLS port.
const PLAIN_HTTP_ANSWER: &[u8] = b"HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";

/// The verifier of `client_auth_type` with the CAs of `client_ca_file`; `Err((key, why))`.
///
/// The toolkit's `RequestClientCert` and `RequireAnyClientCert` accept any certificate
/// unverified, which proves nothing about the client: they are refused with what to use.
pub fn client_verifier(
    auth_type: Option<&str>,
    ca_file: Option<&Path>,
    provider: Arc<rustls::crypto::CryptoProvider>,
) -> Result<Arc<dyn ClientCertVerifier>, (&'static str, String)> {
    let auth_type = auth_type.unwrap_or("NoClientCert");
    let optional = match auth_type {
        "" | "NoClientCert" => {
            if ca_file.is_some() {
                return Err((
                    "client_ca_file",
                    "client CAs are set without a policy; add client_auth_type: RequireAndVerifyClientCert (or VerifyClientCertIfGiven)".into(),
                ));
            }
            return Ok(WebPkiClientVerifier::no_client_auth());
        }
        "RequireAndVerifyClientCert" => false,
        "VerifyClientCertIfGiven" => true,
        "RequestClientCert" | "RequireAnyClientCert" | "RequireClientCert" => {
            return Err((
                "client_auth_type",
                format!("'{auth_type}' accepts unverified certificates and is not supported; use RequireAndVerifyClientCert with client_ca_file"),
            ))
        }
        other => {
            return Err((
                "client_auth_type",
                format!("'{other}' is not a policy; use NoClientCert, VerifyClientCertIfGiven or RequireAndVerifyClientCert"),
            ))
        }
    };
    let Some(ca_file) = ca_file else {
        return Err((
            "client_ca_file",
            format!("missing: client_auth_type {auth_type} verifies client certificates against the CAs in client_ca_file"),
        ));
    };
    let mut roots = RootCertStore::empty();
    for cert in tls_pem::certificates(ca_file).map_err(|e| ("client_ca_file", e.to_string()))? {
        roots.add(cert).map_err(|e| {
            (
                "client_ca_file",
                format!("not a usable CA certificate: {e}"),
            )
        })?;
    }
    let builder = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
    let builder = if optional {
        builder.allow_unauthenticated()
    } else {
        builder
    };
    builder
        .build()
        .map_err(|e| ("client_ca_file", e.to_string()))
}

/// The first byte of a TLS connection is a handshake record (22); an ASCII letter means a
/// plain-HTTP request.
const TLS_HANDSHAKE: u8 = 0x16;

/// Complete the TLS handshake on `stream`; `None` (connection closed) when the client speaks
/// plain HTTP (it is answered with a 400 first) or the handshake fails.
pub async fn accept(
    mut stream: TcpStream,
    config: Arc<rustls::ServerConfig>,
) -> Option<TlsStream<TcpStream>> {
    let mut first = [0u8; 1];
    let n = stream.peek(&mut first).await.ok()?;
    if n == 0 {
        return None;
    }
    if first[0] != TLS_HANDSHAKE {
        if first[0].is_ascii_uppercase() {
            let _ = stream.write_all(PLAIN_HTTP_ANSWER).await;
            let _ = stream.shutdown().await;
            // Read what the client sent, so closing does not reset the answer away.
            let mut sink = [0u8; 4096];
            let drain = async { while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {} };
            let _ = tokio::time::timeout(std::time::Duration::from_secs(1), drain).await;
        }
        return None;
    }
    match tokio_rustls::TlsAcceptor::from(config).accept(stream).await {
        Ok(tls) => Some(tls),
        Err(e) => {
            tracing::debug!("exporter TLS handshake failed: {e}");
            None
        }
    }
}
