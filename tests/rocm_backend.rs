//! The AMD backend end to end: a fake sysfs tree (tests/fixtures/sysfs) and stand-in `rocm-smi` /
//! `amd-smi` executables (tests/fixtures/rocm/bin/*) run as real subprocesses. `PATH` is handed to
//! the backend explicitly, never changed in this process.

mod support;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use support::api::{
    smi_runner, sysfs, Backend, DeviceError, DeviceSampler, GpuReading, RocmBackend, RocmOptions,
    SmiRunError, SmiTool, Vendor, ROCM_SMI_ARGS,
};

fn sysfs_tree(name: &str) -> PathBuf {
    support::fixture("sysfs").join(name)
}

/// A PATH holding only the stand-in directory `variant` (the stand-ins set their own PATH).
fn standin_path(variant: &str) -> OsString {
    support::fixture("rocm/bin").join(variant).into_os_string()
}

fn opts(sysfs: &str, variant: &str) -> RocmOptions {
    RocmOptions {
        sysfs_root: sysfs_tree(sysfs),
        path: standin_path(variant),
        smi_period: Duration::from_millis(200),
        smi_timeout: Duration::from_millis(2000),
        stale_after: Duration::from_secs(5),
    }
}

fn sample_all(devs: &mut [Box<dyn DeviceSampler>]) -> Vec<GpuReading> {
    devs.iter_mut()
        .map(|d| d.sample(1000.0).expect("sample"))
        .collect()
}

#[test]
fn sysfs_tree_yields_only_amd_cards_with_their_bus_ids() {
    let cards = sysfs::find_cards(&sysfs_tree("two-mi100"));
    let found: Vec<(u32, Option<&str>)> = cards
        .iter()
        .map(|c| (c.card, c.bus_id.as_deref()))
        .collect();
    // card0-DP-1 is a connector, card2 is NVIDIA (vendor 0x10de).
    assert_eq!(
        found,
        vec![(0, Some("0000:a3:00.0")), (1, Some("0000:83:00.0"))]
    );
    let r = cards[1].read().expect("read");
    assert_eq!(r.util_gpu, Some(12.0));
    assert_eq!(r.util_mem, Some(3.0));
    assert_eq!(r.power_w, Some(143.0));
    assert_eq!(r.power_cap_w, Some(290.0));
    assert_eq!(r.temp_edge_c, Some(48.0));
    assert_eq!(r.temp_junction_c, Some(52.0));
    assert_eq!(r.temp_mem_c, None, "no labelled mem sensor");
    assert_eq!(r.sclk_mhz, Some(300));
    assert_eq!(r.mclk_mhz, Some(1200));
    assert_eq!((r.pcie_gen, r.pcie_width), (Some(3), Some(8)));
    assert_eq!(r.vram_used_bytes, Some(1_073_741_824));
    assert_eq!(r.energy_j, None, "no hwmon energy counter on this card");
    assert_eq!(
        cards[0].read().expect("read").energy_j,
        Some(1_234_567.89),
        "energy1_input is in microjoules"
    );
    let st = cards[1].read_static();
    assert_eq!(st.sclk_max_mhz, Some(1502));
    assert_eq!(st.pcie_gen_max, Some(4));
    assert_eq!(st.name.as_deref(), Some("Instinct MI100"));
    assert!(sysfs::find_cards(&sysfs_tree("no-amd")).is_empty());
    assert!(sysfs::find_cards(&sysfs_tree("does-not-exist")).is_empty());
}

