//! Host-side evidence for findings: what the training process's DataLoader workers are doing when a
//! GPU starves, and which process holds the memory of a GPU that computes nothing.
//!
//! The GPU counters say the GPU waits; the workers say why. Workers all near 100% CPU: the
//! transforms cost more than the workers can do (add workers or make transforms cheaper). Workers in
//! disk wait (`D`) or a high host iowait: storage cannot deliver. Few workers (a quarter of the
//! cores or fewer), not saturated: raise `num_workers`. Workers mostly asleep at low CPU, with no
//! disk wait and the training process not busy: they wait on something else (network storage, an
//! object store, a remote service, a lock). No workers and the training process itself at 100%:
//! loading runs in the training process.

use serde::Serialize;

use crate::model::{Finding, FindingKind, GpuProcess, HostProcess, HostReading};

/// Mean worker CPU (percent of one core) from which workers count as saturated.
pub const SATURATED_PERCENT: f64 = 80.0;
/// Host iowait (percent of all CPU time) from which storage counts as the bottleneck.
pub const HIGH_IOWAIT_PERCENT: f64 = 20.0;
/// Training-process CPU from which it counts as CPU-bound itself.
pub const MAIN_BUSY_PERCENT: f64 = 85.0;
/// Mean worker CPU below which workers that mostly sleep count as waiting rather than working.
pub const WAITING_WORKER_PERCENT: f64 = 50.0;

/// What the workers are doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoaderVerdict {
    /// Workers all near 100% CPU.
    CpuSaturated,
    /// Workers waiting on disk, or the host waiting on I/O.
    WaitingOnIo,
    /// Far fewer workers than cores, and they are not the limit.
    TooFewWorkers,
    /// Workers mostly asleep at low CPU, not on local disk: waiting on a remote source or a lock.
    WaitingOnSource,
    /// No workers; the training process does the loading at full CPU.
    NoWorkers,
}

/// The numbers behind a verdict, and the words for a finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoaderEvidence {
    pub verdict: LoaderVerdict,
    pub pid: u32,
    /// Worker processes (see [`workers`]).
    pub workers: usize,
    /// Mean CPU of the workers with a rate, percent of one core (absent before two readings).
    pub mean_worker_cpu: Option<f64>,
    /// Workers in disk wait (`D`).
    pub workers_in_disk_wait: usize,
    pub main_cpu: Option<f64>,
    pub cores: Option<u32>,
    pub iowait_percent: Option<f64>,
    /// One sentence for `evidence.notes`.
    pub note: String,
    /// What to do, for the finding's advice.
    pub advice: String,
    /// The one change to make and its evidence, for the finding's `fix`.
    pub fix: String,
}

/// Helper processes Python starts beside DataLoader workers; never counted as workers.
const HELPERS: [&str; 4] = [
    "resource_tracker",
    "semaphore_tracker",
    "forkserver",
    "compile_worker",
];

fn is_helper(p: &HostProcess) -> bool {
    p.command
        .as_deref()
        .is_some_and(|c| HELPERS.iter().any(|h| c.contains(h)))
}

/// The workers of `proc`: its children that have not exited and are not Python's helper
/// processes, plus the children of a multiprocessing forkserver (which is where workers live with
/// the `forkserver` start method).
pub fn workers(proc: &GpuProcess) -> Vec<&HostProcess> {
    let own = proc.local_pid.unwrap_or(proc.pid);
    let forkservers: Vec<u32> = proc
        .children
        .iter()
        .filter(|c| {
            c.ppid == Some(own)
                && c.command
                    .as_deref()
                    .is_some_and(|x| x.contains("forkserver"))
        })
        .map(|c| c.pid)
        .collect();
    proc.children
        .iter()
        .filter(|c| {
            c.ppid
                .is_some_and(|pp| pp == own || forkservers.contains(&pp))
        })
        .filter(|c| c.state != Some('Z') && c.state != Some('X') && !is_helper(c))
        .collect()
}

