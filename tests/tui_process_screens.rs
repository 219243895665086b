//! Screens of the process table (flat, tree, sorted, filtered), the signal dialog, the host line
//! and the status line (replay, recording, serving), from simulated GPUs through the real engine.

mod support;

use std::sync::{Arc, Mutex};

use support::api::{
    Action, App, Focus, HostDetail, HostReading, ProcessIdentity, Scenario, Signal, SignalError,
    SignalSender, Signaller, SimRun, SortKey,
};
use support::screen::screen;

fn sim(scenario: Scenario, gpus: u32, seconds: f64) -> SimRun {
    let mut run = SimRun::new(scenario, gpus);
    run.host = HostReading {
        cpu_percent: Some(87.0),
        cpu_count: Some(128),
        memory_used_bytes: Some(212 << 30),
        memory_total_bytes: Some(2015 << 30),
        load1: Some(97.5),
        iowait_percent: Some(14.0),
    };
    run.host_detail = HostDetail {
        per_core_percent: (0..128).map(|i| if i < 96 { 99.0 } else { 3.0 }).collect(),
        load5: Some(90.25),
        load15: Some(60.0),
        swap_used_bytes: None,
        swap_total_bytes: None,
    };
    run.advance(seconds);
    run
}

fn app(run: &SimRun) -> App {
    support::screen::dashboard(run.snapshot(), true)
}

#[test]
fn flat_table_of_all_gpus_sorted_by_gpu_memory() {
    let run = sim(Scenario::Mixed, 4, 30.0);
    let mut a = app(&run);
    a.apply(Action::ToggleAllGpus);
    a.apply(Action::ToggleFocus);
    let s = screen(&a, 120, 40);
    assert!(s.contains("Processes · all GPUs"), "{s}");
    for col in [
        "GPU", "PID", "USER", "GPU MEM", "UTIL%", "MEMBUSY%", "CPU%", "RSS", "TIME",
    ] {
        assert!(s.contains(col), "{col}: {s}");
    }
    // Largest GPU memory first: GPU 3 (the memory-heavy job) leads.
    let first = s
        .lines()
        .find(|l| {
            l.contains("python train.py") && l.chars().nth(1).is_some_and(|c| c.is_ascii_digit())
        })
        .expect("a process row");
    assert!(first.starts_with("│3 "), "{first}");
    insta::assert_snapshot!("processes_all_gpus_120x40", s);
}

#[test]
fn tree_mode_shows_workers_with_cpu_and_state() {
    let run = sim(Scenario::Starving, 1, 30.0);
    let mut a = app(&run);
    a.apply(Action::ToggleTree);
    a.apply(Action::ToggleFocus);
    let s = screen(&a, 120, 40);
    // The workers run the trainer's own command: the rows say so instead of repeating it, and
    // the state column gives each one's state.
    let workers: Vec<&str> = s
        .lines()
        .filter(|l| l.contains("└ ″ (same command)"))
        .collect();
    assert!(workers.len() >= 2, "{s}");
    assert!(
        workers
            .iter()
            .all(|l| l.contains(" R ") || l.contains(" S ")),
        "{s}"
    );
    assert!(s.contains("tree"), "{s}");
    insta::assert_snapshot!("processes_tree_120x40", s);
    let small = screen(&a, 80, 24);
    assert!(small.contains("└ ″ (same command)"), "{small}");
    insta::assert_snapshot!("processes_tree_80x24", small);
}

#[test]
fn sorted_by_cpu_ascending_and_filtered() {
    let run = sim(Scenario::Mixed, 4, 30.0);
    let mut a = app(&run);
    a.apply(Action::ToggleAllGpus);
    while a.table.view.sort != SortKey::Cpu {
        a.apply(Action::SortNext);
    }
    a.apply(Action::SortReverse);
    let s = screen(&a, 120, 40);
    assert!(s.contains("sort CPU% ▲"), "{s}");
    insta::assert_snapshot!("processes_sorted_cpu_120x40", s);
    a.apply(Action::OpenFilter);
    for c in "healthy".chars() {
        a.apply(Action::FilterChar(c));
    }
    let typing = screen(&a, 120, 40);
    assert!(typing.contains("filter: healthy█"), "{typing}");
    a.apply(Action::FilterApply);
    let s = screen(&a, 120, 40);
    assert!(s.contains("filter \"healthy\""), "{s}");
    assert!(!s.contains("--job starving"), "{s}");
    insta::assert_snapshot!("processes_filtered_120x40", s);
    a.apply(Action::OpenFilter);
    a.apply(Action::FilterChar('x'));
    a.apply(Action::FilterApply);
    let none = screen(&a, 120, 40);
    assert!(none.contains("no process matches \"healthyx\""), "{none}");
}

#[derive(Debug, Default)]
struct Allow(Mutex<Vec<(u32, Signal)>>);
impl SignalSender for Allow {
    fn can_signal(&self, _target: ProcessIdentity) -> Result<(), SignalError> {
        Ok(())
    }
    fn send(&self, target: ProcessIdentity, signal: Signal) -> Result<(), SignalError> {
        self.0.lock().expect("lock").push((target.pid, signal));
        Ok(())
    }
}

