//! `gpulse doctor` end to end: the real binary on simulated GPUs, with a stand-in `python3`
//! (tests/fixtures/doctor/bin/python3) answering the framework probes from fixture files.

mod support;

use std::path::PathBuf;

use assert_cmd::Command;
use predicates::prelude::*;

fn fixtures() -> PathBuf {
    support::fixture("doctor")
}

/// `gpulse --backend sim --gpus 2 doctor ARGS` with the fake python3 answering from `answers`.
fn doctor(answers: &str, args: &[&str]) -> Command {
    let mut cmd = Command::cargo_bin("gpulse").unwrap();
    cmd.env_clear()
        .env("PATH", fixtures().join("bin"))
        .env("GPULSE_FAKE_PROBES", fixtures().join(answers))
        .env("HOME", std::env::temp_dir())
        .args(["--backend", "sim", "--gpus", "2", "--seed", "1", "doctor"])
        .args(args)
        .timeout(std::time::Duration::from_secs(60));
    cmd
}

#[test]
fn healthy_frameworks_on_simulated_gpus_exit_0() {
    doctor("healthy", &[])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("[ok]   ✓ PyTorch"))
        .stdout(predicate::str::contains(
            "2.8.0, CUDA 12.8, sees 2 GPU(s): NVIDIA H200, NVIDIA H200",
        ))
        .stdout(predicate::str::contains("[ok]   ✓ JAX"))
        .stdout(
            predicate::str::contains("TensorFlow")
                .and(predicate::str::contains("not installed (skipped)")),
        )
        .stdout(predicate::str::contains(
            "simulated backend: no NVIDIA driver used",
        ))
        .stdout(predicate::str::contains("GPU 1 PCIe link"))
        .stdout(predicate::str::contains("[FAIL]").not());
}

#[test]
fn a_cpu_only_torch_fails_and_says_how_to_install_a_cuda_build() {
    doctor("cpu_only", &[])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("[FAIL] ✗ PyTorch"))
        .stdout(predicate::str::contains("2.5.1+cpu is a CPU-only build"))
        .stdout(predicate::str::contains("CUDA 13.0 or older"));
}

#[test]
fn a_torch_built_for_a_newer_cuda_than_the_driver_fails() {
    doctor("too_new", &[])
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "built for CUDA 14.2, newer than the driver supports (CUDA 13.0)",
        ))
        .stdout(predicate::str::contains("update the NVIDIA driver"));
}

#[test]
fn cuda_visible_devices_hiding_the_gpus_is_named_as_the_cause() {
    let out = doctor("hidden", &[])
        .env("CUDA_VISIBLE_DEVICES", "")
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("[FAIL] ✗ CUDA_VISIBLE_DEVICES"), "{text}");
    assert!(text.contains("'' hides all 2 GPU(s)"), "{text}");
    assert!(
        text.contains("CUDA not available although 2 GPU(s) are present"),
        "{text}"
    );
    assert!(text.contains("CUDA_VISIBLE_DEVICES is ''"), "{text}");

    doctor("healthy", &[])
        .env("CUDA_VISIBLE_DEVICES", "1")
        .assert()
        .code(0)
        .stdout(predicate::str::contains("[warn] ⚠ CUDA_VISIBLE_DEVICES"))
        .stdout(predicate::str::contains("'1' shows 1 of 2 GPU(s)"));
}

#[test]
fn json_lists_every_check_with_a_known_status_and_matches_the_exit_code() {
    for (answers, code) in [("healthy", 0), ("cpu_only", 1)] {
        let out = doctor(answers, &["--json"])
            .assert()
            .code(code)
            .get_output()
            .stdout
            .clone();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let checks = v["checks"].as_array().unwrap();
        assert!(
            checks.len() > 20,
            "driver, frameworks, 2 GPUs and host: {}",
            checks.len()
        );
        for c in checks {
            for key in ["name", "status", "found", "advice"] {
                assert!(c[key].is_string(), "{key} in {c}");
            }
            let s = c["status"].as_str().unwrap();
            assert!(
                ["ok", "warn", "fail", "not_applicable", "unknown"].contains(&s),
                "{s}"
            );
        }
        let fails = checks.iter().filter(|c| c["status"] == "fail").count();
        assert_eq!(fails > 0, code == 1);
        let names: Vec<&str> = checks.iter().map(|c| c["name"].as_str().unwrap()).collect();
        for n in [
            "driver library",
            "CUDA (driver)",
            "PyTorch",
            "GPU 0 persistence mode",
            "GPU 1 temperature",
            "/dev/shm",
            "load average",
        ] {
            assert!(names.contains(&n), "{n} missing from {names:?}");
        }
    }
}

#[test]
fn a_probe_that_hangs_is_reported_as_could_not_check_after_the_timeout() {
    let start = std::time::Instant::now();
    doctor("slow", &["--probe-timeout", "1s"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("[?]    ? TensorFlow"))
        .stdout(predicate::str::contains("did not answer within 1 s"))
        .stdout(predicate::str::contains("[ok]   ✓ PyTorch"));
    assert!(
        start.elapsed().as_secs() < 20,
        "the hung probe was killed at its timeout"
    );
}

#[test]
fn without_python_the_framework_checks_are_not_applicable() {
    let empty = tempfile::tempdir().unwrap();
    doctor("healthy", &[])
        .env("PATH", empty.path())
        .assert()
        .code(0)
        .stdout(predicate::str::contains("[n/a]  - frameworks"))
        .stdout(predicate::str::contains("python3 is not on PATH"));
}

#[test]
fn under_load_samples_for_the_window_and_says_so() {
    doctor("healthy", &["--under-load", "1s"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("GPU 0 throttling"))
        .stdout(predicate::str::contains("during 1 s under load"));
}

#[test]
fn a_libcuda_on_ld_library_path_is_flagged_as_shadowing_the_driver() {
    let dir = fixtures().join("shadow_libcuda");
    doctor("healthy", &[])
        .env("LD_LIBRARY_PATH", &dir)
        .assert()
        .code(0)
        .stdout(predicate::str::contains("[warn] ⚠ LD_LIBRARY_PATH"))
        .stdout(predicate::str::contains(format!(
            "libcuda found in {}",
            dir.display()
        )))
        .stdout(predicate::str::contains(
            "remove that directory from LD_LIBRARY_PATH",
        ));
}