/// Judge one GPU process's DataLoader workers. `None` when the host shows nothing that explains a
/// starving GPU (or the process is not visible here).
pub fn loader_evidence(proc: &GpuProcess, host: &HostReading) -> Option<LoaderEvidence> {
    if !proc.resolved {
        return None;
    }
    let ws = workers(proc);
    let rates: Vec<f64> = ws.iter().filter_map(|w| w.cpu_percent).collect();
    let n = ws.len();
    let mut ev = LoaderEvidence {
        verdict: LoaderVerdict::CpuSaturated,
        pid: proc.pid,
        workers: n,
        mean_worker_cpu: (!rates.is_empty())
            .then(|| rates.iter().sum::<f64>() / rates.len() as f64),
        workers_in_disk_wait: ws.iter().filter(|w| w.state == Some('D')).count(),
        main_cpu: proc.cpu_percent,
        cores: host.cpu_count,
        iowait_percent: host.iowait_percent,
        note: String::new(),
        advice: String::new(),
        fix: String::new(),
    };
    let sleeping = ws.iter().filter(|w| w.state == Some('S')).count();
    ev.verdict = judge(&ev, sleeping)?;
    let spare = idle_cores(host, n + 1);
    (ev.note, ev.advice, ev.fix) = words(&ev, host, sleeping, spare);
    Some(ev)
}

/// The verdict on workers whose numbers are in `ev`, `sleeping` of them asleep; `None` when they
/// explain nothing.
fn judge(ev: &LoaderEvidence, sleeping: usize) -> Option<LoaderVerdict> {
    let n = ev.workers;
    let mean = ev.mean_worker_cpu;
    let iowait_high = ev
        .iowait_percent
        .is_some_and(|io| io >= HIGH_IOWAIT_PERCENT);
    let in_d = ev.workers_in_disk_wait;
    if n > 0 && (in_d * 2 >= n || (iowait_high && mean.is_some_and(|m| m < SATURATED_PERCENT))) {
        return Some(LoaderVerdict::WaitingOnIo);
    }
    if n == 0 {
        ev.main_cpu.filter(|c| *c >= MAIN_BUSY_PERCENT)?;
        return Some(LoaderVerdict::NoWorkers);
    }
    if mean.is_some_and(|m| m >= SATURATED_PERCENT) {
        return Some(LoaderVerdict::CpuSaturated);
    }
    if ev.cores.is_some_and(|c| n * 4 <= c as usize) {
        return Some(LoaderVerdict::TooFewWorkers);
    }
    let main_busy = ev.main_cpu.is_some_and(|c| c >= MAIN_BUSY_PERCENT);
    if sleeping * 2 > n && !main_busy && mean.is_some_and(|m| m < WAITING_WORKER_PERCENT) {
        return Some(LoaderVerdict::WaitingOnSource);
    }
    None
}

