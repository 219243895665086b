//! End to end: a real Prometheus scraping two `gpulse --backend sim --scenario faulty serve`
//! processes, one writing dcgm-exporter's names up to 4.8 (seen as gpulse), the other the names
//! of 4.10 and later (`--dcgm-names current`) with its `gpulse_*` series dropped at scrape time
//! (seen as a plain dcgm-exporter of that version). `gpulse fleet --json` must read both
//! namings (utilization from the ratio, power from the board power) and rank the sick GPUs first.

mod support;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use support::cli::gpulse;
use support::net::{free_port, spawn_quiet, tool, wait_until, ChildGuard};

struct World {
    _exporters: Vec<ChildGuard>,
    _prometheus: ChildGuard,
    _dir: tempfile::TempDir,
    url: String,
}

fn start_world(prometheus: PathBuf) -> World {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut exporters = Vec::new();
    let mut jobs = String::new();
    for (host, names, dcgm_only) in [
        ("node-legacy", "legacy", false),
        ("node-current", "current", true),
    ] {
        let port = free_port();
        let mut cmd = gpulse();
        cmd.args(["--backend", "sim", "--scenario", "faulty", "--gpus", "4"])
            .args(["--dcgm-names", names])
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")]);
        exporters.push(spawn_quiet(cmd));
        jobs.push_str(&format!(
            "  - job_name: {host}\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n    metric_relabel_configs:\n      - target_label: Hostname\n        replacement: {host}\n",
        ));
        if dcgm_only {
            jobs.push_str("      - source_labels: [__name__]\n        regex: 'gpulse_.*'\n        action: drop\n");
        }
    }
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n{jobs}"
        ),
    )
    .expect("write the Prometheus config");
    let prom_port = free_port();
    let mut cmd = Command::new(prometheus);
    cmd.arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
        .current_dir(dir.path());
    World {
        _prometheus: spawn_quiet(cmd),
        _exporters: exporters,
        _dir: dir,
        url: format!("http://127.0.0.1:{prom_port}"),
    }
}

fn fleet_json(url: &str) -> Option<Value> {
    let out = gpulse()
        .args(["fleet", "--prometheus", url, "--json", "--timeout", "5s"])
        .output()
        .expect("run gpulse fleet --json");
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).ok())
        .flatten()
}

fn gpu<'a>(doc: &'a Value, host: &str, index: &str) -> Option<&'a Value> {
    doc["gpus"]
        .as_array()?
        .iter()
        .find(|g| g["hostname"] == host && g["gpu"] == index)
}

#[test]
fn the_fleet_reads_both_namings_and_ranks_sick_gpus_first() {
    let Some(prometheus) = tool("prometheus") else {
        return;
    };
    let world = start_world(prometheus);
    // XID 63 comes 12 s after the start, the pending remap with the next health read (every
    // 5 s); the detectors want a few scrapes.
    let doc = wait_until(
        Duration::from_secs(60),
        "both hosts read and GPU 1 sick on each",
        || {
            let doc = fleet_json(&world.url)?;
            let current = gpu(&doc, "node-current", "1")?;
            let legacy = gpu(&doc, "node-legacy", "1")?;
            let ready = current["health"]["last_xid"] == 63
                && current["health"]["remap_pending"] == true
                && legacy["verdict"] == "gpu_fault"
                && current["verdict"].is_string()
                && gpu(&doc, "node-current", "3")?["utilization_gpu"].is_number();
            ready.then_some(doc)
        },
    );
    // The 4.10 names: utilization read from the ratio (as percent), power from the board power.
    let current = gpu(&doc, "node-current", "3").unwrap();
    assert_eq!(current["source"], "dcgm");
    assert!(
        current["utilization_gpu"].as_f64().unwrap() > 50.0,
        "{current}"
    );
    assert!(
        current["power_watts"].as_f64().unwrap() > 100.0,
        "{current}"
    );
    let sick = gpu(&doc, "node-current", "1").unwrap();
    assert!(
        sick["notes"]
            .to_string()
            .contains("reset the GPU to apply pending remaps"),
        "{sick}"
    );
    // Sick GPUs head each host's list, and a host with a sick GPU heads the fleet.
    let order: Vec<(String, String)> = doc["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["hostname"].as_str().unwrap().into(),
                g["gpu"].as_str().unwrap().into(),
            )
        })
        .collect();
    for host in ["node-legacy", "node-current"] {
        let first = order.iter().find(|(h, _)| h == host).unwrap();
        assert!(first.1 == "0" || first.1 == "1", "{order:?}");
    }
}
