//! `gpulse doctor` on NVML facts, from a stand-in libnvidia-ml.so.1 (tests/fixtures/nvml/fake_nvml.c)
//! loaded through the real dlopen: where the library came from, versions, and the GPU's settings.

mod support;

use std::path::Path;

use predicates::prelude::*;
use support::fake_nvml;

fn doctor(dir: &Path, mode: &str, args: &[&str]) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("gpulse").unwrap();
    cmd.env_clear()
        .env("PATH", "/nonexistent")
        .env("LD_LIBRARY_PATH", dir)
        .env("FAKE_NVML_MODE", mode)
        .args(["--backend", "nvml", "doctor"])
        .args(args)
        .timeout(std::time::Duration::from_secs(30));
    cmd
}

#[test]
fn doctor_reports_the_loaded_library_and_the_gpus_settings() {
    let dir = tempfile::tempdir().unwrap();
    fake_nvml::build(dir.path());
    let lib = dir.path().join("libnvidia-ml.so.1");
    doctor(dir.path(), "ok", &[])
        .assert()
        .code(0)
        .stdout(predicate::str::contains(format!(
            "[ok]   ✓ driver library          libnvidia-ml loaded from {}",
            lib.display()
        )))
        .stdout(predicate::str::contains(
            "driver 580.159.04, NVML 13.580.159.04",
        ))
        .stdout(predicate::str::contains(
            "the driver supports CUDA up to 13.0",
        ))
        .stdout(predicate::str::contains("[warn] ⚠ nvidia-smi"))
        .stdout(predicate::str::contains("[warn] ⚠ GPU 0 persistence mode"))
        .stdout(predicate::str::contains("sudo nvidia-smi -pm 1"))
        .stdout(predicate::str::contains("500 W, below the default 700 W"))
        .stdout(predicate::str::contains(
            "Gen1 x16 of Gen5 x16 while idle (utilization 0%): links train down at idle",
        ))
        .stdout(predicate::str::contains("45 °C (slowdown at 87 °C)"))
        .stdout(predicate::str::contains("[?]    ? GPU 0 throttling"))
        .stdout(predicate::str::contains("[n/a]  - frameworks"));
}

#[test]
fn doctor_without_a_driver_fails_on_the_driver_and_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    fake_nvml::build(dir.path());
    let out = doctor(dir.path(), "driver_not_loaded", &["--json"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let first = &v["checks"][0];
    assert_eq!(first["name"], "driver library");
    assert_eq!(first["status"], "fail");
    assert!(first["found"]
        .as_str()
        .unwrap()
        .contains("kernel driver is not loaded"));
    assert!(first["advice"]
        .as_str()
        .unwrap()
        .contains("install the NVIDIA driver"));
    let names: Vec<&str> = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(!names.iter().any(|n| n.starts_with("GPU ")), "{names:?}");
    assert!(
        names.contains(&"/dev/shm"),
        "host checks still run: {names:?}"
    );
}

#[test]
fn doctor_checks_health_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    fake_nvml::build(dir.path());
    let out = doctor(dir.path(), "ok", &[])
        .assert()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    for line in [
        "[ok]   ✓ GPU 0 ECC",
        "on; 0 corrected error(s) since the driver loaded (0 over the GPU's life)",
        "[ok]   ✓ GPU 0 link errors",
        "0 PCIe replay(s) since the driver loaded",
        "[ok]   ✓ GPU 0 throttle time",
        "no slowdown counted since the driver loaded; power cap",
        "[?]    ? GPU 0 XIDs",
        "sudo dmesg -T | grep -i xid",
    ] {
        assert!(text.contains(line), "{line:?} missing:\n{text}");
    }

    let out = doctor(dir.path(), "faulty", &[])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    for line in [
        "[warn] ⚠ GPU 0 link errors",
        "3 PCIe replay(s) since the driver loaded; NVLink 4/4 up, 0 errors",
        "reseat the card",
        "[warn] ⚠ GPU 0 throttle time",
        "since the driver loaded: HW thermal",
        "[warn] ⚠ GPU 0 memory errors",
        "a row remap is pending",
    ] {
        assert!(text.contains(line), "{line:?} missing:\n{text}");
    }
}
