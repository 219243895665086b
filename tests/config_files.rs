//! Config files through the real binary: every file in tests/invalid_configs/ is refused with a
//! message naming the key and the value (or the TOML parser's report, caret and all) and exit
//! status 2, before anything starts; valid files,
//! `config init|check|show|path`, and command line over file over defaults.

mod support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::cli::gpulse;

fn invalid_configs() -> Vec<PathBuf> {
    let dir = support::repo("tests/invalid_configs");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/invalid_configs")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

/// The `# expect: TEXT` line each invalid file starts with.
fn expectation(path: &Path) -> String {
    let text = std::fs::read_to_string(path).expect("read");
    text.lines()
        .next()
        .and_then(|l| l.strip_prefix("# expect: "))
        .unwrap_or_else(|| panic!("{} lacks a '# expect: ' first line", path.display()))
        .to_string()
}

#[test]
fn every_invalid_config_is_refused_with_a_clear_message_and_status_2() {
    let files = invalid_configs();
    assert!(files.len() >= 15, "{files:?}");
    for path in files {
        let expect = expectation(&path);
        for args in [
            vec!["--backend", "sim", "snapshot"],
            vec!["--backend", "sim"],
            vec!["config", "check"],
        ] {
            let out = gpulse()
                .arg("--config")
                .arg(&path)
                .args(&args)
                .output()
                .expect("run gpulse");
            let stderr = String::from_utf8_lossy(&out.stderr);
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            assert_eq!(out.status.code(), Some(2), "{name} {args:?}: {stderr}");
            assert!(out.stdout.is_empty(), "{name} {args:?}: nothing on stdout");
            assert!(
                stderr.contains(name),
                "{name} {args:?}: names the file: {stderr}"
            );
            assert!(
                stderr.contains(&expect),
                "{name} {args:?}: expected {expect:?} in {stderr}"
            );
            // One line, or the TOML parser's report whole: its caret under the fault.
            let lines: Vec<&str> = stderr.lines().collect();
            if lines.len() > 1 {
                assert!(lines[1].starts_with("TOML parse error"), "{name}: {stderr}");
                assert!(
                    lines
                        .iter()
                        .any(|l| l.trim_start().starts_with("| ") && l.contains('^')),
                    "{name}: {stderr}"
                );
            }
            assert!(
                !stderr.chars().any(|c| c.is_control() && c != '\n'),
                "{name}: the file's bytes are escaped: {stderr:?}"
            );
        }
    }
}

#[test]
fn config_check_of_a_named_file_that_does_not_exist_is_an_error_that_says_so() {
    let out = gpulse()
        .args(["--config", "/nonexistent.toml", "config", "check"])
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("config file '/nonexistent.toml' does not exist"),
        "{stderr}"
    );
    assert!(!stderr.contains("defaults apply"), "{stderr}");
    // The default file may be absent: then the defaults apply.
    let out = gpulse().args(["config", "check"]).output().expect("run");
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the defaults apply"));
}