#[test]
fn signal_dialog_asks_then_offers_kill() {
    let run = sim(Scenario::Starving, 1, 10.0);
    let mut a = app(&run);
    a.signaller = Arc::new(Allow::default());
    a.focus = Focus::Processes;
    a.apply(Action::OpenSignalDialog);
    let s = screen(&a, 80, 24);
    assert!(
        s.contains("Send SIGTERM to PID 4101 (python train.py --job"),
        "{s}"
    );
    assert!(s.contains("[y/N]"), "{s}");
    insta::assert_snapshot!("signal_dialog_80x24", s);
    a.apply(Action::DialogYes);
    let s = screen(&a, 80, 24);
    assert!(s.contains("SIGTERM sent to PID 4101"), "{s}");
    assert!(s.contains("K send SIGKILL"), "{s}");
}

#[test]
fn signal_dialog_refuses_simulated_and_readonly() {
    let run = sim(Scenario::Starving, 1, 10.0);
    let mut a = app(&run);
    a.apply(Action::OpenSignalDialog);
    let s = screen(&a, 80, 24);
    assert!(s.contains("Cannot signal PID 4101"), "{s}");
    assert!(s.contains("sim backend"), "{s}");
    insta::assert_snapshot!("signal_refused_sim_80x24", s);
    a.apply(Action::DialogClose);
    a.signaller = Arc::new(Signaller::new("nvml", true));
    a.apply(Action::OpenSignalDialog);
    let s = screen(&a, 120, 40);
    assert!(s.contains("--readonly"), "{s}");
    insta::assert_snapshot!("signal_refused_readonly_120x40", s);
}

#[test]
fn host_line_shows_cpu_cores_memory_load_and_iowait() {
    let run = sim(Scenario::HostBound, 1, 10.0);
    let a = app(&run);
    let s = screen(&a, 80, 24);
    let host = s.lines().nth(1).expect("second line");
    assert!(host.contains("host CPU 87%"), "{host}");
    assert!(host.contains("128c"), "{host}");
    assert!(host.contains("mem 212.0/2015.0 GiB"), "{host}");
    assert!(host.contains("load 97.50 90.25"), "{host}");
    assert!(host.contains("iowait 14%"), "{host}");
    assert!(host.contains('█') && host.contains('▁'), "{host}");
    assert!(host.chars().count() <= 80);
    insta::assert_snapshot!("host_line_80x24", s);
    // Without host figures every value is absent, not zero.
    let bare = SimRun::new(Scenario::HostBound, 1);
    let s = screen(&app(&bare), 80, 24);
    let host = s.lines().nth(1).expect("second line");
    assert!(host.contains("host CPU —"), "{host}");
    assert!(host.contains("iowait —"), "{host}");
}

#[test]
fn status_line_shows_replay_recording_and_serving() {
    use support::api::{start_replay, Recording, ReplaySession, ReplayState, T0};
    let run = sim(Scenario::Starving, 1, 35.0);
    let snap = run.snapshot();
    let (live, control) = start_replay((*snap.system).clone(), Default::default(), vec![], vec![]);
    let session = ReplaySession {
        control,
        file: "/tmp/train-run.ndjson.zst".into(),
        start: T0,
        end: T0 + 360.0,
        warnings: vec![],
    };
    let mut a = app(&run);
    a.replay = Some(ReplayState::new(&session));
    a.apply(Action::ReplaySpeed(2));
    let s = screen(&a, 120, 40);
    assert!(
        s.contains("REPLAY train-run.ndjson.zst 12:00:35 (+35 s of 6 min) ×2 ▶"),
        "{s}"
    );
    assert!(s.contains("▶ REPLAY 12:00:35 UTC"), "{s}");
    assert!(!s.contains("LIVE"), "{s}");
    insta::assert_snapshot!("replay_status_120x40", s);
    a.apply(Action::TogglePause);
    assert!(
        !a.paused(),
        "replay pause pauses the player, not the screen"
    );
    let s = screen(&a, 120, 40);
    assert!(s.contains("×2 ⏸"), "{s}");
    drop(live);

    let dir = tempfile::tempdir().expect("tempdir");
    let (_tx, rx) = tokio::sync::watch::channel(snap.clone());
    let path = dir.path().join("rec.ndjson.zst");
    let rec = Recording::start_at(&path, rx).expect("recording");
    let mut a = app(&run);
    a.recording = Some(rec.status().clone());
    a.serving = Some("127.0.0.1:9400".parse().expect("addr"));
    let s = screen(&a, 120, 40);
    assert!(s.contains("● REC rec.ndjson.zst (0 ticks)"), "{s}");
    assert!(s.contains("serving http://127.0.0.1:9400/metrics"), "{s}");
    insta::assert_snapshot!("recording_status_120x40", s);
    rec.stop();
}

/// A process's command line (anything the process chose) reaches the screen as text: its
/// terminal escapes (a new title, a cleared screen, a clipboard write) never reach the terminal.
#[test]
fn a_process_command_holding_terminal_escapes_is_drawn_without_them() {
    let run = sim(Scenario::Mixed, 2, 30.0);
    let mut snap = (*run.snapshot()).clone();
    let hostile = "\x1b]0;owned\x07\x1b[2J\x1b]52;c;ZWNobw==\x07python evil.py";
    for p in snap.gpus.iter_mut().flat_map(|g| g.processes.iter_mut()) {
        p.command = Some(hostile.to_string());
    }
    let mut a = support::screen::dashboard(Arc::new(snap), true);
    a.apply(Action::ToggleFocus);
    let buf = support::screen::draw(&a, 120, 40);
    let symbols: String = buf.content().iter().map(|c| c.symbol()).collect();
    assert!(symbols.contains("evil.py"), "the command is drawn");
    assert!(
        !symbols.chars().any(char::is_control),
        "control characters in the screen: {symbols:?}"
    );
}
