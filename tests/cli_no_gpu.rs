//! Without an NVIDIA driver, `gpulse --backend nvml` exits 2 with one clear message before it
//! touches the terminal.

mod support;

use std::process::Command;

use assert_cmd::prelude::*;
use predicates::prelude::*;
use support::cli::BIN;

fn driver_loaded() -> bool {
    std::path::Path::new("/proc/driver/nvidia/version").exists()
}

#[test]
fn nvml_without_a_driver_exits_2_and_points_to_the_demo() {
    if driver_loaded() {
        // On a GPU machine NVML opens; this test is about machines without one (CI has none).
        assert!(
            std::env::var_os("CI").is_none(),
            "CI machines have no NVIDIA driver"
        );
        return;
    }
    let assert = Command::new(BIN)
        .args(["--backend", "nvml"])
        .env(
            "XDG_CONFIG_HOME",
            std::env::temp_dir().join("gpulse-no-config"),
        )
        .assert()
        .code(2)
        .stderr(predicate::str::contains("gpulse demo"))
        .stderr(predicate::str::contains("libnvidia-ml.so.1"))
        .stderr(predicate::str::contains("panicked").not());
    let out = assert.get_output();
    assert!(
        !out.stdout.contains(&0x1b) && !out.stderr.contains(&0x1b),
        "no terminal escape sequences: stdout {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(out.stdout.is_empty(), "nothing on stdout");
}
