//! Bad input through the real binary, as a new user meets it: no terminal, binary files, files
//! mostly garbage or empty of samples, closed pipes, missing files, no GPU. Each is a clear
//! error (or a quiet end), never a panic, a doubled cause or raw bytes on the terminal.

use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_gpulse");

/// The real binary, away from the developer's config and log settings.
fn gpulse() -> Command {
    let mut c = Command::new(BIN);
    c.env_remove("GPULSE_CONFIG")
        .env_remove("GPULSE_BACKEND")
        .env_remove("RUST_LOG")
        .env("XDG_CONFIG_HOME", "/nonexistent/gpulse-test-config-home")
        .stdin(Stdio::null());
    c
}

fn run(args: &[&str]) -> Output {
    gpulse().args(args).output().expect("run gpulse")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Nothing but printable text and line breaks.
fn assert_printable(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "{what}: raw control bytes reached the terminal: {text:?}"
    );
}

fn driver_loaded() -> bool {
    Path::new("/proc/driver/nvidia/version").exists()
}

/// A recording of one simulated tick, and the same cut to its header line.
fn recordings(dir: &Path) -> (PathBuf, PathBuf) {
    let one = dir.join("one.ndjson");
    let out = run(&[
        "--backend",
        "sim",
        "record",
        one.to_str().expect("utf-8"),
        "--count",
        "1",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&one).expect("recording");
    let header_only = dir.join("header-only.ndjson");
    let header = text.lines().next().expect("a header line");
    std::fs::write(&header_only, format!("{header}\n")).expect("write");
    (one, header_only)
}

#[test]
fn the_dashboard_without_a_terminal_says_so_and_names_the_headless_commands() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (recording, _) = recordings(dir.path());
    let recording = recording.to_str().expect("utf-8");
    for (args, what, instead) in [
        (
            vec!["demo"],
            "the dashboard needs a terminal",
            "`gpulse serve`",
        ),
        (
            vec!["replay", recording],
            "replay needs a terminal",
            "`gpulse analyze FILE`",
        ),
    ] {
        let out = run(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(what) && err.contains(instead),
            "{args:?}: {err}"
        );
        assert!(err.contains("ssh -t"), "{args:?}: {err}");
        assert!(!err.contains("os error"), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing drawn");
    }
    let err = stderr(&run(&["demo"]));
    for command in ["snapshot", "stream", "record", "serve", "analyze"] {
        assert!(
            err.contains(&format!("`gpulse {command}")),
            "{command}: {err}"
        );
    }
}

#[test]
fn file_content_in_messages_and_reports_is_shown_escaped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let binary = dir.path().join("program");
    std::fs::write(
        &binary,
        b"\x7fELF\x02\x01\x01\0\0\0\0\r\x1b[2J\x1b]0;title\x07\xff\xfe\n",
    )
    .expect("write");
    let out = run(&["analyze", binary.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(1));
    assert_printable("analyze of a binary file", &out.stderr);
    assert!(
        stderr(&out).contains("first line '\\x7fELF\\x02"),
        "{}",
        stderr(&out)
    );

    // A GPU name holding a terminal command, in an otherwise good log.
    let log = dir.path().join("named.csv");
    let mut text = String::from("timestamp, index, name, utilization.gpu [%]\n");
    for i in 0..40 {
        text.push_str(&format!(
            "2026/12/02 13:28:{:02}.{:03}, 0, \x1b]0;pwned\x07H200, 50 %\n",
            i / 4,
            (i % 4) * 250
        ));
    }
    std::fs::write(&log, text).expect("write");
    let out = run(&["analyze", log.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_printable("analyze report", &out.stdout);
    assert!(String::from_utf8_lossy(&out.stdout).contains("(\\x1b]0;pwned\\x07H200)"));
}

#[test]
fn a_mostly_unreadable_log_is_an_error_saying_how_much_was_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("garbage.csv");
    let mut text = String::from("timestamp, index, utilization.gpu [%]\n");
    for i in 0..1010 {
        if i % 101 == 0 {
            text.push_str(&format!(
                "2026/12/02 13:{:02}:00.000, {}, 50 %\n",
                i / 101,
                i % 7
            ));
        } else {
            text.push_str("q8,;zz 1 %%, 0x, -\n");
        }
    }
    std::fs::write(&log, text).expect("write");
    let out = run(&["analyze", log.to_str().expect("utf-8")]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("is mostly unreadable"), "{err}");
    assert!(
        err.contains("1.0% of its data lines could be read (10 of 1010"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "no report of chance readings");
}

#[test]
fn a_recording_holding_only_its_header_has_no_samples_for_analyze_and_replay_alike() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, header_only) = recordings(dir.path());
    let path = header_only.to_str().expect("utf-8");
    let analyzed = run(&["analyze", path]);
    let replayed = run(&["replay", path]);
    for out in [&analyzed, &replayed] {
        let err = stderr(out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("holds no samples"), "{err}");
        assert!(out.stdout.is_empty());
    }
    assert_eq!(stderr(&analyzed), stderr(&replayed), "the same words");
}

/// A pipe whose reading end is closed already: every write to it fails with `EPIPE`.
fn closed_pipe() -> Stdio {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe() fills both descriptors, which this function then owns.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe");
    // SAFETY: the reading end is closed once, here; the writing end goes to an OwnedFd.
    unsafe {
        libc::close(fds[0]);
        Stdio::from(OwnedFd::from_raw_fd(fds[1]))
    }
}

#[test]
fn output_into_a_closed_pipe_ends_quietly_with_status_0() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (recording, _) = recordings(dir.path());
    let recording = recording.to_str().expect("utf-8");
    // doctor's framework probes answered by the stand-in python3 of the doctor tests.
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/doctor");
    for args in [
        &["man"][..],
        &["completions", "bash"][..],
        &["completions", "zsh"][..],
        &["completions", "fish"][..],
        &["config", "show"][..],
        &["config", "path"][..],
        &["analyze", recording][..],
        &["analyze", "--json", recording, recording][..],
        &["--backend", "sim", "snapshot"][..],
        &["--backend", "sim", "snapshot", "--json"][..],
        &["--backend", "sim", "doctor", "--probe-timeout", "5s"][..],
    ] {
        let out = gpulse()
            .env("PATH", fixtures.join("bin"))
            .env("GPULSE_FAKE_PROBES", fixtures.join("healthy"))
            .args(args)
            .stdout(closed_pipe())
            .output()
            .expect("run gpulse");
        let err = stderr(&out);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(!err.contains("Broken pipe"), "{args:?}: {err}");
        // doctor's status is its verdict; the others succeed.
        if args.last() != Some(&"5s") {
            assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        }
    }
}