/// The note, the advice and the fix for a verdict: `spare` cores are free for more workers.
fn words(
    ev: &LoaderEvidence,
    host: &HostReading,
    sleeping: usize,
    spare: Option<usize>,
) -> (String, String, String) {
    let n = ev.workers;
    let cores_txt = ev
        .cores
        .map_or_else(String::new, |c| format!(" on {c} cores"));
    let (mean_txt, cpu_txt) = ev.mean_worker_cpu.map_or_else(
        || {
            (
                "CPU not yet measured".to_string(),
                "CPU not yet measured".to_string(),
            )
        },
        |m| (format!("mean {m:.0}% CPU"), format!("{m:.0}% CPU")),
    );
    let main = ev.main_cpu.unwrap_or_default();
    match ev.verdict {
        LoaderVerdict::WaitingOnIo => storage_words(ev, &mean_txt),
        LoaderVerdict::NoWorkers => (
            format!(
                "no DataLoader workers: the training process loads data itself at {main:.0}% \
                 CPU{cores_txt}"
            ),
            "Loading runs in the training process: set DataLoader(num_workers=N) (start with the \
             number of free cores) and pin_memory=True."
                .to_string(),
            format!(
                "num_workers 0→{}: the training process loads at {main:.0}% CPU",
                idle_cores(host, 1).map_or_else(|| "N".to_string(), |c| c.clamp(2, 8).to_string())
            ),
        ),
        LoaderVerdict::CpuSaturated => {
            let note = format!("{n} DataLoader workers, {mean_txt}{cores_txt}: CPU-saturated");
            let (advice, fix) = saturated_words(n, &cpu_txt, spare);
            (note, advice, fix)
        }
        LoaderVerdict::TooFewWorkers => {
            let c = ev.cores.unwrap_or_default();
            (
                format!("only {n} DataLoader workers on {c} cores ({mean_txt})"),
                format!(
                    "Few workers for this machine: raise num_workers (now {n}, {c} cores) and \
                     prefetch_factor."
                ),
                format!(
                    "num_workers {n}→{}: {n} workers on {c} cores at {cpu_txt}",
                    (n * 2).max(c as usize / 4)
                ),
            )
        }
        LoaderVerdict::WaitingOnSource => (
            format!(
                "{n} DataLoader workers, {sleeping} asleep, {mean_txt}{cores_txt}, none in disk \
                 wait: they wait on something other than the CPU or local disk"
            ),
            format!(
                "The workers mostly wait, neither computing nor reading local disk: a network \
                 file system, object store or remote service is slow to answer (or a lock holds \
                 them). Cache the data set on local NVMe or in RAM, or keep more requests in \
                 flight: raise num_workers (now {n}) and prefetch_factor, or read with several \
                 threads per worker."
            ),
            format!(
                "local data cache or num_workers {n}→{}: {sleeping} of {n} workers asleep at \
                 {cpu_txt}, none in disk wait",
                n * 2
            ),
        ),
    }
}

/// Words for workers waiting on storage.
fn storage_words(ev: &LoaderEvidence, mean_txt: &str) -> (String, String, String) {
    let (n, in_d) = (ev.workers, ev.workers_in_disk_wait);
    let io = |label: &str| {
        ev.iowait_percent
            .map_or_else(String::new, |io| format!(", {label} {io:.0}%"))
    };
    (
        format!(
            "{n} DataLoader workers, {in_d} waiting on disk (D), {mean_txt}{}: storage is the \
             bottleneck",
            io("host iowait")
        ),
        "Storage is the bottleneck: move the data set to local NVMe or RAM, use a sequential \
         format (WebDataset, TFRecord, LMDB), or cache decoded samples."
            .to_string(),
        format!(
            "data on local NVMe or RAM: {in_d} of {n} workers waiting on disk{}",
            io("iowait")
        ),
    )
}

/// The advice and the fix for `n` CPU-bound workers with `spare` cores free.
fn saturated_words(n: usize, cpu_txt: &str, spare: Option<usize>) -> (String, String) {
    match spare {
        Some(s) if s >= 2 => (
            format!(
                "The workers are CPU-bound and {s} cores are free: raise num_workers (now {n}) or \
                 make transforms cheaper."
            ),
            format!(
                "num_workers {n}→{}: {n} workers at {cpu_txt}, {s} cores idle",
                n + s.min(n)
            ),
        ),
        _ => (
            "The workers are CPU-bound and no cores are free: make transforms cheaper (decode on \
             the GPU, e.g. DALI or torchvision.io on CUDA; pre-process offline)."
                .to_string(),
            format!(
                "cheaper transforms (decode on the GPU): {n} workers at {cpu_txt}, no core idle"
            ),
        ),
    }
}

/// Cores free for more workers: those not taken by `taken` processes (the workers and the
/// training process), and no more than the host measured idle (other jobs use cores too). `None`
/// when the core count is unknown.
fn idle_cores(host: &HostReading, taken: usize) -> Option<usize> {
    let cores = host.cpu_count? as usize;
    let spare = cores.saturating_sub(taken);
    Some(match host.cpu_percent {
        Some(busy) => {
            let idle = cores as f64 * (100.0 - busy.clamp(0.0, 100.0)) / 100.0;
            spare.min(idle.floor() as usize)
        }
        None => spare,
    })
}

