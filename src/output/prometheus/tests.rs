//! Tests of the exposition.
use super::*;
use crate::engine::{Engine, EngineConfig};
use crate::model::{
    DeviceInfo, Evidence, Finding, GpuReading, Metrics, Sample, Severity, SystemInfo,
};

fn snapshot() -> Snapshot {
    let system = SystemInfo {
        hostname: "node\"1".into(),
        backend: "test".into(),
        devices: (0..2)
            .map(|i| DeviceInfo {
                index: i,
                name: "NVIDIA H200".into(),
                uuid: Some(format!("GPU-{i}")),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let mut engine = Engine::new(system, EngineConfig::default());
    let full = Metrics {
        util_gpu: Some(87.0),
        mem_used_bytes: Some(3 << 30),
        mem_total_bytes: Some(8 << 30),
        sm_active: Some(62.5),
        pcie_rx_bytes_per_s: Some(1.5e9),
        ..Default::default()
    };
    engine.ingest(Sample {
        t: 1000.0,
        gpus: vec![
            GpuReading {
                index: 0,
                metrics: full,
                ..Default::default()
            },
            // GPU 1 supports nothing but utilization.
            GpuReading {
                index: 1,
                metrics: Metrics {
                    util_gpu: Some(5.0),
                    ..Default::default()
                },
                ..Default::default()
            },
        ],
        sample_duration_s: Some(0.004),
        ..Default::default()
    });
    let mut s = (*engine.snapshot()).clone();
    s.gpus[0].findings.push(Finding {
        kind: FindingKind::InputStarvation,
        severity: Severity::High,
        gpu: 0,
        start: 990.0,
        end: None,
        detected_at: 995.0,
        evidence: Evidence {
            period_s: Some(1.7),
            lost_fraction: Some(0.64),
            ..Default::default()
        },
        summary: "idle ~1.1 s every 1.7 s".into(),
        advice: "more DataLoader workers".into(),
    });
    s
}

fn lines_of<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .collect()
}

#[test]
fn readings_use_dcgm_names_units_and_labels() {
    let text = render(&snapshot(), &|_| true);
    let util = lines_of(&text, "DCGM_FI_DEV_GPU_UTIL");
    assert_eq!(util.len(), 2);
    assert!(util[0].starts_with("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-0\","));
    assert!(
        util[0].contains("device=\"nvidia0\",modelName=\"NVIDIA H200\",Hostname=\"node\\\"1\"}")
    );
    assert!(util[0].ends_with(" 87"));
    assert_eq!(
        lines_of(&text, "DCGM_FI_DEV_FB_USED")[0].rsplit(' ').next(),
        Some("3072")
    );
    assert_eq!(
        lines_of(&text, "DCGM_FI_DEV_FB_FREE")[0].rsplit(' ').next(),
        Some("5120")
    );
    assert_eq!(
        lines_of(&text, "DCGM_FI_PROF_SM_ACTIVE")[0]
            .rsplit(' ')
            .next(),
        Some("0.625")
    );
    assert!(text.contains("# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"));
    assert!(text.contains("# TYPE gpulse_samples_total counter\n"));
}

#[test]
fn absent_readings_are_left_out_never_zero() {
    let text = render(&snapshot(), &|_| true);
    // GPU 1 has no memory, SM or PCIe readings: no line for it.
    for name in [
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_PROF_SM_ACTIVE",
        "DCGM_FI_PROF_PCIE_RX_BYTES",
    ] {
        let l = lines_of(&text, name);
        assert_eq!(l.len(), 1, "{name}: {l:?}");
        assert!(l[0].contains("gpu=\"0\""));
    }
    // Nobody reads power: no HELP, no TYPE, no sample.
    assert!(!text.contains("DCGM_FI_DEV_POWER_USAGE"));
}

#[test]
fn a_gpu_that_did_not_answer_exports_no_readings() {
    let mut s = snapshot();
    s.gpus[1].status = GpuStatus::Lost {
        reason: "fell off the bus".into(),
    };
    let text = render(&s, &|_| true);
    assert_eq!(lines_of(&text, "DCGM_FI_DEV_GPU_UTIL").len(), 1);
    assert!(text.contains("gpulse_gpu_up{gpu=\"1\","));
    assert!(lines_of(&text, "gpulse_gpu_up")[1].ends_with(" 0"));
}

#[test]
fn findings_verdicts_and_health() {
    let s = snapshot();
    let text = render(&s, &|_| true);
    assert!(text.contains(
        "gpulse_finding_active{gpu=\"0\",kind=\"input_starvation\",severity=\"high\"} 1\n"
    ));
    assert!(text.contains(
        "gpulse_finding_active{gpu=\"1\",kind=\"input_starvation\",severity=\"none\"} 0\n"
    ));
    assert_eq!(
        lines_of(&text, "gpulse_finding_active").len(),
        2 * FindingKind::ALL.len()
    );
    let current: Vec<&str> = lines_of(&text, "gpulse_verdict")
        .into_iter()
        .filter(|l| l.ends_with(" 1"))
        .collect();
    assert_eq!(current.len(), 2, "one current verdict per GPU");
    assert!(text.contains("gpulse_lost_fraction{gpu=\"0\",kind=\"input_starvation\"} 0.64\n"));
    assert!(text
        .contains("gpulse_starvation_period_seconds{gpu=\"0\",kind=\"input_starvation\"} 1.7\n"));
    assert!(text.contains("gpulse_samples_total{Hostname=\"node\\\"1\"} 1\n"));
    assert!(text.contains("gpulse_sample_duration_seconds{Hostname=\"node\\\"1\"} 0.004\n"));
}

/// Tensor cores idle is exported as its kind and verdict, severity info, and with no lost
/// fraction: it costs speed, not GPU time.
#[test]
fn tensor_cores_idle_is_a_verdict_and_an_info_finding_without_lost_time() {
    let mut s = snapshot();
    s.gpus[1].verdict = FindingKind::TensorCoresIdle;
    s.gpus[1].findings.push(Finding {
        kind: FindingKind::TensorCoresIdle,
        severity: Severity::Info,
        gpu: 1,
        start: 990.0,
        end: None,
        detected_at: 995.0,
        evidence: Evidence::default(),
        summary: "SM activity 96%, tensor cores 2.6%, DRAM bandwidth 10%".into(),
        advice: "torch.autocast".into(),
    });
    let text = render(&s, &|_| true);
    assert!(text.contains(
        "gpulse_finding_active{gpu=\"1\",kind=\"tensor_cores_idle\",severity=\"info\"} 1\n"
    ));
    assert!(text.contains(
        "gpulse_finding_active{gpu=\"0\",kind=\"tensor_cores_idle\",severity=\"none\"} 0\n"
    ));
    assert!(text.contains("gpulse_verdict{gpu=\"1\",verdict=\"tensor_cores_idle\"} 1\n"));
    assert!(text.contains("gpulse_verdict{gpu=\"0\",verdict=\"tensor_cores_idle\"} 0\n"));
    assert!(!text.contains("gpulse_lost_fraction{gpu=\"1\""));
}

#[test]
fn the_gpu_filter_applies_and_every_name_is_listed() {
    let text = render(&snapshot(), &|i| i == 1);
    assert!(!text.contains("gpu=\"0\""));
    let names = metric_names();
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let name = l.split('{').next().unwrap_or("");
        assert!(names.contains(&name), "{name} is not in metric_names()");
    }
}

#[test]
fn freshness_follows_the_interval() {
    let s = snapshot();
    assert!(is_fresh(&s, 1001.0));
    assert!(!is_fresh(&s, 1010.0));
}
