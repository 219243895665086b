//! A real Prometheus server on a free loopback port, for the scrape and fleet tests.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;

use super::net::{free_port, http_get, spawn, ChildGuard};

pub struct Prometheus {
    pub addr: SocketAddr,
    pub guard: ChildGuard,
    pub dir: tempfile::TempDir,
}

/// Start `prometheus` scraping every second with `scrape_configs` (YAML list items, indented by
/// two spaces), serving its own API with `web_config` (TLS, basic auth) when given.
pub fn start(prometheus: &Path, scrape_configs: &str, web_config: Option<&Path>) -> Prometheus {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nscrape_configs:\n{scrape_configs}"
        ),
    )
    .expect("write the Prometheus config");
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port())
        .parse()
        .expect("address");
    let mut cmd = Command::new(prometheus);
    cmd.arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address={addr}"))
        .current_dir(dir.path());
    if let Some(web) = web_config {
        cmd.arg(format!("--web.config.file={}", web.display()));
    }
    let guard = spawn(cmd);
    Prometheus { addr, guard, dir }
}

/// The result of an instant query over plain http (`None` until Prometheus answers).
pub fn query(addr: SocketAddr, promql: &str) -> Option<Vec<serde_json::Value>> {
    let encoded: String = promql
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    let (status, body) = http_get(addr, &format!("/api/v1/query?query={encoded}")).ok()?;
    if status != 200 {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(&body).ok()?;
    v["data"]["result"].as_array().cloned()
}

/// The value of the first series of an instant query.
pub fn scalar(addr: SocketAddr, promql: &str) -> Option<f64> {
    query(addr, promql)?
        .first()?
        .get("value")?
        .get(1)?
        .as_str()?
        .parse()
        .ok()
}
