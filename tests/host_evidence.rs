//! Loader evidence and finding annotation, on hand-built process trees and on the simulator's.

mod support;

use support::api::{
    annotate_finding, loader_evidence, DeviceSampler, Evidence, Finding, FindingKind, GpuProcess,
    GpuReading, HostProbe, HostProcess, HostReading, LoaderVerdict, Sample, Scenario, Severity,
    SimBackend, SimConfig,
};

fn worker(pid: u32, ppid: u32, cpu: f64, state: char) -> HostProcess {
    HostProcess {
        pid,
        ppid: Some(ppid),
        cpu_percent: Some(cpu),
        state: Some(state),
        rss_bytes: Some(1 << 30),
        command: Some("python train.py".into()),
        start_ticks: None,
    }
}

fn trainer(main_cpu: f64, workers: Vec<HostProcess>) -> GpuProcess {
    GpuProcess {
        pid: 100,
        cpu_percent: Some(main_cpu),
        gpu_memory_bytes: Some(30 << 30),
        command: Some("python train.py".into()),
        resolved: true,
        children: workers,
        ..Default::default()
    }
}

fn host(cores: u32, iowait: f64) -> HostReading {
    HostReading {
        cpu_count: Some(cores),
        iowait_percent: Some(iowait),
        cpu_percent: Some(50.0),
        ..Default::default()
    }
}

fn starvation() -> Finding {
    Finding {
        kind: FindingKind::InputStarvation,
        severity: Severity::High,
        gpu: 0,
        start: 0.0,
        end: None,
        detected_at: 1.0,
        evidence: Evidence::default(),
        summary: "idle ~1 s every 1.6 s".into(),
        advice: "Feed the GPU faster.".into(),
    }
}

#[test]
fn too_few_workers_on_a_big_machine() {
    let p = trainer(
        40.0,
        vec![worker(101, 100, 55.0, 'S'), worker(102, 100, 60.0, 'R')],
    );
    let ev = loader_evidence(&p, &host(64, 0.5)).expect("evidence");
    assert_eq!(ev.verdict, LoaderVerdict::TooFewWorkers);
    assert_eq!(ev.workers, 2);
    assert_eq!(ev.mean_worker_cpu, Some(57.5));
    assert!(
        ev.advice.contains("raise num_workers (now 2, 64 cores)"),
        "{}",
        ev.advice
    );
}

#[test]
fn sleeping_workers_at_low_cpu_wait_on_a_remote_source() {
    // As seen on the H200: 8 workers asleep at 12-16% CPU on 16 cores, the GPU starving (with a
    // quarter of the cores or fewer as workers, "too few" comes first).
    let ws = (1..=8)
        .map(|k| worker(100 + k, 100, 12.0 + f64::from(k) / 2.0, 'S'))
        .collect();
    let ev = loader_evidence(&trainer(35.0, ws), &host(16, 0.3)).expect("evidence");
    assert_eq!(ev.verdict, LoaderVerdict::WaitingOnSource);
    assert!(ev.note.contains("8 asleep"), "{}", ev.note);
    assert!(
        ev.advice.contains("raise num_workers (now 8)"),
        "{}",
        ev.advice
    );

    // The same workers beside a training process at full CPU: not a loader wait.
    let ws = (1..=8).map(|k| worker(100 + k, 100, 14.0, 'S')).collect();
    assert_eq!(loader_evidence(&trainer(99.0, ws), &host(16, 0.3)), None);
    // Busy workers that happen to be asleep at the reading are not waiting.
    let ws = (1..=8).map(|k| worker(100 + k, 100, 70.0, 'S')).collect();
    assert_eq!(loader_evidence(&trainer(30.0, ws), &host(16, 0.3)), None);
}

#[test]
fn saturated_workers_with_no_spare_cores_need_cheaper_transforms() {
    let ws = (1..=8).map(|k| worker(100 + k, 100, 97.0, 'R')).collect();
    let ev = loader_evidence(&trainer(30.0, ws), &host(8, 0.0)).expect("evidence");
    assert_eq!(ev.verdict, LoaderVerdict::CpuSaturated);
    assert!(ev.advice.contains("no cores are free"), "{}", ev.advice);
}

#[test]
fn no_workers_and_a_busy_trainer_means_loading_in_the_training_process() {
    let ev = loader_evidence(&trainer(99.0, Vec::new()), &host(32, 0.0)).expect("evidence");
    assert_eq!(ev.verdict, LoaderVerdict::NoWorkers);
    assert!(ev.advice.contains("num_workers"), "{}", ev.advice);
    // An idle trainer without workers gives no host-side explanation.
    assert_eq!(
        loader_evidence(&trainer(20.0, Vec::new()), &host(32, 0.0)),
        None
    );
}

#[test]
fn high_iowait_with_idle_workers_is_storage() {
    let ws = (1..=4).map(|k| worker(100 + k, 100, 10.0, 'S')).collect();
    let ev = loader_evidence(&trainer(30.0, ws), &host(16, 35.0)).expect("evidence");
    assert_eq!(ev.verdict, LoaderVerdict::WaitingOnIo);
    assert_eq!(ev.workers_in_disk_wait, 0);
}

#[test]
fn zombies_grandchildren_and_unresolved_processes_are_not_workers() {
    let p = trainer(
        30.0,
        vec![
            worker(101, 100, 99.0, 'R'),
            worker(102, 100, 0.0, 'Z'),
            worker(103, 101, 99.0, 'R'),
        ],
    );
    let ev = loader_evidence(&p, &host(4, 0.0)).expect("evidence");
    assert_eq!(ev.workers, 1);
    let mut hidden = p.clone();
    hidden.resolved = false;
    assert_eq!(loader_evidence(&hidden, &host(4, 0.0)), None);
}

