//! `gpulse --backend rocm` on a machine without an AMD GPU, with Debian's real `rocm-smi` (CI
//! installs the `rocm-smi` package) and with stand-ins.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;
use support::api::{find_in_path, parse_rocm_smi, run_with_timeout, sysfs};

const SYSTEM_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The real rocm-smi, or `None` outside CI when it is not installed (CI must have it).
fn real_rocm_smi() -> Option<PathBuf> {
    let found = find_in_path("rocm-smi", std::ffi::OsStr::new(SYSTEM_PATH));
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "rocm-smi is not installed; .ci/run installs the Debian package `rocm-smi`"
        );
        eprintln!("skipping: rocm-smi is not installed (apt-get install rocm-smi)");
    }
    found
}

fn no_amd_gpu_here() -> bool {
    sysfs::find_cards(Path::new("/sys")).is_empty()
}

#[test]
fn real_rocm_smi_runs_and_reports_no_gpu_on_this_machine() {
    let Some(tool) = real_rocm_smi() else { return };
    if !no_amd_gpu_here() {
        eprintln!("skipping: this machine has an AMD GPU");
        return;
    }
    let out = run_with_timeout(
        &tool,
        &["--showuse", "--json"],
        std::ffi::OsStr::new(SYSTEM_PATH),
        Duration::from_secs(60),
    );
    // Without the amdgpu driver, rocm-smi says so on stderr and lists no GPU (5.2.3 exits 0
    // with nothing on stdout; other releases exit non-zero).
    match out {
        Ok(o) => {
            let gpus = parse_rocm_smi(&o.stdout);
            assert!(
                gpus.as_ref().map_or(true, |g| g.is_empty()),
                "rocm-smi listed GPUs on a machine without one: {:?}",
                o.stdout
            );
            assert!(!o.stderr.trim().is_empty() || o.stdout.trim().is_empty());
        }
        Err(e) => assert!(!e.to_string().contains("killed"), "{e}"),
    }
}

#[test]
fn backend_rocm_with_real_rocm_smi_exits_2_and_says_why() {
    let Some(_) = real_rocm_smi() else { return };
    if !no_amd_gpu_here() {
        return;
    }
    let out = Command::cargo_bin("gpulse")
        .unwrap()
        .args(["--backend", "rocm"])
        .env("PATH", SYSTEM_PATH)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(stderr.contains("no AMD GPU"), "{stderr}");
    assert!(stderr.contains("class/drm"), "{stderr}");
    assert!(stderr.contains("rocm-smi"), "{stderr}");
    assert!(stderr.contains("gpulse demo"), "{stderr}");
    assert!(out.stdout.is_empty(), "stdout carries only data");
}

#[test]
fn backend_rocm_with_a_failing_standin_quotes_its_error() {
    if !no_amd_gpu_here() {
        return;
    }
    let bin = support::fixture("rocm/bin/failing");
    let out = Command::cargo_bin("gpulse")
        .unwrap()
        .args(["--backend", "rocm"])
        .env("PATH", bin)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(stderr.contains("Unable to get GPU use"), "{stderr}");
    assert!(stderr.contains("gpulse demo"), "{stderr}");
}

#[test]
fn auto_without_any_gpu_names_nvml_the_amdgpu_driver_and_rocm_smi() {
    if !no_amd_gpu_here() {
        return;
    }
    let out = Command::cargo_bin("gpulse")
        .unwrap()
        .env_remove("GPULSE_BACKEND")
        .env("PATH", SYSTEM_PATH)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() != Some(2) {
        // An NVIDIA driver answered: nothing to check here.
        return;
    }
    assert!(stderr.contains("NVML (libnvidia-ml.so.1)"), "{stderr}");
    assert!(stderr.contains("amdgpu sysfs"), "{stderr}");
    assert!(
        stderr.contains("rocm-smi"),
        "the SMI tool is named whether or not it is installed: {stderr}"
    );
    assert!(stderr.contains("gpulse demo"), "{stderr}");
}