/// Marks what [`annotate_finding`] added, so that annotating again replaces rather than repeats.
const NOTE_PREFIX: &str = "host: ";
/// Joins the host's advice to the finding's: after a sentence, a new one; after a list of fixes
/// (the rules' advice ends without a full stop), one more item.
const ADVICE_MARKS: [&str; 2] = [" Host: ", "; host: "];

/// Add host evidence to a finding. Input starvation and erratic stalls: one note per GPU process
/// with loader evidence, the first process's advice appended to the finding's advice and its fix
/// as the finding's `fix`. Memory held idle: the process holding the most memory as the `fix`.
/// Other kinds are left alone. Calling it again replaces what an earlier call added.
pub fn annotate_finding(finding: &mut Finding, procs: &[GpuProcess], host: &HostReading) {
    match finding.kind {
        FindingKind::InputStarvation | FindingKind::ErraticStalls => {
            annotate_loader(finding, procs, host)
        }
        FindingKind::MemoryIdle => finding.evidence.fix = memory_holder(procs),
        _ => {}
    }
}

fn annotate_loader(finding: &mut Finding, procs: &[GpuProcess], host: &HostReading) {
    finding
        .evidence
        .notes
        .retain(|n| !n.starts_with(NOTE_PREFIX));
    if let Some(i) = ADVICE_MARKS
        .iter()
        .filter_map(|m| finding.advice.find(m))
        .min()
    {
        finding.advice.truncate(i);
    }
    // The biggest GPU users first: their loaders matter most.
    let mut ordered: Vec<&GpuProcess> = procs.iter().collect();
    ordered.sort_by_key(|p| std::cmp::Reverse(p.gpu_memory_bytes.unwrap_or(0)));
    let mut first: Option<LoaderEvidence> = None;
    for p in ordered {
        if let Some(ev) = loader_evidence(p, host) {
            finding
                .evidence
                .notes
                .push(format!("{NOTE_PREFIX}pid {}: {}", ev.pid, ev.note));
            first.get_or_insert(ev);
        }
    }
    finding.evidence.fix = first.as_ref().map(|ev| ev.fix.clone());
    if let Some(ev) = first {
        let mark = ADVICE_MARKS[usize::from(!finding.advice.ends_with('.'))];
        finding.advice = format!("{}{mark}{}", finding.advice, ev.advice);
    }
}

/// Longest command shown in a fix; longer ones keep their start and end.
const FIX_COMMAND_CHARS: usize = 60;

