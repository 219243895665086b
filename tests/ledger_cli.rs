//! `gpulse analyze` ends with the waste ledger: one or two lines per GPU in the text, `ledger` per
//! GPU in the JSON, with a cost when the config file prices GPU time or energy.

mod support;

use serde_json::Value;
use support::cli::gpulse;
use support::repo;

fn recording() -> String {
    repo("tests/data/h200-step-timings/resnet50-loader-4-workers-starving/recording.ndjson.zst")
        .display()
        .to_string()
}

fn analyze(config: Option<&str>, json: bool) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = gpulse();
    if let Some(body) = config {
        let path = dir.path().join("config.toml");
        std::fs::write(&path, body).expect("write the config");
        cmd.arg("--config").arg(path);
    }
    cmd.arg("analyze");
    if json {
        cmd.arg("--json");
    }
    let out = cmd.arg(recording()).output().expect("run gpulse analyze");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn the_json_ledger_books_time_lost_energy_and_processes() {
    let doc: Value = serde_json::from_str(&analyze(None, true)).expect("JSON");
    let l = &doc["gpus"][0]["ledger"];
    let span = l["span_s"].as_f64().expect("span_s");
    let by_verdict: f64 = l["seconds_by_verdict"]
        .as_object()
        .expect("seconds_by_verdict")
        .values()
        .filter_map(Value::as_f64)
        .sum();
    assert!((by_verdict - span).abs() < 1e-6, "{l:#}");
    let lost = l["lost_gpu_seconds"].as_f64().expect("lost");
    let by_kind: f64 = l["lost_by_kind"]
        .as_object()
        .expect("lost_by_kind")
        .values()
        .filter_map(Value::as_f64)
        .sum();
    assert!((by_kind - lost).abs() < 1e-6, "{l:#}");
    assert!(l["lost_by_kind"]["input_starvation"]
        .as_f64()
        .is_some_and(|s| s > 20.0));
    assert!(l["energy_joules"].as_f64().is_some_and(|j| j > 1e4));
    assert!(l.get("cost").is_none(), "no price, no cost");
    let p = &l["processes"][0];
    assert!(
        p["pid"].as_u64().is_some() && p["command"].is_string(),
        "{p}"
    );
    assert!((p["gpu_seconds"].as_f64().expect("gpu_seconds") - span).abs() < 1.5);
    assert_eq!(l["users"][0]["user"], p["user"]);
}

#[test]
fn prices_in_the_config_file_give_a_cost_in_json_and_text() {
    let config = "[ledger]\nprice_per_gpu_hour = 3.6\nprice_per_kwh = 0.36\ncurrency = \"EUR\"\n";
    let doc: Value = serde_json::from_str(&analyze(Some(config), true)).expect("JSON");
    let l = &doc["gpus"][0]["ledger"];
    let hours = l["span_s"].as_f64().expect("span") / 3600.0;
    let kwh = l["energy_joules"].as_f64().expect("energy") / 3.6e6;
    let total = l["cost"]["total"].as_f64().expect("total");
    assert!((total - (3.6 * hours + 0.36 * kwh)).abs() < 1e-9, "{l:#}");
    let lost = l["cost"]["lost"].as_f64().expect("lost");
    assert!(lost > 0.0 && lost < total, "{l:#}");
    assert_eq!(l["cost"]["currency"], "EUR");

    let text = analyze(Some(config), false);
    let ledger = text
        .split("\nledger\n")
        .nth(1)
        .expect("the text ends with the ledger");
    let first = ledger.lines().next().expect("a line per GPU");
    assert!(
        first.starts_with("  GPU 0: ")
            && first.contains("lost (")
            && first.contains("input starvation"),
        "{ledger}"
    );
    assert!(first.contains(" EUR"), "{ledger}");
    assert!(ledger.contains("most lost: pid "), "{ledger}");
}
