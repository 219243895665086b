//! The fleet screen rendered into a buffer from recorded Prometheus answers.

use std::sync::Arc;

use crate::detector::DetectorConfig;
use crate::fleet::api::parse_answer;
use crate::fleet::build::build;
use crate::fleet::queries::Grid;
use crate::fleet::queries::{Query, QueryResults};
use crate::fleet::{DetectorCache, Fleet, FleetHost, FleetState};

use super::app::{Action, FleetApp};

macro_rules! fixture {
    ($name:literal) => {
        include_bytes!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/prometheus/",
            $name
        ))
        .as_slice()
    };
}

fn recorded_fleet() -> Fleet {
    let meta: serde_json::Value =
        serde_json::from_slice(fixture!("recorded.json")).expect("recorded.json");
    let time = meta["time"].as_f64().unwrap_or_default();
    let files: [(Query, &[u8]); 13] = [
        (Query::Util, fixture!("util_range.json")),
        (Query::MemoryUsed, fixture!("memory_used_range.json")),
        (Query::Power, fixture!("power_range.json")),
        (Query::LastSample, fixture!("last_sample.json")),
        (Query::RecentRaw, fixture!("recent_raw.json")),
        (Query::SampleCount, fixture!("sample_count.json")),
        (Query::RawUtil, fixture!("raw_util_dcgm.json")),
        (Query::MemoryFree, fixture!("memory_free.json")),
        (Query::Verdict, fixture!("verdict.json")),
        (Query::Findings, fixture!("findings.json")),
        (Query::LostFraction, fixture!("lost_fraction.json")),
        (Query::StarvationPeriod, fixture!("starvation_period.json")),
        (Query::Up, fixture!("up.json")),
    ];
    let results = QueryResults {
        results: files
            .iter()
            .map(|(q, body)| (*q, parse_answer(200, body)))
            .collect(),
        took_s: 0.012,
    };
    build(
        &results,
        Grid::ending_at(time, 600.0, 120),
        time,
        &DetectorConfig::default(),
        &mut DetectorCache::default(),
    )
}

fn state(fleet: Fleet, age: f64, error: Option<&str>) -> FleetState {
    let t = fleet.time;
    FleetState {
        fleet: Some(Arc::new(fleet)),
        fetched_at: Some(t - age),
        problems: Vec::new(),
        error: error.map(str::to_string),
        in_flight_since: None,
        took_s: Some(0.012),
        refreshes: 1,
    }
}

fn draw(state: &FleetState, app: &mut FleetApp, w: u16, h: u16) -> Vec<String> {
    let now = state.fleet.as_ref().map_or(0.0, |f| f.time);
    super::render_lines(state, app, "http://127.0.0.1:9090", now, w, h)
}

#[test]
fn the_list_shows_hosts_and_gpus_worst_first() {
    let s = state(recorded_fleet(), 2.0, None);
    let lines = draw(&s, &mut FleetApp::default(), 100, 24);
    assert!(
        lines[0].contains("2 hosts · 4 GPUs · 1 need attention"),
        "{}",
        lines[0]
    );
    assert!(
        lines[2].starts_with("▾ node-a · 127.0.0.1:19401 · gpulse"),
        "{}",
        lines[2]
    );
    assert!(
        lines[3].starts_with("▸   0 H200") && lines[3].contains("input starvation"),
        "{}",
        lines[3]
    );
    assert!(lines[4].contains("healthy"));
    assert!(
        lines[5].starts_with("▾ node-b · 127.0.0.1:19402 · dcgm"),
        "{}",
        lines[5]
    );
    assert!(lines[7].contains("idle"));
    let status = &lines[23];
    assert!(
        status.starts_with("updated 2 s ago · took 12 ms · 1 targets down"),
        "{status}"
    );
    assert!(status.contains("GPU 1/4 · page 1/1"), "{status}");
}

#[test]
fn it_fits_80_columns_and_refuses_a_tiny_terminal() {
    let s = state(recorded_fleet(), 2.0, None);
    let lines = draw(&s, &mut FleetApp::default(), 80, 24);
    assert!(
        lines[3].contains("input starvation") && lines[3].contains('%'),
        "{}",
        lines[3]
    );
    let lines = draw(&s, &mut FleetApp::default(), 40, 8);
    assert!(
        lines[0].starts_with("terminal too small (40×8)"),
        "{}",
        lines[0]
    );
}

