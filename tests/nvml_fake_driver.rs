//! The NVML backend against a stand-in libnvidia-ml.so.1 (tests/fixtures/nvml/fake_nvml.c, built
//! here with the C compiler Rust links with), loaded through the same dlopen as the real library:
//! open errors, static facts, a tick's readings, the driver's sample buffer with boot-relative
//! timestamps read through nvml-wrapper, and a GPU that falls off the bus.

mod support;

use std::process::Command;
use support::api::{
    clock, Backend, DeviceError, GpuReading, HostProbe, NvmlBackend, Sampler, ThrottleReason,
    XidWatch,
};
use support::fake_nvml;

#[test]
fn open_errors_from_a_driver_name_what_failed() {
    let dir = tempfile::tempdir().unwrap();
    fake_nvml::build(dir.path());
    for (mode, words) in [
        ("driver_not_loaded", "kernel driver is not loaded"),
        ("no_permission", "no permission to open the NVIDIA devices"),
        ("no_devices", "reports no GPUs (device count 0)"),
    ] {
        assert_cmd::Command::cargo_bin("gpulse")
            .unwrap()
            .args(["--backend", "nvml"])
            .env("LD_LIBRARY_PATH", dir.path())
            .env("FAKE_NVML_MODE", mode)
            .env_remove("GPULSE_BACKEND")
            .timeout(std::time::Duration::from_secs(20))
            .assert()
            .code(2)
            .stderr(predicates::str::contains(words))
            .stderr(predicates::str::contains("gpulse demo"));
    }
}

/// Runs `sampling_through_the_fake_driver` in a child process whose loader path holds the fake
/// library (the loader reads LD_LIBRARY_PATH only when a process starts).
#[test]
fn the_backend_reads_a_fake_driver() {
    let dir = tempfile::tempdir().unwrap();
    fake_nvml::build(dir.path());
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "sampling_through_the_fake_driver",
            "--ignored",
            "--nocapture",
        ])
        .env("LD_LIBRARY_PATH", dir.path())
        .env("FAKE_NVML_MODE", "ok")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "{text}");
}

/// The first reading's health from a clean driver: present and zero where the GPU counts,
/// absent where it does not (retired pages on a GPU that remaps rows, NVLink on a PCIe card).
fn clean_health(first: &GpuReading) {
    let h = first
        .health
        .as_ref()
        .expect("health read at the first tick");
    assert_eq!(h.ecc_enabled, Some(true));
    assert_eq!(h.ecc.volatile_uncorrected, Some(0));
    assert_eq!(h.ecc.aggregate_corrected, Some(0));
    assert_eq!(h.retired_pages, None);
    let rows = h.remapped_rows.expect("rows");
    assert_eq!(
        (
            rows.correctable,
            rows.uncorrectable,
            rows.pending,
            rows.failed
        ),
        (Some(0), Some(0), Some(false), Some(false))
    );
    assert_eq!(h.pcie_replays, Some(0));
    assert!(h.nvlinks.is_empty(), "no NVLink: no links, not links at 0");
    assert!(h
        .throttle_ns
        .get(ThrottleReason::SwPowerCap)
        .is_some_and(|ns| ns > 0));
    assert_eq!(h.throttle_ns.get(ThrottleReason::HwThermal), Some(0));
    assert!(
        matches!(h.xid_watch, Some(XidWatch::Watching { .. })),
        "{:?}",
        h.xid_watch
    );
}

