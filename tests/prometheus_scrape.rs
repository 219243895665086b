//! The exporter against a real Prometheus server and `promtool`, on loopback.

mod support;

use std::collections::BTreeSet;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use support::cli::gpulse;
use support::net::{free_port, http_get, spawn, start_exporter, tool, wait_until};

#[test]
fn promtool_accepts_the_exposition() {
    let Some(promtool) = tool("promtool") else {
        return;
    };
    let (_gpulse, addr) = start_exporter(&["--gpus", "3"]);
    let (status, body) = http_get(addr, "/metrics").expect("scrape");
    assert_eq!(status, 200);
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run promtool");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(body.as_bytes())
        .expect("feed promtool");
    let out = child.wait_with_output().expect("promtool output");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Exit 1 is a parse error. Exit 3 is lint advice; the only advice allowed is about the
    // camelCase label names (`modelName`, `Hostname`) that dcgm-exporter uses and dashboards expect.
    assert!(
        matches!(out.status.code(), Some(0) | Some(3)),
        "promtool rejects the exposition: {report}"
    );
    for line in report.lines().filter(|l| !l.trim().is_empty()) {
        assert!(
            line.contains("label names should be written in 'snake_case'"),
            "unexpected promtool finding: {line}"
        );
    }
}

fn query(prom: std::net::SocketAddr, q: &str) -> Option<Vec<Value>> {
    let (status, body) = http_get(prom, &format!("/api/v1/query?query={q}")).ok()?;
    if status != 200 {
        return None;
    }
    let v: Value = serde_json::from_str(&body).ok()?;
    v["data"]["result"].as_array().cloned()
}

fn gpus_of(series: &[Value]) -> BTreeSet<String> {
    series
        .iter()
        .filter_map(|s| s["metric"]["gpu"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn a_real_prometheus_scrapes_every_simulated_gpu() {
    let Some(prometheus) = tool("prometheus") else {
        return;
    };
    let (_gpulse, target) = start_exporter(&["--gpus", "4"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: gpulse\n    static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .expect("write the Prometheus config");
    let prom_port = free_port();
    let prom: std::net::SocketAddr = format!("127.0.0.1:{prom_port}").parse().expect("addr");
    let mut cmd = Command::new(prometheus);
    cmd.arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address={prom}"))
        .current_dir(dir.path());
    let _prometheus = spawn(cmd);

    let wanted: BTreeSet<String> = (0..4).map(|i| i.to_string()).collect();
    let util = wait_until(
        Duration::from_secs(60),
        "Prometheus to hold DCGM_FI_DEV_GPU_UTIL for every GPU",
        || query(prom, "DCGM_FI_DEV_GPU_UTIL").filter(|s| gpus_of(s) == wanted),
    );
    for s in &util {
        let m = &s["metric"];
        assert_eq!(m["job"], "gpulse");
        assert!(
            m["UUID"].as_str().is_some_and(|u| u.starts_with("GPU-")),
            "{m}"
        );
        assert!(
            m["device"]
                .as_str()
                .is_some_and(|d| d.starts_with("nvidia")),
            "{m}"
        );
        assert!(
            m["modelName"].as_str().is_some_and(|n| n.contains("H200")),
            "{m}"
        );
        assert!(m["Hostname"].is_string(), "{m}");
    }
    let findings = query(prom, "gpulse_finding_active").expect("findings series");
    assert_eq!(gpus_of(&findings), wanted);
    let verdicts = query(prom, "gpulse_verdict%3D%3D1").expect("verdict series");
    assert_eq!(
        verdicts.len(),
        4,
        "one current verdict per GPU: {verdicts:?}"
    );
    let up = query(prom, "up").expect("up");
    assert_eq!(
        up[0]["value"][1], "1",
        "Prometheus sees the target up: {up:?}"
    );
}

#[test]
fn healthz_and_index_answer() {
    let (_gpulse, addr) = start_exporter(&[]);
    let (status, body) = http_get(addr, "/healthz").expect("healthz");
    assert_eq!((status, body.as_str()), (200, "ok\n"));
    let (status, body) = http_get(addr, "/").expect("index");
    assert_eq!(status, 200);
    assert!(body.contains("href=\"/metrics\""));
    let (status, _) = http_get(addr, "/nope").expect("404");
    assert_eq!(status, 404);
}

#[test]
fn serve_flag_exports_while_another_command_runs() {
    let port = free_port();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
    let mut cmd = gpulse();
    cmd.args([
        "--backend",
        "sim",
        "--gpus",
        "2",
        "--serve",
        &addr.to_string(),
        "stream",
    ]);
    let _stream = spawn(cmd);
    // Before the first sample the exposition has no GPU readings (absent, not 0): wait for one.
    let body = wait_until(
        Duration::from_secs(20),
        "--serve to export a sample",
        || {
            http_get(addr, "/metrics")
                .ok()
                .filter(|(s, b)| *s == 200 && b.contains("DCGM_FI_DEV_GPU_UTIL{"))
                .map(|(_, b)| b)
        },
    );
    assert_eq!(
        body.lines()
            .filter(|l| l.starts_with("DCGM_FI_DEV_GPU_UTIL{"))
            .count(),
        2
    );
}

#[test]
fn healthz_is_503_when_the_newest_sample_is_old() {
    use support::api::{
        clock, spawn_server, DeviceInfo, Engine, EngineConfig, GpuReading, Sample, SystemInfo,
    };
    let system = SystemInfo {
        hostname: "h".into(),
        devices: vec![DeviceInfo {
            index: 0,
            name: "GPU".into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut engine = Engine::new(system, EngineConfig::default());
    // A sample from a minute ago, and none since: the sampler is stuck.
    engine.ingest(Sample {
        t: clock::now() - 60.0,
        gpus: vec![GpuReading::empty(0, Default::default())],
        ..Default::default()
    });
    let (_tx, rx) = tokio::sync::watch::channel(engine.snapshot());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let (addr, _task) = rt
        .block_on(spawn_server("127.0.0.1:0".parse().expect("addr"), rx))
        .expect("listen");
    let (status, body) = http_get(addr, "/healthz").expect("healthz");
    assert_eq!(status, 503, "{body}");
    assert!(body.starts_with("stale"), "{body}");
    // Metrics are still served from the last snapshot.
    assert_eq!(http_get(addr, "/metrics").expect("metrics").0, 200);
}

#[test]
fn a_non_loopback_address_is_served_only_when_asked_and_warned_about() {
    use std::io::Read;
    let port = free_port();
    let mut cmd = gpulse();
    cmd.args([
        "--backend",
        "sim",
        "serve",
        "--listen",
        &format!("0.0.0.0:{port}"),
    ]);
    let mut guard = spawn(cmd);
    let local: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
    wait_until(Duration::from_secs(20), "the exporter", || {
        http_get(local, "/healthz").ok().filter(|(s, _)| *s == 200)
    });
    let _ = guard.0.kill();
    let _ = guard.0.wait();
    let mut stderr = String::new();
    guard
        .0
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    assert!(
        stderr.contains("warning") && stderr.contains(&format!("0.0.0.0:{port}")),
        "{stderr}"
    );
}