#[test]
fn window_and_retention_follow_one_rule_on_the_command_line_and_in_the_file() {
    let run = |args: &[&str]| {
        let out = gpulse().args(args).output().expect("run");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for args in [
        &[
            "--backend",
            "sim",
            "--retention",
            "1e300",
            "--window",
            "1e300",
            "snapshot",
        ][..],
        &["--retention", "7h", "config", "show"][..],
    ] {
        let (code, err) = run(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains("use 1m to 6h"), "{args:?}: {err}");
    }
    let (code, err) = run(&["--window", "2h", "config", "show"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(
            "the chart window (2h) cannot be longer than the history kept (retention 10m)"
        ),
        "{err}"
    );
    let (code, err) = run(&["--window", "2h", "--retention", "2h", "config", "show"]);
    assert_eq!(code, Some(0), "{err}");
    // A duration that would overflow a deadline is refused, not a panic.
    let (code, err) = run(&[
        "--backend",
        "sim",
        "record",
        "/nonexistent/x.ndjson",
        "--duration",
        "1e300",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("longer than a year") && !err.contains("panicked"),
        "{err}"
    );
}

#[test]
fn a_missing_explicit_config_file_is_an_error() {
    let out = gpulse()
        .args([
            "--config",
            "/nonexistent/gpulse.toml",
            "--backend",
            "sim",
            "snapshot",
        ])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/gpulse.toml"));
}

#[test]
fn init_writes_a_commented_file_that_checks_and_refuses_to_overwrite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("sub/config.toml");
    let run = |args: &[&str]| {
        gpulse()
            .env("GPULSE_CONFIG", &path)
            .args(args)
            .output()
            .expect("run")
    };
    let out = run(&["config", "path"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        path.to_string_lossy()
    );
    assert!(run(&["config", "init"]).status.success());
    let text = std::fs::read_to_string(&path).expect("written");
    assert!(text.contains("# interval = \"250ms\"") && text.contains("# [detector]"));
    let again = run(&["config", "init"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("--force"));
    assert!(run(&["config", "init", "--force"]).status.success());
    let check = run(&["config", "check"]);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(String::from_utf8_lossy(&check.stdout).contains("ok"));
}

#[test]
fn command_line_over_file_over_defaults() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("config.toml");
    std::fs::write(
        &path,
        "interval = \"1s\"\ntheme = \"light\"\ngpus = [1, 3]\n[exporter]\nlisten = \"127.0.0.1:9500\"\n",
    )
    .expect("write");
    let show = |extra: &[&str]| {
        let out = gpulse()
            .arg("--config")
            .arg(&path)
            .args(extra)
            .args(["config", "show"])
            .output()
            .expect("run");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: toml::Value = toml::from_str(&String::from_utf8_lossy(&out.stdout)).expect("TOML");
        v
    };
    let from_file = show(&[]);
    assert_eq!(from_file["interval"].as_str(), Some("1s"));
    assert_eq!(from_file["theme"].as_str(), Some("light"));
    assert_eq!(from_file["retention"].as_str(), Some("10m"), "default");
    assert_eq!(
        from_file["exporter"]["listen"].as_str(),
        Some("127.0.0.1:9500")
    );
    let overridden = show(&["--interval", "500ms"]);
    assert_eq!(overridden["interval"].as_str(), Some("500ms"));

    // The file's GPU list filters what the outputs show.
    let out = gpulse()
        .arg("--config")
        .arg(&path)
        .args([
            "--backend",
            "sim",
            "--gpus",
            "4",
            "--interval",
            "100ms",
            "snapshot",
            "--json",
        ])
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let shown: Vec<u64> = doc["gpus"]
        .as_array()
        .expect("gpus")
        .iter()
        .filter_map(|g| g["index"].as_u64())
        .collect();
    assert_eq!(shown, vec![1, 3]);
}

#[test]
fn a_bad_command_line_value_is_a_usage_error_naming_it() {
    let out = gpulse()
        .args(["--backend", "sim", "serve", "--listen", "nowhere"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("'nowhere'"));
}

/// `config check` with a config file in `dir` holding `body`: (exit status, stderr).
fn check_in(dir: &Path, body: &str) -> (Option<i32>, String) {
    let config = dir.join("config.toml");
    std::fs::write(&config, body).expect("write config");
    let out = gpulse()
        .arg("--config")
        .arg(&config)
        .args(["config", "check"])
        .output()
        .expect("run gpulse");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn config_check_reads_every_file_the_exporter_and_fleet_keys_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let web = |text: &str| std::fs::write(d.join("web.yml"), text).expect("write web config");
    let exporter = "[exporter]\nweb_config_file = \"web.yml\"\n";

    web("basic_auth_users:\n  bob: not-a-hash\n");
    let (code, err) = check_in(d, exporter);
    assert_eq!(code, Some(2), "{err}");
    for part in [
        "config.toml",
        "'exporter.web_config_file'",
        "web.yml",
        "'basic_auth_users.bob'",
        "not a bcrypt hash",
    ] {
        assert!(err.contains(part), "{part}: {err}");
    }
    assert!(
        !err.contains("not-a-hash"),
        "the hash is not repeated whole: {err}"
    );

    web("tls_server_config:\n  cert_file: missing.crt\n  key_file: missing.key\n");
    let (code, err) = check_in(d, exporter);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("'tls_server_config.cert_file'") && err.contains("missing.crt"),
        "{err}"
    );

    web("tls_server_config:\n  certfile: a.crt\n");
    let (code, err) = check_in(d, exporter);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("certfile") && err.contains("web.yml"), "{err}");

    let hash = bcrypt::hash("pw", 4).expect("hash");
    web(&format!("basic_auth_users:\n  prometheus: '{hash}'\n"));
    let (code, err) = check_in(d, exporter);
    assert_eq!(code, Some(0), "{err}");

    let fleet = "[fleet]\nprometheus = \"https://prometheus.example\"\nbasic_auth = { username = \"u\", password_file = \"pw\" }\n";
    let (code, err) = check_in(d, fleet);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("'fleet.basic_auth.password_file'") && err.contains("pw"),
        "{err}"
    );
    std::fs::write(d.join("pw"), "hunter2\n").expect("write password");
    let (code, err) = check_in(d, fleet);
    assert_eq!(code, Some(0), "{err}");

    let tls = "[fleet]\ntls_config = { ca_file = \"no-ca.pem\" }\n";
    let (code, err) = check_in(d, tls);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("tls_config.ca_file") && err.contains("no-ca.pem"),
        "{err}"
    );
}

