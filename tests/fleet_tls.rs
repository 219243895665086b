//! `gpulse fleet` against a real Prometheus that serves its API over TLS with basic auth and
//! mutual TLS (Prometheus takes the same `--web.config.file` as the exporter), with
//! certificates made by openssl: what works, and what each refusal says.

mod support;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::Value;
use support::cli::gpulse;
use support::net::{start_exporter, tool, wait_until};
use support::{pki, prometheus};

fn fleet_json(config: &Path, url: Option<&str>) -> Output {
    let mut cmd = gpulse();
    cmd.arg("--config")
        .arg(config)
        .args(["fleet", "--json", "--timeout", "3s"]);
    if let Some(url) = url {
        cmd.args(["--prometheus", url]);
    }
    cmd.output().expect("run gpulse fleet")
}

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

#[test]
fn fleet_reads_a_real_prometheus_over_mutual_tls_with_basic_auth() {
    let (Some(prom_bin), Some(openssl)) = (tool("prometheus"), tool("openssl")) else {
        return;
    };
    let pki = pki::make(&openssl);
    let d = pki.dir.path();
    let hash = bcrypt::hash("fleet-pw", 6).expect("hash");
    let web = write(
        d,
        "prometheus-web.yml",
        &format!(
            "tls_server_config:\n  cert_file: {}\n  key_file: {}\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: {}\nbasic_auth_users:\n  fleet: '{hash}'\n",
            pki.server_cert.display(),
            pki.server_key.display(),
            pki.ca.display()
        ),
    );
    let (_gpulse, target) = start_exporter(&["--gpus", "2"]);
    let jobs =
        format!("  - job_name: gpulse\n    static_configs:\n      - targets: ['{target}']\n");
    let prom = prometheus::start(&prom_bin, &jobs, Some(&web));
    let url = format!("https://127.0.0.1:{}", prom.addr.port());
    write(d, "password", "fleet-pw\n");
    write(d, "wrong-password", "guess\n");
    let config = |password: &str, tls: &str| {
        write(
            d,
            "config.toml",
            &format!("[fleet]\nprometheus = \"{url}\"\nbasic_auth = {{ username = \"fleet\", password_file = \"{password}\" }}\n{tls}"),
        )
    };
    let mtls = "tls_config = { ca_file = \"ca.crt\", cert_file = \"client.crt\", key_file = \"client.key\" }\n";

    let good = config("password", mtls);
    let doc: Value = wait_until(Duration::from_secs(60), "the fleet over TLS", || {
        let out = fleet_json(&good, None);
        let doc: Value = serde_json::from_slice(&out.stdout).ok()?;
        (doc["gpus"].as_array().map(Vec::len) == Some(2)).then_some(doc)
    });
    assert_eq!(doc["prometheus"].as_str(), Some(url.as_str()));

    let out = fleet_json(&config("wrong-password", mtls), None);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("HTTP 401") && err.contains("basic_auth"),
        "{err}"
    );

    let unknown_ca = "tls_config = { ca_file = \"other-ca.crt\", cert_file = \"client.crt\", key_file = \"client.key\" }\n";
    let err = stderr(&fleet_json(&config("password", unknown_ca), None));
    assert!(
        err.contains("tls_config.ca_file"),
        "an unknown CA names the fix: {err}"
    );
    let err = stderr(&fleet_json(&config("password", ""), None));
    assert!(
        err.contains("tls_config.ca_file"),
        "the system CAs do not know it either: {err}"
    );

    let no_client_cert = "tls_config = { ca_file = \"ca.crt\" }\n";
    let out = fleet_json(&config("password", no_client_cert), None);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("TLS") || stderr(&out).contains("reading from"),
        "{}",
        stderr(&out)
    );

    // Plain http to the TLS port gets Go's answer, which is not Prometheus's API.
    let plain = format!("http://127.0.0.1:{}", prom.addr.port());
    let err = stderr(&fleet_json(&good, Some(&plain)));
    assert!(err.contains("HTTP 400"), "{err}");
    // Nothing secret is ever printed.
    for out in [
        fleet_json(&good, None),
        fleet_json(&config("wrong-password", mtls), None),
    ] {
        let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
        assert!(!all.contains("fleet-pw") && !all.contains("guess"), "{all}");
    }
}
