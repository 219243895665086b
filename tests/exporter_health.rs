//! The exporter's health metrics on the `faulty` scenario, under dcgm-exporter's legacy and
//! current names: values and units as dcgm-exporter writes them, absent where the GPU has no
//! such counter, and gpulse's counters of throttled and lost time.

mod support;

use support::api::{render_named, DcgmNames, Scenario, SimRun};

fn exposition(names: DcgmNames) -> String {
    let mut run = SimRun::new(Scenario::Faulty, 4);
    run.advance(90.0);
    render_named(&run.snapshot(), &|_| true, names)
}

/// The value of `metric` for GPU `gpu` (and the extra labels, if any), when written.
fn value(text: &str, metric: &str, gpu: u32, extra: &str) -> Option<f64> {
    let prefix = format!("{metric}{{gpu=\"{gpu}\"");
    text.lines()
        .filter(|l| l.starts_with(&prefix) && l.contains(extra))
        .find_map(|l| l.rsplit(' ').next()?.parse().ok())
}

#[test]
fn legacy_names_carry_health_as_dcgm_exporter_writes_it() {
    let text = exposition(DcgmNames::Legacy);
    // The last XID: 79 on the GPU that fell off the bus, 0 where watched and none came.
    assert_eq!(value(&text, "DCGM_FI_DEV_XID_ERRORS", 0, ""), Some(79.0));
    assert_eq!(value(&text, "DCGM_FI_DEV_XID_ERRORS", 1, ""), Some(63.0));
    assert_eq!(value(&text, "DCGM_FI_DEV_XID_ERRORS", 3, ""), Some(0.0));
    assert_eq!(
        value(&text, "DCGM_FI_DEV_ROW_REMAP_PENDING", 1, ""),
        Some(1.0)
    );
    assert_eq!(
        value(&text, "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", 1, ""),
        Some(1.0)
    );
    assert_eq!(
        value(&text, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", 1, ""),
        Some(0.0)
    );
    assert_eq!(
        value(&text, "DCGM_FI_DEV_ROW_REMAP_FAILURE", 1, ""),
        Some(0.0)
    );
    assert!(value(&text, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", 1, "").is_some_and(|v| v > 12.0));
    assert_eq!(
        value(&text, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", 3, ""),
        Some(0.0)
    );
    // Hopper retires no pages: absent, not 0. A lost GPU writes no counters.
    assert!(!text.contains("DCGM_FI_DEV_RETIRED_SBE"));
    assert_eq!(value(&text, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", 0, ""), None);
    // NVLink in MB/s on the NVLink pair only.
    assert!(value(&text, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", 3, "").is_some_and(|v| v > 1e5));
    assert_eq!(
        value(&text, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", 1, ""),
        None
    );
    // The HW-thermal counter in ns; no HW slowdown counter exists to write.
    let thermal = value(
        &text,
        "DCGM_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN_NS",
        2,
        "",
    );
    assert!(thermal.is_some_and(|ns| ns > 60e9), "{thermal:?}");
    assert!(text.contains("# TYPE DCGM_FI_DEV_POWER_VIOLATION gauge"));
    // gpulse's counters.
    let held = value(
        &text,
        "gpulse_throttled_seconds_total",
        2,
        "reason=\"hw_slowdown\"",
    );
    assert!(held.is_some_and(|s| s > 60.0), "{held:?}");
    let lost = value(
        &text,
        "gpulse_throttle_lost_gpu_seconds_total",
        2,
        "reason=\"hw_slowdown\"",
    );
    assert!(lost.is_some_and(|s| s > 25.0), "{lost:?}");
    assert!(
        !text.contains("gpulse_throttle_lost_gpu_seconds_total{gpu=\"2\",reason=\"sw_power_cap\"")
    );
    let fault = value(&text, "gpulse_fault_lost_gpu_seconds_total", 0, "");
    assert!(fault.is_some_and(|s| s > 40.0), "{fault:?}");
    assert_eq!(
        value(&text, "gpulse_fault_lost_gpu_seconds_total", 3, ""),
        Some(0.0)
    );
    assert!(
        text.contains("gpulse_finding_active{gpu=\"0\",kind=\"gpu_fault\",severity=\"high\"} 1")
    );
}

#[test]
fn current_names_use_the_new_names_and_units() {
    let legacy = exposition(DcgmNames::Legacy);
    let text = exposition(DcgmNames::Current);
    for gone in [
        "DCGM_FI_DEV_GPU_UTIL{",
        "DCGM_FI_DEV_SM_CLOCK{",
        "DCGM_FI_DEV_XID_ERRORS{",
        "DCGM_FI_PROF_PCIE_RX_BYTES{",
        "DCGM_FI_DEV_POWER_VIOLATION",
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
    ] {
        assert!(!text.contains(gone), "{gone} is a legacy name");
    }
    let util = value(&legacy, "DCGM_FI_DEV_GPU_UTIL", 3, "").expect("legacy util");
    let ratio = value(&text, "DCGM_FI_DEV_GPU_UTIL_RATIO", 3, "").expect("ratio");
    assert!((ratio - util / 100.0).abs() < 1e-9, "{ratio} vs {util}");
    let mhz = value(&legacy, "DCGM_FI_DEV_SM_CLOCK", 3, "").expect("MHz");
    assert_eq!(
        value(&text, "DCGM_FI_DEV_SM_CLOCK_HERTZ", 3, ""),
        Some(mhz * 1e6)
    );
    let mj = value(&legacy, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 3, "").expect("mJ");
    let j = value(&text, "DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL", 3, "").expect("J");
    assert!((j * 1000.0 - mj).abs() < 1.0, "{j} J vs {mj} mJ");
    assert!(value(&text, "DCGM_FI_DEV_FB_CAPACITY_BYTES", 3, "").is_some_and(|b| b > 1e11));
    assert!(value(&text, "DCGM_FI_PROF_PCIE_RX_BYTES_PER_SECOND", 3, "").is_some());
    assert_eq!(value(&text, "DCGM_FI_DEV_XID_ERROR", 0, ""), Some(79.0));
    assert_eq!(
        value(&text, "DCGM_FI_DEV_ROW_REMAP_CORRECTABLE_TOTAL", 1, ""),
        Some(1.0)
    );
    assert_eq!(
        value(&text, "DCGM_FI_DEV_PCIE_REPLAY_TOTAL", 3, ""),
        Some(0.0)
    );
    let mbps = value(&legacy, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", 3, "").expect("MB/s");
    let bps = value(&text, "DCGM_FI_DEV_NVLINK_THROUGHPUT_TOTAL", 3, "").expect("B/s");
    assert!((bps - mbps * 1e6).abs() < 1.0);
}

#[test]
fn promtool_accepts_the_health_metrics_under_both_namings() {
    let Some(promtool) = support::net::tool("promtool") else {
        return;
    };
    for names in [DcgmNames::Legacy, DcgmNames::Current] {
        let text = exposition(names);
        let mut child = std::process::Command::new(&promtool)
            .args(["check", "metrics"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run promtool");
        std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), text.as_bytes())
            .expect("feed promtool");
        let out = child.wait_with_output().expect("promtool output");
        let report = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // Exit 1 is a parse error. Exit 3 is lint advice: only DCGM's own names may draw it (the
        // camelCase labels dcgm-exporter writes; `_NS`, `_COUNTER`, no `_total` in DCGM's field
        // names); gpulse's own series must pass clean.
        assert!(
            matches!(out.status.code(), Some(0) | Some(3)),
            "{names:?}: {report}"
        );
        for line in report.lines().filter(|l| !l.trim().is_empty()) {
            let dcgm_name = line.starts_with("DCGM_FI_");
            assert!(
                dcgm_name || line.contains("label names should be written in 'snake_case'"),
                "{names:?}: unexpected promtool finding: {line}"
            );
        }
    }
}