#[test]
fn prometheus_down_keeps_the_last_data_and_says_how_old_it_is() {
    let s = state(
        recorded_fleet(),
        95.0,
        Some("Prometheus at http://127.0.0.1:9090 did not answer any query: cannot connect"),
    );
    let lines = draw(&s, &mut FleetApp::default(), 120, 24);
    assert!(lines[3].contains("input starvation"));
    let status = &lines[23];
    assert!(
        status.starts_with(
            "⚠ showing data from 2 min ago · Prometheus at http://127.0.0.1:9090 did not answer"
        ),
        "{status}"
    );
}

#[test]
fn pages_move_with_the_selection_and_are_numbered() {
    let one = recorded_fleet();
    let mut fleet = one.clone();
    fleet.hosts = (0..30)
        .flat_map(|i| {
            one.hosts.iter().map(move |h| FleetHost {
                name: format!("{}-{i:02}", h.name),
                gpus: h.gpus.clone(),
            })
        })
        .collect();
    // 60 hosts, 120 GPUs: 180 rows; 21 rows a page at 24 lines.
    let s = state(fleet, 1.0, None);
    let mut app = FleetApp::default();
    let lines = draw(&s, &mut app, 100, 24);
    assert!(lines[23].contains("GPU 1/120 · page 1/9"), "{}", lines[23]);
    app.apply(Action::PageDown, 120);
    let lines = draw(&s, &mut app, 100, 24);
    assert!(lines[23].contains("GPU 22/120 · page 2/9"), "{}", lines[23]);
    assert!(lines.iter().any(|l| l.starts_with('▸')));
    app.apply(Action::Bottom, 120);
    let lines = draw(&s, &mut app, 100, 24);
    assert!(
        lines[23].contains("GPU 120/120 · page 9/9"),
        "{}",
        lines[23]
    );
}

#[test]
fn enter_opens_the_history_and_findings_of_the_selected_gpu() {
    let s = state(recorded_fleet(), 1.0, None);
    let mut app = FleetApp::default();
    app.apply(Action::Open, 4);
    let lines = draw(&s, &mut app, 100, 30);
    assert!(
        lines[0].starts_with("node-a · GPU 0 · NVIDIA H200 · GPU-aaaa0000"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains("verdict: input starvation"),
        "{}",
        lines[1]
    );
    let text = lines.join("\n");
    assert!(text.contains("utilization, last"), "{text}");
    // A gpulse exporter's GPU: the last 30 s of scrapes (its verdict comes from the exporter).
    assert!(
        text.contains("utilization, last 29 s, every scrape"),
        "{text}"
    );
    assert!(
        text.contains(
            "• input starvation (warn): input starvation, a dip every 4.0 s, 50% of the time lost"
        ),
        "{text}"
    );
    assert!(lines[29].contains("Esc back"), "{}", lines[29]);
    app.apply(Action::Back, 4);
    let lines = draw(&s, &mut app, 100, 30);
    assert!(lines[0].starts_with("gpulse fleet"));
    // A dcgm-exporter GPU shows the scrapes the detector read.
    app.apply(Action::Bottom, 4);
    app.apply(Action::Open, 4);
    let text = draw(&s, &mut app, 100, 30).join("\n");
    assert!(text.contains("node-b · GPU 0"), "{text}");
    assert!(
        text.contains("utilization, last 2 min, every scrape"),
        "{text}"
    );
}

#[test]
fn sparklines_span_their_width_whatever_the_number_of_points() {
    use super::render::resample;
    let v = [Some(1.0), None, Some(3.0)];
    assert_eq!(
        resample(&v, 6),
        [Some(1.0), Some(1.0), None, None, Some(3.0), Some(3.0)]
    );
    let many: Vec<Option<f64>> = (0..10).map(|i| Some(i as f64)).collect();
    assert_eq!(resample(&many, 2), [Some(4.0), Some(9.0)]);
    assert_eq!(resample(&many, 10), many);
    assert!(resample(&[], 5).is_empty());
}