#[test]
fn config_show_names_secret_files_but_never_their_contents() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(d.join("pw"), "hunter2\n").expect("write password");
    let config = d.join("config.toml");
    std::fs::write(
        &config,
        "[fleet]\nprometheus = \"https://prometheus.example\"\nbasic_auth = { username = \"gpulse\", password_file = \"pw\" }\nproxy_url = \"http://bob:proxypw@proxy.example:3128\"\n",
    )
    .expect("write config");
    let out = gpulse()
        .arg("--config")
        .arg(&config)
        .args(["config", "show"])
        .output()
        .expect("run gpulse");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains("password_file") && shown.contains("https://prometheus.example"),
        "{shown}"
    );
    assert!(
        !shown.contains("hunter2") && !shown.contains("proxypw"),
        "{shown}"
    );
    let file: toml::Value = toml::from_str(&shown).expect("valid TOML");
    assert_eq!(
        file["fleet"]["basic_auth"]["username"].as_str(),
        Some("gpulse")
    );
}

#[test]
fn serve_with_a_bad_web_config_file_stops_before_listening() {
    let dir = tempfile::tempdir().expect("tempdir");
    let web = dir.path().join("web.yml");
    std::fs::write(&web, "basic_auth_users:\n  prometheus: plain\n").expect("write");
    let out = gpulse()
        .args([
            "--backend",
            "sim",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--web.config.file",
        ])
        .arg(&web)
        .output()
        .expect("run gpulse");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("web.yml") && err.contains("'basic_auth_users.prometheus'"),
        "{err}"
    );
}

/// The `[detector]` keys as docs/DETECTOR-KEYS.md lists them: every key with its default, the range
/// `config check` accepts and what it means, from `DetectorConfig` itself.
fn detector_keys_table() -> String {
    let cfg = support::api::DetectorConfig::default();
    let meaning = support::api::DetectorConfig::described();
    let mut out = vec![
        "| key | default | range | meaning |".to_string(),
        "|---|---|---|---|".to_string(),
    ];
    for ((key, value, lo, hi, unit), (_, doc)) in cfg.ranges().into_iter().zip(meaning) {
        let doc = doc.split_whitespace().collect::<Vec<_>>().join(" ");
        out.push(format!("| `{key}` | {value} | {lo}–{hi}{unit} | {doc} |"));
    }
    out.join("\n")
}

/// `cargo test --test config_files detector_docs -- --nocapture` prints the table.
#[test]
fn the_detector_docs_list_every_key_with_its_default_range_and_meaning() {
    let table = detector_keys_table();
    println!("{table}");
    let doc = std::fs::read_to_string(support::repo("docs/DETECTOR-KEYS.md"))
        .expect("docs/DETECTOR-KEYS.md");
    assert!(
        doc.contains(&table),
        "docs/DETECTOR-KEYS.md does not hold the [detector] keys as they are:\n{table}"
    );
}
