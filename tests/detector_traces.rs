//! The detector on the labelled H200 traces: the nvidia-smi CSV logs through `analyze`, and the
//! richer 50 ms traces (SM activity, PCIe, throttle bits) through the same engine.
//!
//! `cargo test --test detector_traces -- --nocapture` prints the results table.

use std::path::{Path, PathBuf};

use gpulse::analyze::{analyze, analyze_path, verdict_over, Report};
use gpulse::backend::SampleSource;
use gpulse::detector::DetectorConfig;
use gpulse::model::{
    DeviceInfo, FindingKind, GpuReading, Metrics, Sample, Severity, SystemInfo, UtilWindow,
};

/// `../shared/traces/...` beside the crate (one level further up from a worktree of it).
fn traces() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    ["../shared", "../../shared"]
        .iter()
        .map(|s| root.join(s).join("traces/h200-2026-12-02"))
        .find(|p| p.join("labels.json").exists())
        .expect("the shared traces at ../shared/traces/h200-2026-12-02")
}

#[derive(Debug)]
struct Label {
    name: String,
    verdict: FindingKind,
    also: Vec<FindingKind>,
    not: Vec<FindingKind>,
    start: f64,
    onset: Option<f64>,
    severity_at_most: Option<Severity>,
    why: String,
}