#[test]
fn sources_are_matched_by_bus_id_and_sysfs_wins() {
    let mut backend = RocmBackend::open(opts("two-mi100", "ok")).expect("open");
    let sys = backend.system().clone();
    assert_eq!(sys.backend, "rocm");
    assert_eq!(sys.driver_version.as_deref(), Some("6.3.6"));
    assert_eq!(sys.devices.len(), 2);
    let d0 = &sys.devices[0];
    assert_eq!(d0.vendor, Vendor::Amd);
    assert_eq!(d0.bus_id.as_deref(), Some("0000:a3:00.0"));
    assert_eq!(d0.name, "Arcturus GL-XL [Instinct MI100]");
    assert_eq!(d0.memory_total_bytes, Some(34_342_961_152));
    assert_eq!(d0.sm_clock_max_mhz, Some(1502));
    assert_eq!(d0.mem_clock_max_mhz, Some(1200));
    assert_eq!((d0.pcie_gen_max, d0.pcie_width_max), (Some(4), Some(16)));
    // card0 has no power1_cap: rocm-smi's "Max Graphics Package Power (W)" fills it.
    assert_eq!(d0.power_limit_watts, Some(290.0));
    assert_eq!(sys.devices[1].power_max_limit_watts, Some(290.0));

    let mut devs = backend.take_devices();
    let r = sample_all(&mut devs);
    // DRM card0 is rocm-smi's card1 (bus a3): its power (44 W) comes from rocm-smi's card1,
    // not card0 (36 W); its utilization and temperature come from sysfs.
    assert_eq!(r[0].metrics.power_w, Some(44.0));
    assert_eq!(r[0].metrics.util_gpu, Some(87.0));
    assert_eq!(r[0].metrics.util_mem, Some(41.0));
    assert_eq!(
        r[0].metrics.temp_c,
        Some(61.0),
        "sysfs edge 61, not rocm-smi's 55"
    );
    assert_eq!(r[0].metrics.mem_used_bytes, Some(30_064_771_072));
    assert_eq!(r[0].metrics.sm_clock_mhz, Some(1502));
    // DRM card1 (bus 83) has its own hwmon power: sysfs 143 W wins over rocm-smi's 36 W.
    assert_eq!(r[1].metrics.power_w, Some(143.0));
    assert_eq!(r[1].metrics.power_limit_w, Some(290.0));
    // One utilization window per tick, from gpu_busy_percent.
    assert_eq!(r[0].util_windows.len(), 1);
    assert_eq!(r[0].util_windows[0].t, 1000.0);
    assert_eq!(r[0].util_windows[0].util, 87.0);
    // What AMD does not report stays absent.
    assert_eq!(r[0].metrics.sm_active, None);
    assert_eq!(r[0].metrics.throttle, None);
    assert_eq!(r[0].metrics.pcie_rx_bytes_per_s, None);
}

#[test]
fn stale_tool_answers_are_dropped() {
    let mut o = opts("two-mi100", "ok");
    o.smi_period = Duration::from_secs(600);
    o.stale_after = Duration::from_millis(300);
    let mut backend = RocmBackend::open(o).expect("open");
    let mut devs = backend.take_devices();
    assert_eq!(sample_all(&mut devs)[0].metrics.power_w, Some(44.0));
    std::thread::sleep(Duration::from_millis(600));
    let r = sample_all(&mut devs);
    assert_eq!(r[0].metrics.power_w, None, "a 600 ms old answer is dropped");
    assert_eq!(r[0].metrics.util_gpu, Some(87.0), "sysfs still answers");

    // With the poller running every 100 ms, answers stay fresh past the same age limit.
    let mut o = opts("two-mi100", "ok");
    o.smi_period = Duration::from_millis(100);
    o.stale_after = Duration::from_millis(300);
    let mut backend = RocmBackend::open(o).expect("open");
    let mut devs = backend.take_devices();
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(sample_all(&mut devs)[0].metrics.power_w, Some(44.0));
}

#[test]
fn a_hung_tool_is_killed_at_the_timeout() {
    let path = standin_path("slow");
    let tool = smi_runner::find_tool(&path).expect("stand-in on PATH");
    let started = Instant::now();
    let err = smi_runner::query(&tool, &path, Duration::from_millis(300)).unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, SmiRunError::Timeout { .. }), "{err}");
    assert!(took < Duration::from_secs(5), "took {took:?}: not killed");
    assert!(err.to_string().contains("killed"));

    // Through the backend: open is bounded by the timeout and readings it would fill are absent.
    let mut o = opts("two-mi100", "slow");
    o.smi_timeout = Duration::from_millis(300);
    o.smi_period = Duration::from_millis(100);
    let started = Instant::now();
    let mut backend = RocmBackend::open(o).expect("sysfs alone is enough");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(backend.system().devices[0].name, "AMD GPU 0x738c");
    let mut devs = backend.take_devices();
    // The poller is now running the hung tool on its own thread; ticks do not wait for it.
    for _ in 0..10 {
        let t = Instant::now();
        let r = sample_all(&mut devs);
        assert!(
            t.elapsed() < Duration::from_millis(250),
            "a tick waited on the tool"
        );
        assert_eq!(r[0].metrics.power_w, None);
        assert_eq!(r[0].metrics.util_gpu, Some(87.0));
        std::thread::sleep(Duration::from_millis(50));
    }
    // Dropping the devices stops the poller; let its current run reach the timeout and be killed.
    drop(devs);
    std::thread::sleep(Duration::from_millis(500));
}