#[test]
fn each_cause_of_an_error_is_said_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dir_path = dir.path().to_str().expect("utf-8");
    let missing_dir = format!("{dir_path}/no/such/dir/x.ndjson");
    for (args, cause) in [
        (vec!["replay", "/nope"], "No such file or directory"),
        (vec!["analyze", "/nope"], "No such file or directory"),
        (
            vec!["--backend", "sim", "record", &missing_dir, "--count", "1"],
            "No such file or directory",
        ),
        (
            vec!["--config", dir_path, "config", "show"],
            "Is a directory",
        ),
        (vec!["analyze", dir_path], "Is a directory"),
    ] {
        let out = run(&args);
        let err = stderr(&out);
        assert!(!out.status.success(), "{args:?}");
        assert_eq!(err.matches(cause).count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn without_a_gpu_the_hint_names_what_fits_the_command() {
    if driver_loaded() {
        // NVML opens on a GPU machine; this is about machines without one.
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("r.ndjson");
    let file = file.to_str().expect("utf-8");
    for (args, command) in [
        (vec!["--backend", "nvml", "serve"], "serve"),
        (vec!["--backend", "nvml", "stream"], "stream"),
        (vec!["--backend", "nvml", "record", file], "record"),
        (vec!["--backend", "nvml", "snapshot"], "snapshot"),
    ] {
        let out = run(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("`gpulse --backend sim {command}`")),
            "{args:?}: {err}"
        );
        assert!(!err.contains("gpulse demo"), "{args:?}: {err}");
    }
    let err = stderr(&run(&["--backend", "nvml"]));
    assert!(err.contains("gpulse demo"), "the dashboard's hint: {err}");
}

#[test]
fn doctor_without_a_gpu_does_no_per_gpu_arithmetic() {
    if driver_loaded() {
        return;
    }
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/doctor");
    let out = gpulse()
        .env("PATH", fixtures.join("bin"))
        .env("GPULSE_FAKE_PROBES", fixtures.join("healthy"))
        .args(["doctor", "--probe-timeout", "5s"])
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("no GPU found, so no DataLoader workers per GPU"),
        "{text}"
    );
    assert!(!text.contains("for 0 GPU(s)"), "{text}");
}

#[test]
fn headless_commands_log_to_stderr_and_keep_stdout_for_data() {
    let snapshot = |extra: &[&str], rust_log: Option<&str>| {
        let mut c = gpulse();
        if let Some(filter) = rust_log {
            c.env("RUST_LOG", filter);
        }
        let mut args = vec!["--backend", "sim", "--serve", "0.0.0.0:0"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["snapshot", "--json"]);
        let out = c.args(&args).output().expect("run");
        assert!(out.status.success(), "{}", stderr(&out));
        let doc: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("stdout is the JSON document alone");
        assert!(doc["gpus"].is_array());
        stderr(&out)
    };
    let warning = "gpulse: warning: serving metrics on 0.0.0.0:0 to anyone who can reach it";
    assert!(snapshot(&[], None).contains(warning));
    assert!(!snapshot(&["-q"], None).contains(warning));
    assert!(!snapshot(&[], Some("error")).contains(warning));
    assert!(
        snapshot(&["-q"], Some("warn")).contains(warning),
        "RUST_LOG wins"
    );
    let err = snapshot(&[], Some("gpulse=loud"));
    assert!(
        err.contains("RUST_LOG='gpulse=loud' is not a valid filter"),
        "{err}"
    );
    assert!(err.contains(warning), "the flags' level applies: {err}");
}

#[test]
fn a_file_without_line_breaks_is_refused_without_being_read_whole() {
    let out = assert_cmd::Command::new(BIN)
        .env("XDG_CONFIG_HOME", "/nonexistent/gpulse-test-config-home")
        .args(["analyze", "/dev/zero"])
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .expect("run");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("line 1 is longer than 64 KiB"), "{err}");
}

