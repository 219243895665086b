//! A GPU in MIG mode through the stand-in libnvidia-ml.so.1 (`FAKE_NVML_MODE=mig`,
//! tests/fixtures/nvml/fake_nvml.c): its instances with their IDs, profiles, memory and
//! processes, GPM activity per GPU instance, and no utilization. MIG mode is only ever read.

mod support;

use std::process::Command;
use support::api::{clock, Backend, NvmlBackend};
use support::fake_nvml;

/// Runs `mig_through_the_fake_driver` in a child process whose loader path holds the fake library.
#[test]
fn the_backend_reads_a_fake_gpu_in_mig_mode() {
    let dir = tempfile::tempdir().unwrap();
    fake_nvml::build(dir.path());
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "mig_through_the_fake_driver",
            "--ignored",
            "--nocapture",
        ])
        .env("LD_LIBRARY_PATH", dir.path())
        .env("FAKE_NVML_MODE", "mig")
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
#[ignore = "run by the_backend_reads_a_fake_gpu_in_mig_mode with the fake library on the loader path"]
fn mig_through_the_fake_driver() {
    let mut backend = NvmlBackend::open().unwrap();
    assert!(backend.system().devices[0].gpm_supported);
    let mut devices = backend.take_devices();
    let dev = &mut devices[0];
    let first = dev.sample(clock::now()).unwrap();
    assert_eq!(first.metrics.util_gpu, None, "no utilization in MIG mode");
    let ids: Vec<(u32, u32, Option<&str>)> = first
        .mig
        .iter()
        .map(|m| {
            (
                m.gpu_instance_id,
                m.compute_instance_id,
                m.profile.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        ids,
        [
            (1, 0, Some("3g.71gb")),
            (2, 0, Some("2g.35gb")),
            (3, 0, Some("1g.18gb"))
        ]
    );
    let m = &first.mig[0];
    assert_eq!(m.uuid.as_deref(), Some("MIG-fake-0001"));
    assert_eq!(m.memory_total_bytes, Some(71 << 30));
    assert_eq!(m.memory_used_bytes, Some((71 << 30) / 2));
    assert_eq!(m.pids, [7001]);
    // GPM needs two samples: nothing on the first read.
    assert_eq!(m.sm_active, None);
    let p: Vec<(u32, Option<u32>)> = first
        .processes
        .iter()
        .map(|p| (p.pid, p.gpu_instance_id))
        .collect();
    assert_eq!(p, [(7001, Some(1)), (7002, Some(2)), (7003, Some(3))]);
    // A second later, the GPM readings of each GPU instance.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let later = dev.sample(clock::now()).unwrap();
    let sm: Vec<Option<f64>> = later.mig.iter().map(|m| m.sm_active).collect();
    assert_eq!(sm, [Some(80.0), Some(50.0), Some(0.0)]);
    assert_eq!(later.mig[0].tensor_active, Some(36.0));
    assert_eq!(later.mig[2].dram_active, Some(1.0));
}
