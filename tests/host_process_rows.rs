//! The process table's rows: sorting, filtering, tree mode, unresolved labels.

mod support;

use support::api::{
    format_running, process_rows, state_name, GpuProcess, HostProcess, ProcessView, SortKey,
};

fn child(pid: u32, ppid: u32, cpu: f64, state: char, cmd: &str) -> HostProcess {
    HostProcess {
        pid,
        ppid: Some(ppid),
        cpu_percent: Some(cpu),
        state: Some(state),
        rss_bytes: Some(1 << 20),
        command: Some(cmd.into()),
        start_ticks: None,
    }
}

fn procs() -> Vec<(u32, GpuProcess)> {
    vec![
        (
            0,
            GpuProcess {
                pid: 100,
                user: Some("alice".into()),
                gpu_memory_bytes: Some(40 << 30),
                cpu_percent: Some(35.0),
                command: Some("python train.py".into()),
                resolved: true,
                // In scan order, not tree order: the rows put 103 under 101.
                children: vec![
                    child(102, 100, 97.0, 'D', "python train.py"),
                    child(103, 101, 1.0, 'S', "ffmpeg -i clip.mp4"),
                    child(101, 100, 99.0, 'R', "python train.py"),
                ],
                ..Default::default()
            },
        ),
        (
            1,
            GpuProcess {
                pid: 200,
                user: Some("bob".into()),
                gpu_memory_bytes: Some(80 << 30),
                cpu_percent: Some(100.0),
                command: Some("python serve.py".into()),
                resolved: true,
                ..Default::default()
            },
        ),
        (
            1,
            GpuProcess {
                pid: 4321,
                gpu_memory_bytes: None,
                resolved: false,
                ..Default::default()
            },
        ),
    ]
}

fn rows(view: &ProcessView) -> Vec<(u32, usize)> {
    let ps = procs();
    process_rows(ps.iter().map(|(g, p)| (*g, p)), view)
        .iter()
        .map(|r| (r.pid, r.depth))
        .collect()
}

#[test]
fn sorted_by_gpu_memory_largest_first_absent_last() {
    let view = ProcessView {
        sort: SortKey::GpuMemory,
        descending: true,
        ..Default::default()
    };
    assert_eq!(rows(&view), vec![(200, 0), (100, 0), (4321, 0)]);
    let asc = ProcessView {
        descending: false,
        ..view
    };
    assert_eq!(rows(&asc), vec![(100, 0), (200, 0), (4321, 0)]);
}

#[test]
fn tree_mode_puts_descendants_under_their_gpu_process_with_depth() {
    let view = ProcessView {
        sort: SortKey::Pid,
        tree: true,
        ..Default::default()
    };
    assert_eq!(
        rows(&view),
        vec![(100, 0), (101, 1), (103, 2), (102, 1), (200, 0), (4321, 0)]
    );
}

#[test]
fn filter_matches_pid_user_or_command_and_keeps_the_parent_of_a_matching_child() {
    let by_user = ProcessView {
        filter: "BOB".into(),
        ..Default::default()
    };
    assert_eq!(rows(&by_user), vec![(200, 0)]);
    let by_child = ProcessView {
        filter: "ffmpeg".into(),
        tree: true,
        ..Default::default()
    };
    assert_eq!(rows(&by_child), vec![(100, 0), (103, 2)]);
    let by_pid = ProcessView {
        filter: "4321".into(),
        ..Default::default()
    };
    assert_eq!(rows(&by_pid), vec![(4321, 0)]);
}

#[test]
fn unresolved_processes_are_labelled_and_not_signallable() {
    let ps = procs();
    let all = process_rows(ps.iter().map(|(g, p)| (*g, p)), &ProcessView::default());
    let hidden = all.iter().find(|r| r.pid == 4321).expect("kept");
    assert_eq!(hidden.command, "pid 4321 (not visible here)");
    assert_eq!(hidden.signal_target, None);
    assert_eq!(hidden.user, None);
    let seen = all.iter().find(|r| r.pid == 100).expect("row");
    assert_eq!(seen.signal_target.map(|t| t.pid), Some(100));
}

#[test]
fn words_for_states_and_times() {
    assert_eq!(state_name('D'), "disk wait");
    assert_eq!(state_name('R'), "running");
    assert_eq!(format_running(45.2), "45s");
    assert_eq!(format_running(723.0), "12m03s");
    assert_eq!(format_running(3.0 * 3600.0 + 7.0 * 60.0), "3h07m");
    assert_eq!(format_running(2.0 * 86400.0 + 4.0 * 3600.0), "2d04h");
    assert_eq!(SortKey::Command.next(), SortKey::Pid);
}
