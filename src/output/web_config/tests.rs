use super::*;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

fn error_of(yaml: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = write(dir.path(), "web.yml", yaml);
    load(&p).expect_err("invalid").to_string()
}

#[test]
fn an_empty_file_serves_plain_http_without_users() {
    let dir = tempfile::tempdir().expect("tempdir");
    for text in ["", "# nothing\n", "tls_server_config: {}\n"] {
        let s = load(&write(dir.path(), "web.yml", text)).expect("valid");
        assert!(s.tls.is_none() && s.users.is_none(), "{text:?}");
    }
}

#[test]
fn users_with_bcrypt_hashes_are_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let hash = bcrypt::hash("pw", 4).expect("hash");
    let s = load(&write(
        dir.path(),
        "web.yml",
        &format!("basic_auth_users:\n  prometheus: '{hash}'\n"),
    ))
    .expect("valid");
    let users = s.users.expect("users");
    assert_eq!(users.names(), vec!["prometheus"]);
    assert!(!format!(
        "{:?}",
        WebSecurity {
            users: Some(users),
            ..WebSecurity::default()
        }
    )
    .contains(&hash));
}

#[test]
fn each_problem_names_the_file_and_the_key() {
    for (yaml, key, what) in [
        (
            "basic_auth_users:\n  bob: notahash\n",
            "basic_auth_users.bob",
            "not a bcrypt hash",
        ),
        (
            "tls_server_config:\n  cert_file: a.crt\n",
            "tls_server_config.key_file",
            "missing",
        ),
        (
            "tls_server_config:\n  key_file: a.key\n",
            "tls_server_config.cert_file",
            "missing",
        ),
        (
            "tls_server_config:\n  cert_file: nowhere.crt\n  key_file: nowhere.key\n",
            "tls_server_config.cert_file",
            "nowhere.crt",
        ),
        (
            "tls_server_config:\n  cipher_suites: [TLS_AES_128_GCM_SHA256]\n",
            "tls_server_config.cipher_suites",
            "not supported",
        ),
        (
            "http_server_config:\n  headers:\n    X-Frame-Options: deny\n",
            "http_server_config.headers",
            "not supported",
        ),
    ] {
        let e = error_of(yaml);
        assert!(
            e.contains("web.yml") && e.contains(&format!("'{key}'")) && e.contains(what),
            "{yaml}: {e}"
        );
    }
}

#[test]
fn unknown_keys_and_bad_yaml_are_errors() {
    let e = error_of("tls_server_config:\n  cert_fil: a.crt\n");
    assert!(e.contains("cert_fil") && e.contains("web.yml"), "{e}");
    let e = error_of("basic_auth_user:\n  a: b\n");
    assert!(e.contains("basic_auth_user"), "{e}");
    let e = error_of("tls_server_config: [\n");
    assert!(e.contains("invalid web config file"), "{e}");
}

#[test]
fn client_policies_of_the_toolkit() {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = |t: Option<&str>, ca: Option<&Path>| {
        super::super::http_server::tls::client_verifier(t, ca, provider.clone())
            .map(|_| ())
            .map_err(|(key, why)| format!("{key}: {why}"))
    };
    assert!(verifier(None, None).is_ok());
    assert!(verifier(Some("NoClientCert"), None).is_ok());
    let e = verifier(None, Some(Path::new("ca.crt"))).expect_err("CA without policy");
    assert!(
        e.starts_with("client_ca_file") && e.contains("client_auth_type"),
        "{e}"
    );
    let e = verifier(Some("RequireAndVerifyClientCert"), None).expect_err("policy without CA");
    assert!(e.starts_with("client_ca_file: missing"), "{e}");
    let e = verifier(Some("RequireAnyClientCert"), None).expect_err("unverified");
    assert!(e.contains("RequireAndVerifyClientCert"), "{e}");
    let e = verifier(Some("Sometimes"), None).expect_err("unknown");
    assert!(e.contains("'Sometimes'"), "{e}");
}

#[test]
fn tls_versions() {
    for (yaml, ok) in [
        ("min_version: TLS13\n", true),
        ("max_version: TLS12\n", true),
        ("min_version: TLS11\n", false),
        ("min_version: TLS13\n  max_version: TLS12\n", false),
        ("min_version: SSL3\n", false),
    ] {
        let t: TlsServerFile = serde_yaml_ng::from_str(&yaml.replace("\n  ", "\n")).expect("yaml");
        let key_error = |key: &str, message: String| WebConfigError::Key {
            path: PathBuf::from("web.yml"),
            key: key.into(),
            message,
        };
        assert_eq!(versions(&t, &key_error).is_ok(), ok, "{yaml}");
    }
}