fn labels() -> Vec<Label> {
    let text = std::fs::read_to_string(traces().join("labels.json")).expect("labels.json");
    let v: serde_json::Value = serde_json::from_str(&text).expect("json");
    let kinds = |x: Option<&serde_json::Value>| -> Vec<FindingKind> {
        x.and_then(|a| a.as_array())
            .map(|a| {
                a.iter()
                    .map(|k| FindingKind::parse(k.as_str().expect("str")).expect("known kind"))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut out: Vec<Label> = v
        .as_object()
        .expect("object")
        .iter()
        .map(|(name, l)| Label {
            name: name.clone(),
            verdict: FindingKind::parse(l["verdict"].as_str().expect("verdict")).expect("kind"),
            also: kinds(l.get("also")),
            not: kinds(l.get("not")),
            start: l["start"].as_f64().expect("start"),
            onset: l.get("onset").and_then(|o| o.as_f64()),
            severity_at_most: l.get("severity_at_most").map(|s| match s.as_str() {
                Some("info") => Severity::Info,
                Some("warn") => Severity::Warn,
                _ => Severity::High,
            }),
            why: l["why"].as_str().unwrap_or("").to_string(),
        })
        .collect();
    out.sort_by(|a, b| a.start.total_cmp(&b.start));
    out
}

/// The true burst period from the 50 ms trace: median spacing of the starts of bursts (a reading
/// of at least a fifth of the trace's peak after at least 0.3 s below a twentieth of it).
fn true_period(name: &str) -> Option<f64> {
    let text = std::fs::read_to_string(traces().join(format!("{name}.trace.csv"))).ok()?;
    let rows: Vec<(f64, f64)> = text
        .lines()
        .skip(1)
        .filter_map(|l| {
            let mut c = l.split(',');
            Some((c.next()?.parse().ok()?, c.next()?.parse().ok()?))
        })
        .collect();
    let peak = rows.iter().map(|r| r.1).fold(0.0, f64::max);
    let mut starts = Vec::new();
    let mut quiet_since: Option<f64> = None;
    for &(t, u) in &rows {
        if u < peak / 20.0 {
            quiet_since.get_or_insert(t);
        } else {
            if u >= peak / 5.0 && quiet_since.is_some_and(|q| t - q >= 0.3) {
                starts.push(t);
            }
            quiet_since = None;
        }
    }
    let mut sp: Vec<f64> = starts.windows(2).map(|w| w[1] - w[0]).collect();
    if sp.len() < 4 {
        return None;
    }
    sp.sort_by(|a, b| a.total_cmp(b));
    Some(sp[sp.len() / 2])
}

/// The 50 ms trace as a live gpulse run would see it: a tick every 250 ms with GPM SM activity,
/// PCIe and throttle bits, and every 200 ms driver window.
struct TraceSource {
    system: SystemInfo,
    samples: std::vec::IntoIter<Sample>,
}

impl TraceSource {
    fn open(name: &str) -> Self {
        let text =
            std::fs::read_to_string(traces().join(format!("{name}.trace.csv"))).expect("trace.csv");
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().expect("header").split(',').collect();
        let col = |n: &str| header.iter().position(|h| *h == n).expect(n);
        let (t, u, um, mem, pw, sm, tc, tx, rx, thr, gsm, gocc, gten, gdram) = (
            col("t"),
            col("util_gpu"),
            col("util_mem"),
            col("mem_used_mib"),
            col("power_w"),
            col("sm_mhz"),
            col("temp_c"),
            col("pcie_tx_kbs"),
            col("pcie_rx_kbs"),
            col("throttle_bits"),
            col("gpm_sm_util"),
            col("gpm_sm_occ"),
            col("gpm_tensor"),
            col("gpm_dram_bw"),
        );
        let mut samples = Vec::new();
        let mut windows = Vec::new();
        let mut last_window = f64::MIN;
        for line in lines {
            let c: Vec<&str> = line.split(',').collect();
            let num = |i: usize| c.get(i).and_then(|v| v.parse::<f64>().ok());
            let Some(time) = num(t) else { continue };
            if time - last_window >= 0.199 {
                if let Some(util) = num(u) {
                    windows.push(UtilWindow { t: time, util });
                    last_window = time;
                }
            }
            // The 250 ms rows carry the slow fields: one tick each.
            if num(rx).is_none() {
                continue;
            }
            let metrics = Metrics {
                util_gpu: num(u),
                util_mem: num(um),
                mem_used_bytes: num(mem).map(|m| (m * 1048576.0) as u64),
                mem_total_bytes: Some(143_771 * 1048576),
                power_w: num(pw),
                power_limit_w: Some(700.0),
                temp_c: num(tc),
                sm_clock_mhz: num(sm).map(|x| x as u32),
                pcie_gen: Some(5),
                pcie_width: Some(16),
                pcie_rx_bytes_per_s: num(rx).map(|k| k * 1000.0),
                pcie_tx_bytes_per_s: num(tx).map(|k| k * 1000.0),
                sm_active: num(gsm),
                sm_occupancy: num(gocc),
                tensor_active: num(gten),
                dram_active: num(gdram),
                throttle: num(thr).map(|b| b as u64),
                ..Default::default()
            };
            samples.push(Sample {
                t: time,
                gpus: vec![GpuReading {
                    index: 0,
                    metrics,
                    util_windows: std::mem::take(&mut windows),
                    ..Default::default()
                }],
                ..Default::default()
            });
        }
        TraceSource {
            system: SystemInfo {
                hostname: "h200".into(),
                backend: "trace".into(),
                devices: vec![DeviceInfo {
                    index: 0,
                    name: "NVIDIA H200".into(),
                    memory_total_bytes: Some(143_771 * 1048576),
                    power_limit_watts: Some(700.0),
                    pcie_gen_max: Some(5),
                    pcie_width_max: Some(16),
                    gpm_supported: true,
                    ..Default::default()
                }],
                ..Default::default()
            },
            samples: samples.into_iter(),
        }
    }

    fn map_sm(mut self, f: impl Fn(f64) -> f64) -> Self {
        let v: Vec<Sample> = self
            .samples
            .map(|mut s| {
                s.gpus[0].metrics.sm_active = s.gpus[0].metrics.sm_active.map(&f);
                s
            })
            .collect();
        self.samples = v.into_iter();
        self
    }
}

impl SampleSource for TraceSource {
    fn system(&self) -> &SystemInfo {
        &self.system
    }
    fn next_sample(&mut self) -> Option<Sample> {
        self.samples.next()
    }
}

const NOT_STARVING: [&str; 4] = ["healthy", "checkpoint", "idle", "memory_hog"];
const STARVING_KINDS: [FindingKind; 2] = [FindingKind::InputStarvation, FindingKind::ErraticStalls];

fn check(label: &Label, r: &Report, source: &str, rows: &mut Vec<String>) -> Vec<String> {
    let mut errors = Vec::new();
    let g = &r.gpus[0];
    let ok_kinds: Vec<FindingKind> = std::iter::once(label.verdict)
        .chain(label.also.iter().copied())
        .collect();
    if !ok_kinds.contains(&g.verdict) || label.not.contains(&g.verdict) {
        errors.push(format!(
            "{} ({source}): verdict {} not in {ok_kinds:?}",
            label.name, g.verdict
        ));
    }
    for f in &g.findings {
        if label.not.contains(&f.kind) {
            errors.push(format!(
                "{} ({source}): finding {} is excluded",
                label.name, f.kind
            ));
        }
        if NOT_STARVING.contains(&label.name.as_str()) && STARVING_KINDS.contains(&f.kind) {
            errors.push(format!(
                "{} ({source}): {} on a job that is not starving",
                label.name, f.kind
            ));
        }
        if let Some(max) = label.severity_at_most {
            if f.severity > max {
                errors.push(format!(
                    "{} ({source}): {} severity {:?} above {max:?}",
                    label.name, f.kind, f.severity
                ));
            }
        }
    }
    let starving = g.findings.iter().find(|f| STARVING_KINDS.contains(&f.kind));
    let begin = label.onset.unwrap_or(label.start);
    let after = starving.map(|f| f.detected_at - begin);
    if label.verdict == FindingKind::InputStarvation {
        match after {
            Some(a) if a <= 15.0 => {}
            other => errors.push(format!(
                "{} ({source}): starvation detected after {other:?} s",
                label.name
            )),
        }
    }
    let period = starving.and_then(|f| f.evidence.period_s);
    let truth = true_period(&label.name);
    if let (Some(p), Some(tp)) = (period, truth) {
        if tp >= 1.0 && (p - tp).abs() > 0.15 * tp {
            errors.push(format!(
                "{} ({source}): period {p:.2} s, true {tp:.2} s",
                label.name
            ));
        }
    }
    rows.push(format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} |",
        label.name,
        source,
        ok_kinds
            .iter()
            .map(|k| k.as_str())
            .collect::<Vec<_>>()
            .join(" / "),
        g.verdict,
        after
            .map(|a| format!("{a:.1}"))
            .unwrap_or_else(|| "-".into()),
        period
            .map(|p| format!("{p:.2}"))
            .unwrap_or_else(|| "-".into()),
        truth
            .map(|p| format!("{p:.2}"))
            .unwrap_or_else(|| "-".into()),
        g.findings
            .iter()
            .map(|f| format!("{}:{}", f.kind, f.severity.as_str()))
            .collect::<Vec<_>>()
            .join(" "),
    ));
    errors
}

#[test]
fn every_labelled_trace_gets_an_accepted_verdict() {
    let cfg = DetectorConfig::default();
    let mut rows = vec![
        "| trace | input | expected | got | detected after s | period s | true period s | findings |".to_string(),
        "|---|---|---|---|---|---|---|---|".to_string(),
    ];
    let mut errors = Vec::new();
    let all = labels();
    assert!(all.len() >= 10, "labels: {}", all.len());
    for label in &all {
        let csv = traces().join(format!("{}.smi.csv", label.name));
        let r = analyze_path(&csv, None, &cfg).expect("analyze");
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        errors.extend(check(label, &r, "smi.csv", &mut rows));
        let mut trace = TraceSource::open(&label.name);
        let r = analyze(&label.name, &mut trace, &cfg);
        errors.extend(check(label, &r, "trace.csv", &mut rows));
        assert!(!label.why.is_empty());
    }
    println!("{}", rows.join("\n"));
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn pcie_and_sm_activity_name_the_cause_on_real_traces() {
    let cfg = DetectorConfig::default();
    let r = analyze("h2d_bound", &mut TraceSource::open("h2d_bound"), &cfg);
    let g = &r.gpus[0];
    assert_eq!(g.verdict, FindingKind::TransferBound, "{:?}", g.findings);
    let f = g
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::TransferBound)
        .expect("transfer_bound");
    let rx = f.evidence.signals["pcie_rx_bytes_per_s"];
    assert!((5e9..9e9).contains(&rx), "rx {rx}");
    assert!(f.summary.contains("GB/s"), "{}", f.summary);

    let r = analyze("sync_bound", &mut TraceSource::open("sync_bound"), &cfg);
    let f = r.gpus[0]
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::HostBound)
        .expect("host_bound");
    assert!(f.evidence.signals["sm_active"] < 1.0, "{:?}", f.evidence);
    assert!(f.summary.contains("SM activity"), "{}", f.summary);

    // The healthy job's SM activity (~91%) is real work: not busy_but_idle.
    let r = analyze("healthy", &mut TraceSource::open("healthy"), &cfg);
    assert_eq!(
        r.gpus[0].verdict,
        FindingKind::Healthy,
        "{:?}",
        r.gpus[0].findings
    );
    // The same utilization with SM activity cut to a tenth is the util-lies case.
    let mut faked = TraceSource::open("healthy").map_sm(|x| x / 10.0);
    let r = analyze("healthy-sm/10", &mut faked, &cfg);
    assert_eq!(
        r.gpus[0].verdict,
        FindingKind::BusyButIdle,
        "{:?}",
        r.gpus[0].findings
    );
}

#[test]
fn verdict_is_the_finding_covering_most_of_the_span() {
    let cfg = DetectorConfig::default();
    let r = analyze_path(&traces().join("starved_dips.smi.csv"), None, &cfg).expect("analyze");
    let g = &r.gpus[0];
    let end = r.end.expect("end");
    assert_eq!(verdict_over(&g.findings, end, true), g.verdict);
    assert_eq!(verdict_over(&[], end, true), FindingKind::Healthy);
    assert_eq!(verdict_over(&[], end, false), FindingKind::Idle);
    let f = &g.findings[0];
    assert!(f.start <= f.detected_at);
    assert!(
        f.summary.contains("every 1.") && f.summary.contains("faster if fixed"),
        "{}",
        f.summary
    );
    assert!(f.advice.contains("DataLoader workers"), "{}", f.advice);
    let l = f.evidence.lost_fraction.expect("lost");
    let s = f.evidence.speedup_bound.expect("speedup");
    assert!((s - 1.0 / (1.0 - l)).abs() < 1e-9);
}