#[test]
#[ignore = "run by the_backend_reads_a_fake_driver with the fake library on the loader path"]
fn sampling_through_the_fake_driver() {
    let mut backend = NvmlBackend::open().unwrap();
    let sys = backend.system().clone();
    assert_eq!(sys.backend, "nvml");
    assert_eq!(sys.driver_version.as_deref(), Some("580.159.04"));
    assert_eq!(sys.cuda_version.as_deref(), Some("13.0"));
    assert_eq!(sys.nvml_version.as_deref(), Some("13.580.159.04"));
    let d = &sys.devices[0];
    assert_eq!(d.name, "Fake GPU");
    assert_eq!(d.memory_total_bytes, Some(150_754_820_096));
    assert_eq!(d.power_limit_watts, Some(500.0));
    assert_eq!(d.power_default_limit_watts, Some(700.0));
    assert_eq!(d.power_max_limit_watts, None, "not answered: absent");
    assert_eq!((d.pcie_gen_max, d.pcie_width_max), (Some(5), Some(16)));
    assert_eq!(d.temperature_slowdown_c, Some(87.0));
    assert!(!d.gpm_supported);

    let mut devices = backend.take_devices();
    let dev = &mut devices[0];
    let first = dev.sample(clock::now()).unwrap();
    let m = first.metrics;
    assert_eq!(m.mem_used_bytes, Some(0));
    assert_eq!(m.temp_c, Some(45.0));
    assert_eq!((m.pcie_gen, m.pcie_width), (Some(1), Some(16)));
    assert_eq!(m.util_mem, Some(0.0));
    // Calls the driver does not have are absent, never zero.
    assert_eq!(m.power_w, None);
    assert_eq!(m.sm_active, None);
    assert_eq!(m.fan_pct, None);
    assert_eq!(m.throttle, None);
    assert_eq!(m.pcie_rx_bytes_per_s, None);
    assert_eq!(m.energy_j, Some(2622.023), "the energy counter, mJ to J");
    // The first read keeps the last 5 s of the 20 s buffer.
    assert!(
        (20..=26).contains(&first.util_windows.len()),
        "{}",
        first.util_windows.len()
    );
    assert_eq!(m.util_gpu, first.util_windows.last().map(|w| w.util));

    clean_health(&first);
    let mut windows = first.util_windows.clone();
    assert!(dev.call_costs().is_empty(), "nothing counted before asked");
    dev.measure_calls();
    let mut held = None;
    for _ in 0..8 {
        std::thread::sleep(std::time::Duration::from_millis(250));
        let r = dev.sample(clock::now()).unwrap();
        assert!(
            r.health.is_none(),
            "health is read every 5 s, not every tick"
        );
        held = Some(r.metrics.throttle_held);
        windows.extend(r.util_windows);
    }
    // The power-cap counter runs at half the wall clock; the thermal counters stand still
    // (read under the ids this driver uses: a wrong id would be refused, absent).
    let held = held.unwrap();
    let cap = held.sw_power_cap.expect("counted");
    assert!((cap - 0.5).abs() < 0.05, "{held:?}");
    assert_eq!((held.hw_thermal, held.sw_thermal), (Some(0.0), Some(0.0)));
    assert_eq!(held.hw_slowdown, None, "NVML counts no HW slowdown");
    // Each kind of call counted: memory and the current utilization every tick, the sample
    // buffer on its own period; calls the driver does not have are not made.
    let costs = dev.call_costs();
    let calls = |name: &str| costs.iter().find(|c| c.0 == name).map(|c| c.1.calls);
    assert_eq!(calls("Memory"), Some(8), "{costs:?}");
    assert_eq!(calls("Utilization"), Some(8), "{costs:?}");
    assert!(
        calls("Samples").is_some_and(|n| (1..8).contains(&n)),
        "{costs:?}"
    );
    assert_eq!(calls("Gpm"), None, "{costs:?}");
    assert!(
        costs.iter().all(|c| c.1.wall_s > 0.0 && c.1.cpu_s >= 0.0),
        "{costs:?}"
    );
    let now = clock::now();
    // Each 200 ms window once, none skipped: the values count up by one (mod 100).
    for p in windows.windows(2) {
        assert_eq!((p[0].util as u32 + 1) % 100, p[1].util as u32, "{p:?}");
        let gap = p[1].t - p[0].t;
        assert!(gap > 0.0 && gap < 0.45, "{gap}");
    }
    assert!(
        windows.len() >= 30,
        "2 s of sampling adds ~10 windows: {}",
        windows.len()
    );
    let newest = windows.last().map(|w| w.t).unwrap();
    assert!(
        (now - newest).abs() < 0.6,
        "mapped onto the wall clock: {} vs {now}",
        newest
    );

    // The GPU falls off the bus.
    std::env::set_var("FAKE_NVML_MODE", "lost");
    match dev.sample(clock::now()) {
        Err(DeviceError::Lost(why)) => assert!(why.contains("memory_info"), "{why}"),
        other => panic!("expected lost, got {other:?}"),
    }
}