#[test]
fn a_failing_tool_gives_its_message_and_absent_readings() {
    let path = standin_path("failing");
    let tool = smi_runner::find_tool(&path).expect("stand-in on PATH");
    let err = smi_runner::query(&tool, &path, Duration::from_secs(5)).unwrap_err();
    match &err {
        SmiRunError::Failed { status, stderr, .. } => {
            assert!(status.contains('3'), "{status}");
            assert!(stderr.contains("Unable to get GPU use"), "{stderr}");
        }
        other => panic!("expected Failed, got {other}"),
    }
    let mut backend = RocmBackend::open(opts("two-mi100", "failing")).expect("open");
    let r = sample_all(&mut backend.take_devices());
    assert_eq!(r[0].metrics.power_w, None);
    assert_eq!(r[1].metrics.power_w, Some(143.0));
}

#[test]
fn truncated_json_is_a_parse_error_not_a_panic() {
    let path = standin_path("garbage");
    let tool = smi_runner::find_tool(&path).expect("stand-in on PATH");
    let err = smi_runner::query(&tool, &path, Duration::from_secs(5)).unwrap_err();
    assert!(matches!(err, SmiRunError::Parse { .. }), "{err}");
    let mut backend = RocmBackend::open(opts("two-mi100", "garbage")).expect("open");
    let r = sample_all(&mut backend.take_devices());
    assert_eq!(r[0].metrics.power_w, None);
}

#[test]
fn the_tool_gets_the_documented_flags() {
    let path = standin_path("echo-args");
    let tool = smi_runner::find_tool(&path).expect("stand-in on PATH");
    assert!(matches!(tool, SmiTool::RocmSmi(_)));
    let answer = smi_runner::query(&tool, &path, Duration::from_secs(5)).expect("query");
    assert_eq!(
        answer.gpus[0].name.as_deref(),
        Some(ROCM_SMI_ARGS.join(" ").as_str())
    );
}

#[test]
fn amd_smi_is_used_when_rocm_smi_is_absent() {
    // No sysfs GPUs: the two MI300X come from amd-smi alone, matched to static by index.
    let mut backend = RocmBackend::open(opts("no-amd", "amd")).expect("open");
    let sys = backend.system().clone();
    assert_eq!(sys.devices.len(), 2);
    assert_eq!(sys.devices[0].name, "AMD Instinct MI300X");
    assert_eq!(sys.devices[0].bus_id.as_deref(), Some("0000:1b:00.0"));
    assert_eq!(sys.devices[0].power_limit_watts, Some(750.0));
    assert_eq!(sys.devices[0].sm_clock_max_mhz, Some(2100));
    let r = sample_all(&mut backend.take_devices());
    assert_eq!(r[0].metrics.util_gpu, Some(97.0));
    assert_eq!(r[0].metrics.power_w, Some(618.0));
    assert_eq!(
        r[0].metrics.temp_c,
        Some(71.0),
        "junction where there is no edge sensor"
    );
    assert_eq!(r[0].metrics.mem_used_bytes, Some(150_213 * 1024 * 1024));
    assert_eq!(r[0].util_windows.len(), 1);
    assert_eq!(r[1].metrics.util_gpu, None);
    assert!(r[1].util_windows.is_empty(), "no utilization, no window");

    let mut backend = RocmBackend::open(opts("no-amd", "amd-list")).expect("open");
    assert_eq!(backend.system().devices[0].name, "AMD Radeon PRO W7700");
    let r = sample_all(&mut backend.take_devices());
    assert_eq!(r[0].metrics.util_gpu, Some(42.0));
}

#[test]
fn no_gpu_anywhere_names_both_sources() {
    let err = RocmBackend::open(opts("no-amd", "failing"))
        .err()
        .expect("no GPU");
    let msg = err.to_string();
    assert!(msg.contains("no AMD GPU"), "{msg}");
    assert!(
        err.sysfs_tried.ends_with("no-amd/class/drm"),
        "{}",
        err.sysfs_tried
    );
    assert!(err.smi_tried.starts_with("rocm-smi ("), "{}", err.smi_tried);
    assert!(err.smi_failed.contains("Unable to get GPU use"), "{msg}");
    let lines = err.tried_lines();
    assert_eq!(
        lines.lines().filter(|l| l.starts_with("  tried: ")).count(),
        2,
        "{lines}"
    );
    let empty = support::fixture("sysfs/no-amd").into_os_string();
    let err = RocmBackend::open(RocmOptions {
        path: empty,
        ..opts("no-amd", "ok")
    })
    .err()
    .expect("no GPU");
    assert!(
        err.to_string().contains("neither rocm-smi nor amd-smi"),
        "{err}"
    );
}

