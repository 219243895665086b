//! On a machine without the NVIDIA driver (CI), asking for NVML exits 2 with one clear message.

use assert_cmd::Command;
use predicates::prelude::*;

fn without_driver() -> bool {
    // The test is about the machine without a GPU; on a GPU machine it has nothing to prove.
    !std::path::Path::new("/dev/nvidiactl").exists()
}

#[test]
fn backend_nvml_without_a_driver_exits_2_with_one_clear_message() {
    if !without_driver() {
        eprintln!("an NVIDIA device node exists: this test is for machines without one");
        return;
    }
    for backend in ["nvml", "auto"] {
        let out = Command::cargo_bin("gpulse")
            .unwrap()
            .args(["--backend", backend])
            .env("RUST_BACKTRACE", "1")
            .env_remove("GPULSE_BACKEND")
            .timeout(std::time::Duration::from_secs(20))
            .assert()
            .code(2)
            .stdout(predicate::str::is_empty())
            .stderr(predicate::str::contains("GPU could be opened"))
            .stderr(predicate::str::contains("libnvidia-ml.so.1"))
            .stderr(predicate::str::contains("gpulse demo"))
            .stderr(predicate::str::contains("panicked").not())
            .stderr(predicate::str::contains("stack backtrace").not());
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert!(
            stderr.contains("libnvidia-ml.so.1 could not be loaded"),
            "says what failed: {stderr}"
        );
        assert!(stderr.lines().count() <= 8, "one short message: {stderr}");
    }
}
