//! The headless commands through the real binary: snapshot, stream, completions, man.

mod support;

use std::process::{Command, Stdio};

use serde_json::Value;
use support::cli::gpulse;
use support::schema::validate;

fn run_ok(args: &[&str]) -> String {
    let out = gpulse().args(args).output().expect("run gpulse");
    assert!(
        out.status.success(),
        "gpulse {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

#[test]
fn snapshot_json_has_every_gpu_and_validates_against_the_schema() {
    let text = run_ok(&["--backend", "sim", "--gpus", "3", "snapshot", "--json"]);
    let doc: Value = serde_json::from_str(&text).expect("one JSON document");
    assert_eq!(doc["schema_version"], 1);
    let gpus = doc["gpus"].as_array().expect("gpus");
    assert_eq!(gpus.len(), 3);
    for (i, g) in gpus.iter().enumerate() {
        assert_eq!(g["index"], i as u64);
        assert_eq!(g["status"], "ok");
        // Warmed up: rates and the driver window exist.
        assert!(g["pcie_rx_bytes_per_s"].is_number(), "{g}");
        assert!(g["utilization_gpu"].is_number(), "{g}");
        // The simulated H200 has no fan: absent is null, never 0.
        assert!(g["fan_percent"].is_null(), "{g}");
        assert!(g["verdict"].is_string());
    }
    assert!(doc["time"].as_str().expect("time").ends_with('Z'));
    validate("snapshot.schema.json", &[text]);
}

#[test]
fn snapshot_table_shows_every_gpu_and_its_verdict() {
    let text = run_ok(&["--backend", "sim", "--gpus", "2", "snapshot"]);
    for needle in [
        "GPU 0  NVIDIA H200",
        "GPU 1  NVIDIA H200",
        "verdict",
        "PCIe      Gen5 x16",
        "power",
        "throttle",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    assert!(text.contains("fan -"), "an absent fan prints '-':\n{text}");
}

#[test]
fn stream_count_gives_that_many_valid_lines_in_order() {
    let text = run_ok(&[
        "--backend",
        "sim",
        "--gpus",
        "2",
        "--interval",
        "100ms",
        "stream",
        "--count",
        "3",
    ]);
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 3, "{text}");
    let seqs: Vec<u64> = lines
        .iter()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("each line is JSON");
            assert_eq!(v["gpus"].as_array().map(Vec::len), Some(2));
            v["seq"].as_u64().expect("seq")
        })
        .collect();
    assert!(seqs.windows(2).all(|w| w[1] > w[0]), "{seqs:?}");
    validate("snapshot.schema.json", &lines);
}

#[test]
fn stream_into_a_closed_pipe_ends_quietly_with_status_0() {
    let bin = support::cli::BIN;
    let out = Command::new("bash")
        .args([
            "-c",
            &format!("set -o pipefail; '{bin}' --backend sim --interval 100ms stream | head -1"),
        ])
        .env_remove("GPULSE_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent/gpulse-test-config-home")
        .stderr(Stdio::piped())
        .output()
        .expect("run the pipeline");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "status {:?}: {stderr}", out.status);
    assert!(stderr.trim().is_empty(), "no noise on stderr: {stderr}");
    let line = String::from_utf8_lossy(&out.stdout);
    assert_eq!(line.lines().count(), 1);
    serde_json::from_str::<Value>(line.trim()).expect("the line is JSON");
}

#[test]
fn completions_and_man_page_come_from_the_cli_definition() {
    let bash = run_ok(&["completions", "bash"]);
    assert!(bash.contains("_gpulse()") && bash.contains("snapshot") && bash.contains("--listen"));
    let zsh = run_ok(&["completions", "zsh"]);
    assert!(zsh.starts_with("#compdef gpulse") && zsh.contains("record"));
    let fish = run_ok(&["completions", "fish"]);
    assert!(fish.contains("complete -c gpulse") && fish.contains("serve"));
    let man = run_ok(&["man"]);
    assert!(
        man.contains(".TH gpulse") && man.contains("snapshot"),
        "{man}"
    );
}

#[test]
fn an_unknown_command_is_a_usage_error() {
    let out = gpulse().arg("snapshott").output().expect("run");
    assert_eq!(out.status.code(), Some(2));
}

#[cfg(unix)]
#[test]
fn ctrl_c_ends_a_stream_with_status_0() {
    use std::io::BufRead;
    let mut child = gpulse()
        .args(["--backend", "sim", "--interval", "100ms", "stream"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start");
    let mut lines = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = lines.next().expect("a line").expect("readable");
    serde_json::from_str::<Value>(&first).expect("JSON");
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(status.success());
    let rest = lines.map_while(Result::ok).count();
    let exit = child.wait().expect("wait");
    assert!(exit.success(), "{exit:?} after {rest} more lines");
}
