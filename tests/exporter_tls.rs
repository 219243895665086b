//! The exporter with a web configuration file (TLS, mutual TLS, basic auth) against real peers:
//! certificates made by openssl, a real Prometheus scraping over https with basic auth, and curl.
//! Also the exporter under hundreds of slow clients while a real Prometheus scrapes it.

mod support;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use support::cli::gpulse;
use support::net::{free_port, http_get, spawn, start_exporter, tool, wait_until, ChildGuard};
use support::{pki, prometheus};

/// Start `gpulse --backend sim serve` with `web` as its web configuration file.
fn start_tls_exporter(web: &Path) -> (ChildGuard, SocketAddr) {
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().expect("addr");
    let mut cmd = gpulse();
    cmd.args(["--backend", "sim", "serve", "--listen", &addr.to_string()])
        .arg("--web.config.file")
        .arg(web);
    let guard = spawn(cmd);
    wait_until(Duration::from_secs(20), "the exporter to listen", || {
        TcpStream::connect(addr).ok()
    });
    (guard, addr)
}

/// curl's exit status, HTTP status and body for `url` with `args`.
fn curl(curl: &Path, url: &str, args: &[&str]) -> (i32, u16, String) {
    let out = Command::new(curl)
        .args(["-sS", "--max-time", "10", "-w", "\n%{http_code}"])
        .args(args)
        .arg(url)
        .output()
        .expect("run curl");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (
        out.status.code().unwrap_or(-1),
        code.trim().parse().unwrap_or(0),
        body.to_string(),
    )
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

/// A web configuration in `d` serving the certificate `pki::make` wrote, with one user,
/// `prometheus`, whose password is `scrape-pw`.
fn tls_with_scraper(d: &Path) -> PathBuf {
    let hash = bcrypt::hash("scrape-pw", 6).expect("hash");
    write(
        d,
        "web.yml",
        &format!("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\nbasic_auth_users:\n  prometheus: '{hash}'\n"),
    )
}

#[test]
fn curl_over_tls_needs_the_ca_and_the_password_and_plain_http_is_refused() {
    let (Some(openssl), Some(curl_bin)) = (tool("openssl"), tool("curl")) else {
        return;
    };
    let pki = pki::make(&openssl);
    let d = pki.dir.path();
    let web = tls_with_scraper(d);
    let (_gpulse, addr) = start_tls_exporter(&web);
    let https = format!("https://{addr}/metrics");
    let ca = pki.ca.display().to_string();

    let (code, status, body) = curl(&curl_bin, &format!("http://{addr}/metrics"), &[]);
    assert_eq!((code, status), (0, 400), "{body}");
    assert!(body.contains("HTTP request to an HTTPS server"), "{body}");

    let (code, _, _) = curl(
        &curl_bin,
        &https,
        &["--cacert", &pki.other_ca.display().to_string()],
    );
    assert_eq!(
        code, 60,
        "a server certificate from an unknown CA is refused by curl"
    );

    let (code, status, _) = curl(&curl_bin, &https, &["--cacert", &ca]);
    assert_eq!((code, status), (0, 401));
    let (_, status, _) = curl(
        &curl_bin,
        &https,
        &["--cacert", &ca, "-u", "prometheus:wrong"],
    );
    assert_eq!(status, 401);
    let (code, status, body) = curl(
        &curl_bin,
        &https,
        &["--cacert", &ca, "-u", "prometheus:scrape-pw"],
    );
    assert_eq!((code, status), (0, 200));
    assert!(body.contains("DCGM_FI_DEV_GPU_UTIL"), "{body}");
    // localhost is in the certificate too.
    let by_name = format!("https://localhost:{}/healthz", addr.port());
    let (code, status, _) = curl(
        &curl_bin,
        &by_name,
        &["--cacert", &ca, "-u", "prometheus:scrape-pw"],
    );
    assert_eq!((code, status), (0, 200));
}

/// A certificate out of date is served (it is what the file names) but warned about at start:
/// clients refuse it, and the refusal shows only at their end.
#[test]
fn a_certificate_expired_or_not_yet_valid_is_warned_about_at_start() {
    let Some(openssl) = tool("openssl") else {
        return;
    };
    let pki = pki::make(&openssl);
    let d = pki.dir.path();
    for (name, start, end, says) in [
        (
            "expired",
            "20200101000000Z",
            "20200102000000Z",
            "expired on 2020-01-02 00:00:00 UTC",
        ),
        (
            "future",
            "20990101000000Z",
            "20990102000000Z",
            "is not valid before 2099-01-01 00:00:00 UTC",
        ),
    ] {
        pki.server_cert_dated(&openssl, name, start, end);
        let web = write(
            d,
            &format!("{name}.yml"),
            &format!("tls_server_config:\n  cert_file: {name}.crt\n  key_file: server.key\n"),
        );
        let (mut gpulse, _addr) = start_tls_exporter(&web);
        let mut stderr = gpulse.0.stderr.take().expect("stderr");
        let _ = gpulse.0.kill();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut text).expect("read stderr");
        assert!(
            text.contains(&format!(
                "gpulse: warning: the certificate '{}",
                d.join(format!("{name}.crt")).display()
            )) && text.contains(says),
            "{name}: {text}"
        );
    }
}

