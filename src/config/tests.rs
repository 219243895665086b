//! Tests of reading, checking and resolving the config file.
use super::*;

fn write(body: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("config.toml");
    std::fs::write(&p, body).expect("write");
    (dir, p)
}

#[test]
fn unknown_key_is_an_error_naming_it() {
    let (_d, p) = write("intervall = \"1s\"\n");
    let e = load_file(&p).expect_err("unknown key").to_string();
    assert!(e.contains("intervall"), "{e}");
    assert!(e.contains("config.toml"), "{e}");
}

#[test]
fn bad_value_names_key_value_and_what_is_valid() {
    let (_d, p) = write("interval = \"20ms\"\n");
    let e = load_file(&p).expect_err("bad value").to_string();
    assert!(
        e.contains("'interval'") && e.contains("'20ms'") && e.contains("100ms to 10s"),
        "{e}"
    );
}

#[test]
fn detector_thresholds_are_checked() {
    let (_d, p) = write("[detector]\ndip_enter = 0.9\n");
    let e = load_file(&p).expect_err("out of range").to_string();
    assert!(
        e.contains("'detector.dip_enter'") && e.contains("'0.9'"),
        "{e}"
    );
    let (_d, p) = write("[detector]\nwindow_s = 120.0\nmin_cycles = 3\n");
    let f = load_file(&p).expect("valid");
    assert_eq!(f.detector.map(|d| d.min_cycles), Some(3));
    let (_d, p) = write("[detector]\nwindow = 120.0\n");
    assert!(load_file(&p).is_err());
}

#[test]
fn ledger_prices_are_read_and_checked() {
    let (_d, p) =
        write("[ledger]\nprice_per_gpu_hour = 2.5\nprice_per_kwh = 0.3\ncurrency = \"EUR\"\n");
    let args = Overrides {
        config: Some(p),
        ..Overrides::default()
    };
    let s = Settings::resolve(&args, false).expect("valid");
    assert_eq!(s.prices.price_per_gpu_hour, Some(2.5));
    assert_eq!(s.prices.currency.as_deref(), Some("EUR"));
    for (body, key) in [
        ("[ledger]\nprice_per_kwh = -1.0\n", "'ledger.price_per_kwh'"),
        ("[ledger]\ncurrency = \"\"\n", "'ledger.currency'"),
    ] {
        let (_d, p) = write(body);
        let e = load_file(&p).expect_err("invalid").to_string();
        assert!(e.contains(key), "{e}");
    }
    let (_d, p) = write("[ledger]\nprice = 1.0\n");
    assert!(load_file(&p)
        .expect_err("unknown key")
        .to_string()
        .contains("price"));
}

#[test]
fn a_toml_error_keeps_its_report_lines_and_the_caret() {
    let (_d, p) = write("interval = \"1s\"\nretention = 5m\n");
    let e = load_file(&p).expect_err("not TOML").to_string();
    let lines: Vec<&str> = e.lines().collect();
    assert!(lines.len() >= 4, "{e}");
    assert!(lines[0].ends_with("config.toml':"), "{e}");
    let caret = lines
        .iter()
        .position(|l| l.contains('^'))
        .expect("caret line");
    // The caret stands under the bad value on the line above it.
    let col = lines[caret].find('^').expect("caret");
    assert_eq!(lines[caret - 1].get(col..col + 2), Some("5m"), "{e}");
}

#[test]
fn a_named_file_that_does_not_exist_is_an_error_that_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = Overrides {
        config: Some(dir.path().join("nope.toml")),
        ..Overrides::default()
    };
    let e = Settings::resolve(&args, false)
        .expect_err("missing")
        .to_string();
    assert!(e.contains("nope.toml' does not exist"), "{e}");
    assert!(!e.contains("os error"), "{e}");
}

#[test]
fn window_and_retention_follow_one_rule_from_either_place() {
    // The command line's window against the default retention.
    let (_empty, empty) = write("");
    let args = Overrides {
        window: Some(7200.0),
        config: Some(empty),
        ..Overrides::default()
    };
    let e = Settings::resolve(&args, false)
        .expect_err("window > retention")
        .to_string();
    assert!(
        e.contains("cannot be longer than the history kept (retention 10m)"),
        "{e}"
    );
    assert!(
        e.contains("window from --window, the retention from the default"),
        "{e}"
    );
    // The file's window against the command line's retention.
    let (_d, p) = write("window = \"5m\"\n");
    let args = Overrides {
        retention: Some(120.0),
        config: Some(p),
        ..Overrides::default()
    };
    let e = Settings::resolve(&args, false)
        .expect_err("window > retention")
        .to_string();
    assert!(
        e.contains("'window' in the config file, the retention from --retention"),
        "{e}"
    );
    // The file alone.
    let (_d, p) = write("window = \"2h\"\nretention = \"1h\"\n");
    let e = load_file(&p).expect_err("window > retention").to_string();
    assert!(
        e.contains("key 'window' = '2h': the chart window (2h) cannot be longer"),
        "{e}"
    );
}

#[test]
fn command_line_over_file_over_default() {
    let (_d, p) = write("interval = \"1s\"\nretention = \"5m\"\n");
    let mut args = Overrides {
        config: Some(p),
        color: Some(ColorChoice::Never),
        ..Overrides::default()
    };
    let s = Settings::resolve(&args, false).expect("valid");
    assert_eq!(s.engine.interval_s, 1.0);
    assert_eq!(s.engine.retention_s, 300.0);
    assert_eq!(s.window_s, 60.0);
    assert_eq!(
        s.exporter_listen.to_string(),
        DEFAULT_LISTEN,
        "loopback by default"
    );
    assert!(s.exporter_listen.ip().is_loopback());
    args.interval = Some(0.5);
    let s = Settings::resolve(&args, true).expect("valid");
    assert_eq!(s.engine.interval_s, 0.5);
    assert_eq!(s.backend, BackendKind::Sim);
}