#[test]
fn a_card_that_vanishes_is_lost() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dev = dir.path().join("class/drm/card0/device");
    std::fs::create_dir_all(&dev).unwrap();
    std::fs::write(dev.join("vendor"), "0x1002\n").unwrap();
    std::fs::write(dev.join("gpu_busy_percent"), "50\n").unwrap();
    std::fs::write(dev.join("uevent"), "PCI_SLOT_NAME=0000:05:00.0\n").unwrap();
    let mut backend = RocmBackend::open(RocmOptions {
        sysfs_root: dir.path().to_path_buf(),
        path: OsString::new(),
        ..RocmOptions::default()
    })
    .expect("open");
    let mut devs = backend.take_devices();
    assert_eq!(devs[0].sample(1.0).unwrap().metrics.util_gpu, Some(50.0));
    assert_eq!(devs[0].sample(1.0).unwrap().metrics.power_w, None);
    std::fs::remove_dir_all(dir.path().join("class")).unwrap();
    assert!(matches!(devs[0].sample(2.0), Err(DeviceError::Lost(_))));
}

#[test]
fn amd_readings_flow_through_the_sampler_and_engine_unchanged() {
    use support::api::{Engine, EngineConfig, GpuStatus, HostProbe, Sample, Sampler};

    let mut backend = RocmBackend::open(opts("two-mi100", "ok")).expect("open");
    let mut engine = Engine::new(backend.system().clone(), EngineConfig::default());
    let mut sampler = Sampler::new(backend.take_devices(), HostProbe::disabled());
    for k in 0..8 {
        let sample = sampler.tick(2000.0 + 0.25 * k as f64, Duration::from_millis(500));
        // Every output (JSON stream, recorder) serialises the sample: it must read back the same.
        let json = serde_json::to_string(&sample).expect("serialise");
        let back: Sample = serde_json::from_str(&json).expect("read back");
        assert_eq!(back, sample);
        engine.ingest(sample);
    }
    let snap = engine.snapshot();
    assert_eq!(snap.system.backend, "rocm");
    assert_eq!(snap.gpus.len(), 2);
    let g = &snap.gpus[0];
    assert_eq!(g.info.vendor, Vendor::Amd);
    assert_eq!(g.status, GpuStatus::Ok);
    assert_eq!(g.current.util_gpu, Some(87.0));
    assert_eq!(g.current.power_w, Some(44.0));
    // One driver-style utilization window per tick reaches the history the detector reads.
    let windows: Vec<f64> = g.history.util.iter().map(|w| w.util).collect();
    assert_eq!(windows, vec![87.0; 8]);
    assert_eq!(g.history.ticks.len(), 8);
    assert!(g.history.ticks.iter().all(|t| t.ok));
}

#[test]
fn bus_id_from_the_device_link_and_cards_without_one_are_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    // card0: no uevent, but its `device` is a link to the PCI device directory, as in real sysfs.
    let pci = dir.path().join("devices/pci0000:00/0000:0A:00.0");
    std::fs::create_dir_all(&pci).unwrap();
    std::fs::write(pci.join("vendor"), "0x1002\n").unwrap();
    std::fs::write(pci.join("gpu_busy_percent"), "33\n").unwrap();
    let card0 = dir.path().join("class/drm/card0");
    std::fs::create_dir_all(&card0).unwrap();
    std::os::unix::fs::symlink(&pci, card0.join("device")).unwrap();
    // card1: a plain directory and no uevent: no bus id at all.
    let dev1 = dir.path().join("class/drm/card1/device");
    std::fs::create_dir_all(&dev1).unwrap();
    std::fs::write(dev1.join("vendor"), "0x1002\n").unwrap();
    std::fs::write(dev1.join("gpu_busy_percent"), "7\n").unwrap();

    let mut backend = RocmBackend::open(RocmOptions {
        sysfs_root: dir.path().to_path_buf(),
        path: standin_path("ok"),
        ..RocmOptions::default()
    })
    .expect("open");
    let sys = backend.system().clone();
    assert_eq!(
        sys.devices.len(),
        4,
        "two sysfs cards + two rocm-smi GPUs not in sysfs"
    );
    assert_eq!(sys.devices[0].bus_id.as_deref(), Some("0000:0a:00.0"));
    assert_eq!(sys.devices[1].bus_id, None);
    let r = sample_all(&mut backend.take_devices());
    assert_eq!(r[0].metrics.util_gpu, Some(33.0));
    assert_eq!(r[1].metrics.util_gpu, Some(7.0));
    assert_eq!(
        r[1].metrics.power_w, None,
        "no bus id, no tool answer to match"
    );
    // The rocm-smi-only GPUs (bus 83 and a3) carry the tool's readings.
    assert_eq!(r[2].metrics.power_w, Some(36.0));
    assert_eq!(r[3].metrics.power_w, Some(44.0));
}
