//! The published assets agree with the code: the Grafana dashboard only queries series the
//! exporter writes, and docs/OUTPUTS.md documents every metric and every JSON field.

mod support;

use std::collections::BTreeSet;

use serde_json::Value;
use support::api::metric_names;

fn read(rel: &str) -> String {
    std::fs::read_to_string(support::repo(rel)).expect(rel)
}

fn metric_tokens(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in expr.chars().chain(std::iter::once(' ')) {
        if c.is_ascii_alphanumeric() || c == '_' {
            cur.push(c);
        } else {
            if cur.starts_with("DCGM_FI_") || cur.starts_with("gpulse_") {
                out.push(cur.clone());
            }
            cur.clear();
        }
    }
    out
}

#[test]
fn the_grafana_dashboard_queries_only_series_the_exporter_writes() {
    let dash: Value = serde_json::from_str(&read("assets/grafana-dashboard.json")).expect("JSON");
    assert!(dash["title"].is_string() && dash["uid"].is_string());
    assert!(dash["schemaVersion"].as_u64().is_some_and(|v| v >= 30));
    let names = metric_names();
    let panels = dash["panels"].as_array().expect("panels");
    let mut ids = BTreeSet::new();
    let mut used = BTreeSet::new();
    for p in panels {
        assert!(
            ids.insert(p["id"].as_u64().expect("id")),
            "unique panel ids"
        );
        for k in ["h", "w", "x", "y"] {
            assert!(p["gridPos"][k].is_u64(), "gridPos.{k} of {}", p["title"]);
        }
        let targets = p["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "{} queries something", p["title"]);
        for t in targets {
            let expr = t["expr"].as_str().expect("expr");
            let tokens = metric_tokens(expr);
            assert!(!tokens.is_empty(), "{expr}");
            for m in tokens {
                assert!(names.contains(&m.as_str()), "{m} in {expr} is not exported");
                used.insert(m);
            }
        }
    }
    for m in [
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_PROF_SM_ACTIVE",
        "DCGM_FI_PROF_PCIE_RX_BYTES",
        "gpulse_finding_active",
        "gpulse_lost_fraction",
        "gpulse_starvation_period_seconds",
    ] {
        assert!(used.contains(m), "the dashboard shows {m}");
    }
}

#[test]
fn outputs_doc_lists_every_metric_and_every_schema_field() {
    let doc = read("docs/OUTPUTS.md");
    for m in metric_names() {
        assert!(doc.contains(&format!("`{m}")), "docs/OUTPUTS.md lacks {m}");
    }
    let schema: Value = serde_json::from_str(&read("assets/snapshot.schema.json")).expect("JSON");
    let gpu_fields = schema["properties"]["gpus"]["items"]["properties"]
        .as_object()
        .expect("GPU properties");
    for f in gpu_fields.keys() {
        assert!(
            doc.contains(&format!("`{f}")),
            "docs/OUTPUTS.md lacks GPU field {f}"
        );
    }
    for f in schema["properties"].as_object().expect("properties").keys() {
        assert!(doc.contains(&format!("`{f}")), "docs/OUTPUTS.md lacks {f}");
    }
}