/// The process holding the most GPU memory, in words: pid, user, memory held and command
/// ("pid 4103 alice holds 123 GiB: python serve.py"). `None` when no process reports memory.
fn memory_holder(procs: &[GpuProcess]) -> Option<String> {
    let p = procs
        .iter()
        .filter(|p| p.gpu_memory_bytes.is_some())
        .max_by_key(|p| p.gpu_memory_bytes)?;
    let gib = p.gpu_memory_bytes.unwrap_or_default() as f64 / (1u64 << 30) as f64;
    let user = p
        .user
        .as_deref()
        .map_or_else(String::new, |u| format!(" {u}"));
    let command = p.command.as_deref().map_or_else(String::new, |c| {
        let n = c.chars().count();
        if n <= FIX_COMMAND_CHARS {
            format!(": {c}")
        } else {
            let head: String = c.chars().take(FIX_COMMAND_CHARS / 3).collect();
            let tail: String = c.chars().skip(n - FIX_COMMAND_CHARS * 2 / 3).collect();
            format!(": {head}…{tail}")
        }
    });
    Some(format!("pid {}{user} holds {gib:.0} GiB{command}", p.pid))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Evidence, Severity};

    fn worker(pid: u32, cpu: f64, state: char) -> HostProcess {
        HostProcess {
            pid,
            ppid: Some(100),
            cpu_percent: Some(cpu),
            state: Some(state),
            rss_bytes: None,
            command: Some("python train.py".into()),
            start_ticks: None,
        }
    }

    fn trainer(workers: Vec<HostProcess>) -> GpuProcess {
        GpuProcess {
            pid: 100,
            user: Some("alice".into()),
            cpu_percent: Some(30.0),
            gpu_memory_bytes: Some(30 << 30),
            command: Some("python train.py".into()),
            resolved: true,
            children: workers,
            ..Default::default()
        }
    }

    fn host(cores: u32, busy: f64) -> HostReading {
        HostReading {
            cpu_count: Some(cores),
            cpu_percent: Some(busy),
            iowait_percent: Some(0.5),
            ..Default::default()
        }
    }

    fn finding(kind: FindingKind) -> Finding {
        Finding {
            kind,
            severity: Severity::High,
            gpu: 0,
            start: 0.0,
            end: None,
            detected_at: 1.0,
            evidence: Evidence::default(),
            summary: String::new(),
            advice: "more DataLoader workers".into(),
        }
    }

    #[test]
    fn the_fix_names_the_change_and_its_evidence() {
        // 4 saturated workers on 16 cores, a quarter of the host busy: 11 cores free (16 less
        // the 5 processes of the job), 12 measured idle.
        let ws = (1..=4).map(|k| worker(100 + k, 99.0, 'R')).collect();
        let mut f = finding(FindingKind::InputStarvation);
        annotate_finding(&mut f, &[trainer(ws)], &host(16, 25.0));
        assert_eq!(
            f.evidence.fix.as_deref(),
            Some("num_workers 4→8: 4 workers at 99% CPU, 11 cores idle")
        );
        // A busy host leaves fewer cores than the job does not take.
        let ws = (1..=4).map(|k| worker(100 + k, 99.0, 'R')).collect();
        annotate_finding(&mut f, &[trainer(ws)], &host(16, 90.0));
        assert_eq!(
            f.evidence.fix.as_deref(),
            Some("cheaper transforms (decode on the GPU): 4 workers at 99% CPU, no core idle")
        );
        // Workers in disk wait: storage.
        let ws = (1..=4).map(|k| worker(100 + k, 5.0, 'D')).collect();
        annotate_finding(&mut f, &[trainer(ws)], &host(16, 25.0));
        assert_eq!(
            f.evidence.fix.as_deref(),
            Some("data on local NVMe or RAM: 4 of 4 workers waiting on disk, iowait 0%")
        );
        // Nothing on the host explains it: no fix, the advice stands alone.
        let ws = (1..=16).map(|k| worker(100 + k, 60.0, 'R')).collect();
        annotate_finding(&mut f, &[trainer(ws)], &host(16, 25.0));
        assert_eq!(f.evidence.fix, None);
        assert_eq!(f.advice, "more DataLoader workers");
    }

    #[test]
    fn memory_held_idle_names_the_process_holding_it() {
        let small = GpuProcess {
            pid: 7,
            gpu_memory_bytes: Some(1 << 30),
            ..Default::default()
        };
        let mut f = finding(FindingKind::MemoryIdle);
        annotate_finding(
            &mut f,
            &[small.clone(), trainer(Vec::new())],
            &host(16, 25.0),
        );
        assert_eq!(
            f.evidence.fix.as_deref(),
            Some("pid 100 alice holds 30 GiB: python train.py")
        );
        // A long command keeps its start and its end.
        let long = GpuProcess {
            command: Some(format!("python serve.py {} --port 8080", "x".repeat(80))),
            ..trainer(Vec::new())
        };
        annotate_finding(&mut f, &[long], &host(16, 25.0));
        let fix = f.evidence.fix.clone().unwrap_or_default();
        assert!(
            fix.contains("python serve.py") && fix.ends_with("--port 8080"),
            "{fix}"
        );
        assert!(fix.chars().count() < 100, "{fix}");
        // No process reports memory: nothing to name.
        annotate_finding(&mut f, &[GpuProcess::default()], &host(16, 25.0));
        assert_eq!(f.evidence.fix, None);
    }
}
