//! Certificates and private keys from PEM files, for the exporter's TLS and the fleet client's:
//! one reader, so both name a bad file the same way.

use std::path::Path;

use crate::{capped_read, printable};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A PEM file that cannot be used, and why.
#[derive(Debug, thiserror::Error)]
#[error("'{path}': {reason}")]
pub struct PemError {
    pub path: String,
    pub reason: String,
}

fn pem_error(path: &Path, reason: impl std::fmt::Display) -> PemError {
    PemError {
        path: printable::path(path),
        reason: reason.to_string(),
    }
}

/// Every certificate in a PEM file, in order (a chain: the leaf first); at least one.
pub fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, PemError> {
    let bytes = capped_read::read(path, capped_read::PEM_MAX, "a PEM file")
        .map_err(|e| pem_error(path, e))?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(path, format!("not a PEM certificate file ({e})")))?;
    if certs.is_empty() {
        return Err(pem_error(
            path,
            "holds no certificate (a 'BEGIN CERTIFICATE' PEM block)",
        ));
    }
    Ok(certs)
}

/// The private key in a PEM file (PKCS#8, PKCS#1 or SEC1).
pub fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, PemError> {
    let bytes = capped_read::read(path, capped_read::PEM_MAX, "a PEM file")
        .map_err(|e| pem_error(path, e))?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| {
        pem_error(
            path,
            format!("holds no usable private key (a 'BEGIN PRIVATE KEY' PEM block): {e}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_file_and_the_problem() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("cert.pem");
        std::fs::write(&p, "not pem at all\n").expect("write");
        let e = certificates(&p).expect_err("no certificate").to_string();
        assert!(
            e.contains("cert.pem") && e.contains("no certificate"),
            "{e}"
        );
        let e = private_key(&p).expect_err("no key").to_string();
        assert!(e.contains("private key"), "{e}");
        let e = certificates(&dir.path().join("missing.pem"))
            .expect_err("missing")
            .to_string();
        assert!(e.contains("missing.pem"), "{e}");
    }
}