#[test]
fn counts_of_nothing_are_refused() {
    for args in [
        &["--backend", "sim", "stream", "--count", "0"][..],
        &[
            "--backend",
            "sim",
            "record",
            "/nonexistent/x.ndjson",
            "--count",
            "0",
        ][..],
    ] {
        let out = run(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("0 is not in 1.."), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// A config or web configuration file that names something endless (or far too large) is an
/// error saying so, after reading its limit, not the whole of it.
#[test]
fn an_endless_config_or_web_config_is_refused_at_its_size_limit() {
    for (args, what) in [
        (
            &["--config", "/dev/zero", "config", "show"][..],
            "config file",
        ),
        (
            &[
                "--backend",
                "sim",
                "--web.config.file",
                "/dev/zero",
                "serve",
                "--listen",
                "127.0.0.1:0",
            ][..],
            "web config file",
        ),
    ] {
        let out = assert_cmd::Command::new(BIN)
            .env("XDG_CONFIG_HOME", "/nonexistent/gpulse-test-config-home")
            .args(args)
            .timeout(std::time::Duration::from_secs(30))
            .output()
            .expect("run");
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("cannot read {what} '/dev/zero'"))
                && err.contains("more than 1 MiB"),
            "{args:?}: {err}"
        );
    }
}

/// Strings from recordings and config files reach the terminal as text: a process's command
/// line in the ledger of a report, a web configuration file's name and its content in an error.
#[test]
fn process_names_and_config_paths_are_shown_escaped_on_every_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/h200/resnet50-batch-128-loader-3-workers-25ms-per-sample");
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut zstd::Decoder::new(
            std::fs::File::open(job.join("recording.ndjson.zst")).expect("open"),
        )
        .expect("zstd"),
        &mut text,
    )
    .expect("read");
    let hostile = r#""command":"\u001b]52;c;ZWNobw==\u0007\u001b[2Jpython3 train.py""#;
    let recording = dir.path().join("rec.ndjson");
    let replaced = regex_free_replace(&text, "\"command\":\"", "\"", hostile);
    std::fs::write(&recording, replaced).expect("write");
    let out = run(&["analyze", recording.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_printable("analyze report", &out.stdout);
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("\\x1b]52;c;ZWNobw==\\x07\\x1b[2Jpython3 train.py"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    let web = dir.path().join("web\x1b]0;title\x07.yml");
    std::fs::write(&web, "tls_server_config: [\x1b[2J\n").expect("write");
    let out = run(&[
        "--backend",
        "sim",
        "--web.config.file",
        web.to_str().expect("utf-8"),
        "serve",
        "--listen",
        "127.0.0.1:0",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_printable("a bad web config file", &out.stderr);
    assert!(
        stderr(&out).contains("web\\x1b]0;title\\x07.yml"),
        "{}",
        stderr(&out)
    );
}

/// `text` with every span from `start` to the first `end` after it replaced by `with`.
fn regex_free_replace(text: &str, start: &str, end: &str, with: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(start) {
        let from = i + start.len();
        let Some(j) = rest[from..].find(end) else {
            break;
        };
        out.push_str(&rest[..i]);
        out.push_str(with);
        rest = &rest[from + j + end.len()..];
    }
    out.push_str(rest);
    out
}
