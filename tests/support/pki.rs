//! Certificates for the TLS tests, made with the real `openssl` in a temporary folder: a CA, a
//! server certificate for 127.0.0.1 and localhost, a client certificate for mutual TLS, and a
//! second CA that signed nothing the servers use (an "unknown" CA).

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Pki {
    pub dir: tempfile::TempDir,
    pub ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
    pub other_ca: PathBuf,
}

fn openssl(openssl: &Path, dir: &Path, args: &[&str]) {
    let out = Command::new(openssl)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run openssl");
    assert!(
        out.status.success(),
        "openssl {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn make_ca(tool: &Path, dir: &Path, name: &str) {
    openssl(
        tool,
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.crt"),
            "-days",
            "2",
            "-subj",
            &format!("/CN=gpulse test {name}"),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
    );
}

/// A key and a certificate signed by `ca`, with the extensions in `ext`.
fn make_leaf(tool: &Path, dir: &Path, name: &str, ca: &str, ext: &str) {
    std::fs::write(dir.join(format!("{name}.ext")), ext).expect("write extensions");
    openssl(
        tool,
        dir,
        &[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.csr"),
            "-subj",
            &format!("/CN=gpulse test {name}"),
        ],
    );
    openssl(
        tool,
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &format!("{name}.csr"),
            "-CA",
            &format!("{ca}.crt"),
            "-CAkey",
            &format!("{ca}.key"),
            "-CAcreateserial",
            "-out",
            &format!("{name}.crt"),
            "-days",
            "2",
            "-extfile",
            &format!("{name}.ext"),
        ],
    );
}

/// Make the certificates with `openssl` (the path `tool("openssl")` found).
pub fn make(tool: &Path) -> Pki {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    make_ca(tool, d, "ca");
    make_ca(tool, d, "other-ca");
    make_leaf(
        tool,
        d,
        "server",
        "ca",
        "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n",
    );
    make_leaf(
        tool,
        d,
        "client",
        "ca",
        "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n",
    );
    Pki {
        ca: d.join("ca.crt"),
        server_cert: d.join("server.crt"),
        server_key: d.join("server.key"),
        client_cert: d.join("client.crt"),
        client_key: d.join("client.key"),
        other_ca: d.join("other-ca.crt"),
        dir,
    }
}

impl Pki {
    /// A certificate for `server.key`, signed by the CA, valid from `start` to `end`
    /// (`YYYYMMDDHHMMSSZ`): `openssl ca` is the tool that sets both dates.
    pub fn server_cert_dated(&self, tool: &Path, name: &str, start: &str, end: &str) -> PathBuf {
        let d = self.dir.path();
        let config = "[ca]\ndefault_ca = test\n[test]\ndatabase = index.txt\nnew_certs_dir = .\nserial = ca.srl\ndefault_md = sha256\npolicy = any\nunique_subject = no\nx509_extensions = server\n[any]\ncommonName = supplied\n[server]\nbasicConstraints = CA:FALSE\nextendedKeyUsage = serverAuth\nsubjectAltName = IP:127.0.0.1,DNS:localhost\n";
        std::fs::write(d.join("ca.cnf"), config).expect("write the CA config");
        if !d.join("index.txt").exists() {
            std::fs::write(d.join("index.txt"), "").expect("write the CA database");
        }
        openssl(
            tool,
            d,
            &[
                "req",
                "-new",
                "-key",
                "server.key",
                "-out",
                &format!("{name}.csr"),
                "-subj",
                &format!("/CN=gpulse test {name}"),
            ],
        );
        openssl(
            tool,
            d,
            &[
                "ca",
                "-batch",
                "-config",
                "ca.cnf",
                "-cert",
                "ca.crt",
                "-keyfile",
                "ca.key",
                "-in",
                &format!("{name}.csr"),
                "-out",
                &format!("{name}.crt"),
                "-notext",
                "-startdate",
                start,
                "-enddate",
                end,
            ],
        );
        d.join(format!("{name}.crt"))
    }
}
