//! End to end: a real Prometheus scraping four `gpulse --backend sim serve` processes on loopback,
//! each a different host with a different scenario; one of them is seen as a plain dcgm-exporter
//! (its `gpulse_*` series are dropped at scrape time). `gpulse fleet --json` must return every GPU
//! with the expected verdict, and the screen in tmux must list them worst first.

mod support;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::cli::gpulse;
use support::net::{free_port, spawn_quiet, tool, ChildGuard};
use support::tmux::Tmux;

/// What a host's GPUs must show.
#[derive(Clone, Copy)]
enum Expect {
    /// This verdict.
    Verdict(&'static str),
    /// This finding active (another one may be the verdict).
    Finding(&'static str),
}

/// (host name, scenario, seen as plain dcgm-exporter, what its GPUs must show)
const HOSTS: [(&str, &str, bool, Expect); 4] = [
    (
        "node-starving",
        "starving",
        false,
        Expect::Verdict("input_starvation"),
    ),
    (
        "node-memidle",
        "memory-idle",
        false,
        Expect::Finding("memory_idle"),
    ),
    ("node-healthy", "healthy", false, Expect::Verdict("healthy")),
    ("node-dcgm", "idle", true, Expect::Verdict("idle")),
];
const GPUS_PER_HOST: usize = 2;

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
    for (i, (host, scenario, dcgm_only, _)) in HOSTS.iter().enumerate() {
        let port = free_port();
        let mut cmd = gpulse();
        cmd.args(["--backend", "sim", "--scenario", scenario])
            .args([
                "--gpus",
                &GPUS_PER_HOST.to_string(),
                "--seed",
                &(7 + i).to_string(),
            ])
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")]);
        exporters.push(spawn_quiet(cmd));
        jobs.push_str(&format!(
            "  - job_name: {job}\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n    metric_relabel_configs:\n      - target_label: Hostname\n        replacement: {host}\n",
            job = if *dcgm_only { "dcgm" } else { host },
        ));
        if *dcgm_only {
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
    let prometheus = spawn_quiet(cmd);
    World {
        _exporters: exporters,
        _prometheus: prometheus,
        _dir: dir,
        url: format!("http://127.0.0.1:{prom_port}"),
    }
}

fn fleet_json(url: &str) -> Option<Value> {
    fleet_json_with(url, &[])
}

fn fleet_json_with(url: &str, extra: &[&str]) -> Option<Value> {
    let out = gpulse()
        .args(["fleet", "--prometheus", url, "--json", "--timeout", "5s"])
        .args(extra)
        .output()
        .expect("run gpulse fleet --json");
    if !out.status.success() {
        return None;
    }
    serde_json::from_slice(&out.stdout).ok()
}

/// (hostname, gpu, verdict, source, active finding kinds) of every GPU, in document order.
fn verdicts_of(doc: &Value) -> Vec<(String, String, String, String, Vec<String>)> {
    doc["gpus"]
        .as_array()
        .map(|gpus| {
            gpus.iter()
                .map(|g| {
                    let s = |k: &str| g[k].as_str().unwrap_or("null").to_string();
                    let kinds = g["findings"]
                        .as_array()
                        .map(|f| {
                            f.iter()
                                .filter_map(|f| f["kind"].as_str().map(str::to_string))
                                .collect()
                        })
                        .unwrap_or_default();
                    (s("hostname"), s("gpu"), s("verdict"), s("source"), kinds)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Every GPU of the document has its scrape interval. It comes from queries of its own (raw
/// samples, or a count over 5 min); on a loaded machine one of those can time out for one refresh,
/// and the interval is then absent from that document, not wrong.
fn every_interval_known(doc: &Value) -> bool {
    doc["gpus"].as_array().is_some_and(|gpus| {
        gpus.iter()
            .all(|g| g["scrape_interval_seconds"].as_f64().is_some())
    })
}

fn all_as_expected(doc: &Value) -> bool {
    let v = verdicts_of(doc);
    v.len() == HOSTS.len() * GPUS_PER_HOST
        && HOSTS.iter().all(|(host, _, dcgm, expect)| {
            let mine: Vec<_> = v.iter().filter(|g| g.0 == *host).collect();
            mine.len() == GPUS_PER_HOST
                && mine.iter().all(|g| {
                    let shows = match expect {
                        Expect::Verdict(k) => g.2 == *k,
                        Expect::Finding(k) => g.4.iter().any(|f| f == k),
                    };
                    shows && g.3 == if *dcgm { "dcgm" } else { "gpulse" }
                })
        })
}

#[test]
fn a_real_prometheus_fleet_in_json_and_on_screen() {
    let Some(prometheus) = tool("prometheus") else {
        return;
    };
    let world = start_world(prometheus);

    // The detectors need a few dozen seconds of data; Prometheus scrapes every second.
    let started = Instant::now();
    let mut last = Value::Null;
    let doc = loop {
        if let Some(doc) = fleet_json(&world.url) {
            if all_as_expected(&doc) && every_interval_known(&doc) {
                break doc;
            }
            last = doc;
        }
        assert!(
            started.elapsed() < Duration::from_secs(150),
            "the fleet never showed the expected verdicts and every interval; last: {:#?} {}",
            verdicts_of(&last),
            every_interval_known(&last)
        );
        std::thread::sleep(Duration::from_secs(2));
    };

    // Worst first: both problem hosts before the healthy one, idle last.
    let hosts: Vec<String> = verdicts_of(&doc).into_iter().map(|g| g.0).collect();
    let first_of = |h: &str| hosts.iter().position(|x| x == h).expect("host listed");
    assert!(
        first_of("node-starving") < first_of("node-healthy"),
        "{hosts:?}"
    );
    assert!(
        first_of("node-memidle") < first_of("node-healthy"),
        "{hosts:?}"
    );
    assert!(
        first_of("node-healthy") < first_of("node-dcgm"),
        "{hosts:?}"
    );
    for g in doc["gpus"].as_array().expect("gpus") {
        assert!(
            g["uuid"].as_str().is_some_and(|u| u.starts_with("GPU-")),
            "{g}"
        );
        assert!(
            g["model"].as_str().is_some_and(|m| m.contains("H200")),
            "{g}"
        );
        assert!(
            g["memory_total_bytes"].as_u64().is_some_and(|m| m > 0),
            "{g}"
        );
        let iv = g["scrape_interval_seconds"].as_f64().expect("interval");
        assert!((0.9..=1.5).contains(&iv), "{g}");
    }
    let starving = &doc["gpus"]
        .as_array()
        .expect("gpus")
        .iter()
        .find(|g| g["hostname"] == "node-starving")
        .expect("a starving GPU")["findings"];
    assert!(
        starving
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f["kind"] == "input_starvation")),
        "{starving}"
    );

    ranked_by_time_lost(&world.url);

    // The screen, in a real terminal.
    let tmux = Tmux::start(
        120,
        30,
        "",
        &format!("fleet --prometheus {} --refresh 1s", world.url),
    );
    let mut screen = String::new();
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(20) {
        screen = tmux.capture();
        if HOSTS
            .iter()
            .all(|(h, ..)| screen.contains(&format!("▾ {h}")))
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let row = |h: &str| {
        screen
            .lines()
            .position(|l| l.starts_with(&format!("▾ {h}")))
            .unwrap_or_else(|| panic!("{h} not on screen:\n{screen}"))
    };
    assert!(row("node-starving") < row("node-healthy"), "{screen}");
    assert!(row("node-memidle") < row("node-healthy"), "{screen}");
    assert!(row("node-healthy") < row("node-dcgm"), "{screen}");
    assert!(
        screen.contains("input starvation") && screen.contains("memory held idle"),
        "{screen}"
    );
    assert!(screen.contains("GPU 1/8 · page 1/1"), "{screen}");

    // Select the second GPU and open it.
    tmux.keys(&["j", "Enter"]);
    let started = Instant::now();
    loop {
        screen = tmux.capture();
        if screen.contains("verdict:") && screen.contains("GPU 2/8") {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no detail view:\n{screen}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(screen.contains("utilization, last"), "{screen}");
    tmux.keys(&["Escape"]);
    tmux.keys(&["q"]);
    assert_eq!(tmux.wait_exit(), 0, "q quits the fleet screen");
}

/// `--range`: the exporters' ledger counters through `increase()`; the hosts that lose time come
/// first, each starving GPU's time lost mostly to starvation, and the dcgm-only host, without a
/// ledger, last.
fn ranked_by_time_lost(url: &str) {
    let lost_of = |g: &Value| g["ledger"]["lost_gpu_seconds"].as_f64();
    let started = Instant::now();
    let mut last = Value::Null;
    let doc = loop {
        if let Some(doc) = fleet_json_with(url, &["--range", "5m"]) {
            let starving_named = doc["gpus"].as_array().is_some_and(|gpus| {
                gpus.iter()
                    .filter(|g| g["hostname"] == "node-starving")
                    .all(|g| g["ledger"]["top_lost_kind"] == "input_starvation")
            });
            if starving_named {
                break doc;
            }
            last = doc;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the starving GPUs never lost most to starvation: {last:#}"
        );
        std::thread::sleep(Duration::from_secs(2));
    };
    assert_eq!(doc["range_s"], 300.0);
    let hosts: Vec<&str> = doc["hosts"]
        .as_array()
        .expect("hosts with a range")
        .iter()
        .filter_map(|h| h["name"].as_str())
        .collect();
    assert_eq!(hosts.len(), HOSTS.len(), "{hosts:?}");
    assert_eq!(hosts.last(), Some(&"node-dcgm"), "{hosts:?}");
    let place = |h: &str| hosts.iter().position(|x| *x == h).expect("host listed");
    assert!(place("node-starving") < place("node-healthy"), "{hosts:?}");
    assert!(place("node-memidle") < place("node-healthy"), "{hosts:?}");
    for g in doc["gpus"].as_array().expect("gpus") {
        match g["hostname"].as_str() {
            Some("node-dcgm") => assert!(g.get("ledger").is_none(), "{g}"),
            Some("node-starving") | Some("node-memidle") => {
                assert!(lost_of(g).is_some_and(|s| s > 0.5), "{g}");
                let energy = g["ledger"]["energy_joules"].as_f64();
                assert!(energy.is_some_and(|j| j > 0.0), "{g}");
            }
            _ => assert!(lost_of(g).is_some(), "{g}"),
        }
    }
}

#[test]
fn prometheus_down_is_an_error_with_the_address() {
    let port = free_port();
    let out = gpulse()
        .args([
            "fleet",
            "--prometheus",
            &format!("http://127.0.0.1:{port}"),
            "--json",
            "--timeout",
            "2s",
        ])
        .output()
        .expect("run gpulse fleet");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("127.0.0.1:{port}")) && err.contains("cannot connect"),
        "{err}"
    );
}

#[test]
fn credentials_in_the_url_are_refused_without_being_repeated() {
    let out = gpulse()
        .args([
            "fleet",
            "--prometheus",
            "https://alice:s3cr3t@prometheus.example:9090",
            "--json",
        ])
        .output()
        .expect("run gpulse fleet");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("basic_auth.password_file") && !err.contains("s3cr3t"),
        "{err}"
    );
}