/// Run the ignored test `name` in a child process with the fake library in `mode` on its
/// loader path.
fn run_with_fake_driver(name: &str, mode: &str) {
    let dir = tempfile::tempdir().unwrap();
    fake_nvml::build(dir.path());
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--ignored", "--nocapture"])
        .env("LD_LIBRARY_PATH", dir.path())
        .env("FAKE_NVML_MODE", mode)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "{text}");
}

#[test]
fn the_backend_reads_a_sick_fake_driver() {
    run_with_fake_driver("health_through_the_fake_driver", "faulty");
}

#[test]
fn a_driver_refusing_xid_events_says_why_and_sampling_goes_on() {
    run_with_fake_driver("xids_refused_through_the_fake_driver", "no_events");
}

#[test]
#[ignore = "run by a_driver_refusing_xid_events_says_why_and_sampling_goes_on"]
fn xids_refused_through_the_fake_driver() {
    let mut backend = NvmlBackend::open().unwrap();
    let mut devices = backend.take_devices();
    let r = devices[0].sample(clock::now()).unwrap();
    assert_eq!(r.metrics.temp_c, Some(45.0), "sampling goes on");
    match r.health.and_then(|h| h.xid_watch) {
        Some(XidWatch::Unavailable { reason }) => {
            assert!(reason.contains("GPU 0 refused XID events"), "{reason}")
        }
        other => panic!("expected the watch unavailable, got {other:?}"),
    }
}

#[test]
#[ignore = "run by the_backend_reads_a_sick_fake_driver with the fake library on the loader path"]
fn health_through_the_fake_driver() {
    let mut backend = NvmlBackend::open().unwrap();
    let mut sampler = Sampler::new(backend.take_devices(), HostProbe::disabled());
    let mut xids = Vec::new();
    let mut reads = Vec::new();
    let mut last = None;
    // Two health reads (5 s apart) give NVLink rates; the XID comes on its own thread.
    let until = std::time::Instant::now() + std::time::Duration::from_millis(5600);
    while std::time::Instant::now() < until {
        let s = sampler.tick(clock::now(), std::time::Duration::from_millis(200));
        let g = &s.gpus[0];
        xids.extend(g.xids.iter().copied());
        reads.extend(g.health.clone());
        last = Some(g.metrics.throttle_held);
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    assert_eq!(
        xids.iter().map(|x| x.xid).collect::<Vec<_>>(),
        [79],
        "{xids:?}"
    );
    assert_eq!(reads.len(), 2, "{reads:?}");
    let h = &reads[1];
    let rows = h.remapped_rows.expect("rows");
    assert_eq!((rows.correctable, rows.pending), (Some(1), Some(true)));
    assert!(
        h.ecc.volatile_corrected > reads[0].ecc.volatile_corrected,
        "rising"
    );
    assert_eq!(h.pcie_replays, Some(3));
    assert_eq!(h.nvlinks.len(), 4);
    for l in &h.nvlinks {
        assert_eq!(
            (l.active, l.version, l.replay_errors),
            (Some(true), Some(4), Some(0))
        );
        let rx = l.rx_bytes_per_s.expect("a rate from two reads");
        assert!((rx / (1u64 << 30) as f64 - 1.0).abs() < 0.05, "{rx}");
    }
    assert!(
        reads[0].nvlinks.iter().all(|l| l.rx_bytes_per_s.is_none()),
        "one read: no rate"
    );
    let held = last.unwrap();
    assert!(
        held.hw_thermal.is_some_and(|s| (s - 0.4).abs() < 0.05),
        "{held:?}"
    );
}