#[test]
fn mutual_tls_refuses_a_client_without_a_certificate_from_the_client_ca() {
    let (Some(openssl), Some(curl_bin)) = (tool("openssl"), tool("curl")) else {
        return;
    };
    let pki = pki::make(&openssl);
    let d = pki.dir.path();
    let web = write(
        d,
        "web.yml",
        "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n",
    );
    let (_gpulse, addr) = start_tls_exporter(&web);
    let https = format!("https://{addr}/metrics");
    let ca = pki.ca.display().to_string();
    let (code, status, _) = curl(&curl_bin, &https, &["--cacert", &ca]);
    assert!(
        code != 0 && status != 200,
        "no client certificate: curl {code}, HTTP {status}"
    );
    let cert = pki.client_cert.display().to_string();
    let key = pki.client_key.display().to_string();
    let (code, status, body) = curl(
        &curl_bin,
        &https,
        &["--cacert", &ca, "--cert", &cert, "--key", &key],
    );
    assert_eq!((code, status), (0, 200), "{body}");
}

#[test]
fn a_real_prometheus_scrapes_the_exporter_over_tls_with_basic_auth() {
    let (Some(prom_bin), Some(openssl)) = (tool("prometheus"), tool("openssl")) else {
        return;
    };
    let pki = pki::make(&openssl);
    let d = pki.dir.path();
    let web = tls_with_scraper(d);
    let good = write(d, "good-password", "scrape-pw\n");
    let bad = write(d, "bad-password", "guess\n");
    let (_gpulse, target) = start_tls_exporter(&web);
    let job = |name: &str, scheme: &str, password: &Path| {
        format!(
            "  - job_name: {name}\n    scheme: {scheme}\n    tls_config:\n      ca_file: {}\n    basic_auth:\n      username: prometheus\n      password_file: {}\n    static_configs:\n      - targets: ['{target}']\n",
            pki.ca.display(),
            password.display()
        )
    };
    let jobs = [
        job("gpulse", "https", &good),
        job("wrong-password", "https", &bad),
        job("plain-http", "http", &good),
    ]
    .concat();
    let prom = prometheus::start(&prom_bin, &jobs, None);
    let util = wait_until(
        Duration::from_secs(60),
        "Prometheus to hold the exporter's metrics over https",
        || {
            prometheus::query(prom.addr, "DCGM_FI_DEV_GPU_UTIL{job=\"gpulse\"}")
                .filter(|s| !s.is_empty())
        },
    );
    assert!(util
        .iter()
        .all(|s| s["metric"]["instance"] == target.to_string()));
    assert_eq!(
        prometheus::scalar(prom.addr, "up{job=\"gpulse\"}"),
        Some(1.0)
    );
    for refused in ["wrong-password", "plain-http"] {
        let up = wait_until(Duration::from_secs(30), "the refused job's scrapes", || {
            prometheus::scalar(prom.addr, &format!("up{{job=\"{refused}\"}}"))
        });
        assert_eq!(up, 0.0, "{refused} must not get in");
    }
}

/// Clients that each send one byte of a request head every 2 s, reconnecting when closed.
fn trickle(addr: SocketAddr, clients: usize, run_for: Duration) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let started = Instant::now();
        let mut conns: Vec<Option<TcpStream>> = (0..clients).map(|_| None).collect();
        let mut reconnects = 0u64;
        while started.elapsed() < run_for {
            for c in conns.iter_mut() {
                let alive = c.as_mut().is_some_and(|s| s.write_all(b"X").is_ok());
                if !alive {
                    *c = TcpStream::connect(addr).ok().and_then(|mut s| {
                        s.write_all(b"GET /metrics HTTP/1.1\r\nX-Slow: ").ok()?;
                        Some(s)
                    });
                    reconnects += 1;
                }
            }
            std::thread::sleep(Duration::from_secs(2));
        }
        reconnects
    })
}

#[test]
fn six_hundred_slow_clients_do_not_starve_a_real_prometheus_scrape() {
    let Some(prom_bin) = tool("prometheus") else {
        return;
    };
    let (_gpulse, target) = start_exporter(&[]);
    let attack = Duration::from_secs(30);
    let attackers: Vec<_> = (0..4).map(|_| trickle(target, 150, attack)).collect();
    std::thread::sleep(Duration::from_secs(3));
    let jobs =
        format!("  - job_name: gpulse\n    static_configs:\n      - targets: ['{target}']\n");
    let prom = prometheus::start(&prom_bin, &jobs, None);
    // Direct scrapes meanwhile: answered well within Prometheus's 1 s timeout.
    let mut slowest = Duration::ZERO;
    for _ in 0..10 {
        let t = Instant::now();
        let (status, _) = http_get(target, "/metrics").expect("scrape during the attack");
        assert_eq!(status, 200);
        slowest = slowest.max(t.elapsed());
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!(
        slowest < Duration::from_millis(900),
        "slowest direct scrape {slowest:?}"
    );
    // Fifteen seconds of Prometheus's own 1 s scrapes, all while the attack goes on.
    let scrapes = wait_until(
        Duration::from_secs(40),
        "15 s of Prometheus scrapes",
        || {
            prometheus::scalar(prom.addr, "count_over_time(up{job=\"gpulse\"}[15s])")
                .filter(|n| *n >= 12.0)
        },
    );
    let worst = prometheus::scalar(prom.addr, "min_over_time(up{job=\"gpulse\"}[15s])");
    let longest = prometheus::scalar(
        prom.addr,
        "max_over_time(scrape_duration_seconds{job=\"gpulse\"}[15s])",
    );
    let reconnects: u64 = attackers
        .into_iter()
        .map(|a| a.join().expect("attacker"))
        .sum();
    eprintln!("{scrapes} scrapes, up min {worst:?}, longest {longest:?} s; slow clients reconnected {reconnects} times");
    assert_eq!(worst, Some(1.0), "every scrape succeeded during the attack");
    assert!(longest.is_some_and(|s| s < 1.0), "{longest:?}");
    assert!(
        reconnects > 600,
        "the slow clients were cut off and came back: {reconnects}"
    );
}
