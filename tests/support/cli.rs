//! The real binary as a user runs it, kept away from the configuration of the machine running
//! the tests.

use std::path::Path;
use std::process::Command;

pub const BIN: &str = env!("CARGO_BIN_EXE_gpulse");

/// `gpulse` with no config file and no backend or Prometheus address from the environment.
pub fn gpulse() -> Command {
    let mut c = Command::new(BIN);
    c.env_remove("GPULSE_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent/gpulse-test-config-home")
        .env_remove("GPULSE_BACKEND")
        .env_remove("GPULSE_PROMETHEUS")
        .env("RUST_LOG", "warn");
    c
}

/// [`gpulse`] under `assert_cmd`, in the time zone `tz`.
pub fn gpulse_in(tz: &str) -> assert_cmd::Command {
    let mut c = assert_cmd::Command::from_std(gpulse());
    c.env("TZ", tz);
    c
}

/// `gpulse analyze --json FILES` in the time zone `tz`: the one JSON document it prints.
pub fn analyze_json(files: &[&Path], tz: &str) -> serde_json::Value {
    let out = gpulse_in(tz)
        .arg("analyze")
        .arg("--json")
        .args(files)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).expect("one JSON document")
}
