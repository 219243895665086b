//! `--readonly` reaches the settings a front end builds its `Signaller` from, and turns signals off.

mod support;

use clap::Parser;
use std::path::Path;
use support::api::{Cli, ProcessIdentity, Settings, SignalError, Signaller};

fn settings(args: &[&str]) -> Settings {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = dir.path().join("config.toml");
    std::fs::write(&cfg, "").expect("empty config");
    let mut argv = vec!["gpulse", "--config", cfg.to_str().expect("utf-8 path")];
    argv.extend_from_slice(args);
    let cli = Cli::try_parse_from(argv).expect("parses");
    Settings::resolve(&cli.global.overrides(), true).expect("settings")
}

#[test]
fn readonly_turns_signals_off() {
    let ro = settings(&["--readonly", "demo"]);
    assert!(ro.readonly);
    let s = Signaller::new("nvml", ro.readonly);
    assert!(!s.enabled());
    let me = ProcessIdentity::current(Path::new("/proc"), std::process::id()).expect("own stat");
    assert_eq!(s.can_signal(me), Err(SignalError::ReadOnly));
    // Global: also accepted after the subcommand.
    assert!(settings(&["demo", "--readonly"]).readonly);
    assert!(!settings(&["demo"]).readonly);
}