#[test]
fn annotation_adds_notes_and_advice_once_and_only_to_starvation_kinds() {
    let ws = (1..=4).map(|k| worker(100 + k, 100, 98.0, 'R')).collect();
    let procs = vec![trainer(30.0, ws)];
    let h = host(32, 1.0);
    let mut f = starvation();
    annotate_finding(&mut f, &procs, &h);
    assert_eq!(f.evidence.notes.len(), 1);
    assert!(
        f.evidence.notes[0].contains("pid 100"),
        "{:?}",
        f.evidence.notes
    );
    assert!(f.evidence.notes[0].contains("CPU-saturated"));
    assert!(f.advice.starts_with("Feed the GPU faster."));
    assert!(
        f.advice.contains("raise num_workers (now 4)"),
        "{}",
        f.advice
    );
    let once = f.clone();
    annotate_finding(&mut f, &procs, &h);
    assert_eq!(f, once, "annotating every tick does not pile up");
    // The workers recover (enough of them, working below saturation): the stale host evidence
    // goes away.
    let calm = vec![trainer(
        30.0,
        (1..=16).map(|k| worker(100 + k, 100, 60.0, 'R')).collect(),
    )];
    annotate_finding(&mut f, &calm, &h);
    assert!(f.evidence.notes.is_empty());
    assert_eq!(f.advice, "Feed the GPU faster.");
    // The rules' advice is a list of fixes without a full stop: the host's joins it as one more.
    let mut listed = Finding {
        advice: "more DataLoader workers, pin_memory=True".into(),
        ..starvation()
    };
    annotate_finding(&mut listed, &procs, &h);
    assert!(
        listed
            .advice
            .starts_with("more DataLoader workers, pin_memory=True; host: "),
        "{}",
        listed.advice
    );
    annotate_finding(&mut listed, &calm, &h);
    assert_eq!(listed.advice, "more DataLoader workers, pin_memory=True");

    let mut other = Finding {
        kind: FindingKind::Throttled,
        ..starvation()
    };
    let before = other.clone();
    annotate_finding(&mut other, &procs, &h);
    assert_eq!(other, before);
}

fn sim_reading(scenario: Scenario, gpu: usize, seed: u64) -> GpuReading {
    let cfg = SimConfig {
        scenario,
        gpus: 8,
        seed,
        start: Some(0.0),
        hostname: Some("t".into()),
    };
    let mut devs = SimBackend::devices_for(&cfg);
    devs[gpu].sample(5.0).expect("sim")
}

#[test]
fn simulated_training_jobs_have_the_workers_their_scenario_implies() {
    let h = host(32, 2.0);
    // Mixed: GPU 0 starving with CPU-bound workers, GPU 6 starving on storage, GPU 1 healthy.
    let cpu = sim_reading(Scenario::Mixed, 0, 1);
    let p = &cpu.processes[0];
    assert!((4..=8).contains(&p.children.len()), "{}", p.children.len());
    assert!(p.children.iter().all(|c| c.ppid == Some(p.pid)));
    let ev = loader_evidence(p, &h).expect("evidence");
    assert_eq!(ev.verdict, LoaderVerdict::CpuSaturated);

    let io = sim_reading(Scenario::Mixed, 6, 1);
    let ev = loader_evidence(&io.processes[0], &h).expect("evidence");
    assert_eq!(ev.verdict, LoaderVerdict::WaitingOnIo, "{ev:?}");

    let healthy = sim_reading(Scenario::Mixed, 1, 1);
    let hp = &healthy.processes[0];
    assert_eq!(hp.children.len(), 2);
    assert!(hp
        .children
        .iter()
        .all(|c| c.cpu_percent.is_some_and(|x| x < 35.0)));

    assert_eq!(
        sim_reading(Scenario::Mixed, 0, 1),
        cpu,
        "same seed, same run"
    );
    assert!(sim_reading(Scenario::Idle, 0, 1).processes.is_empty());
}

#[test]
fn the_host_probe_leaves_simulated_processes_alone() {
    let reading = sim_reading(Scenario::Starving, 0, 3);
    let mut s = Sample {
        t: 5.0,
        gpus: vec![reading.clone()],
        ..Default::default()
    };
    let mut probe = HostProbe::for_backend("sim");
    assert!(!probe.enriches_processes());
    probe.fill(&mut s);
    assert_eq!(s.gpus[0].processes, reading.processes);
    assert!(s.gpus[0].processes[0].resolved);
    // Host figures are still this machine's.
    assert!(s.host.cpu_count.is_some());
    assert!(HostProbe::for_backend("nvml").enriches_processes());
}

#[test]
fn python_helpers_are_not_workers_and_forkserver_children_are() {
    let mut tracker = worker(101, 100, 0.0, 'S');
    tracker.command =
        Some("python -c from multiprocessing.resource_tracker import main;main(7)".into());
    let mut forkserver = worker(102, 100, 0.0, 'S');
    forkserver.command =
        Some("python -c from multiprocessing.forkserver import main; main(9, 10)".into());
    let p = trainer(
        30.0,
        vec![
            tracker,
            forkserver,
            worker(103, 102, 99.0, 'R'),
            worker(104, 102, 98.0, 'R'),
        ],
    );
    let ev = loader_evidence(&p, &host(4, 0.0)).expect("evidence");
    assert_eq!(ev.workers, 2);
    assert_eq!(ev.mean_worker_cpu, Some(98.5));
    assert_eq!(ev.verdict, LoaderVerdict::CpuSaturated);
}
