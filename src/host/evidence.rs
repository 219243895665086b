//! Host-side evidence for input starvation: what the training process's DataLoader workers are doing.
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
    let mean = (!rates.is_empty()).then(|| rates.iter().sum::<f64>() / rates.len() as f64);
    let in_d = ws.iter().filter(|w| w.state == Some('D')).count();
    let cores = host.cpu_count;
    let n = ws.len();
    let mut ev = LoaderEvidence {
        verdict: LoaderVerdict::CpuSaturated,
        pid: proc.pid,
        workers: n,
        mean_worker_cpu: mean,
        workers_in_disk_wait: in_d,
        main_cpu: proc.cpu_percent,
        cores,
        iowait_percent: host.iowait_percent,
        note: String::new(),
        advice: String::new(),
    };
    let cores_txt = cores.map_or_else(String::new, |c| format!(" on {c} cores"));
    let mean_txt = mean.map_or_else(
        || "CPU not yet measured".to_string(),
        |m| format!("mean {m:.0}% CPU"),
    );
    let iowait_high = host
        .iowait_percent
        .is_some_and(|io| io >= HIGH_IOWAIT_PERCENT);

    if n > 0 && (in_d * 2 >= n || (iowait_high && mean.is_some_and(|m| m < SATURATED_PERCENT))) {
        ev.verdict = LoaderVerdict::WaitingOnIo;
        let io = host
            .iowait_percent
            .map_or_else(String::new, |io| format!(", host iowait {io:.0}%"));
        ev.note = format!(
            "{n} DataLoader workers, {in_d} waiting on disk (D), {mean_txt}{io}: storage is the bottleneck"
        );
        ev.advice = "Storage is the bottleneck: move the data set to local NVMe or RAM, use a \
                     sequential format (WebDataset, TFRecord, LMDB), or cache decoded samples."
            .to_string();
        return Some(ev);
    }
    if n == 0 {
        let main = proc.cpu_percent.filter(|c| *c >= MAIN_BUSY_PERCENT)?;
        ev.verdict = LoaderVerdict::NoWorkers;
        ev.note = format!(
            "no DataLoader workers: the training process loads data itself at {main:.0}% CPU{cores_txt}"
        );
        ev.advice = "Loading runs in the training process: set DataLoader(num_workers=N) \
                     (start with the number of free cores) and pin_memory=True."
            .to_string();
        return Some(ev);
    }
    let spare = cores.map(|c| (c as usize).saturating_sub(n + 1));
    if mean.is_some_and(|m| m >= SATURATED_PERCENT) {
        ev.verdict = LoaderVerdict::CpuSaturated;
        ev.note = format!("{n} DataLoader workers, {mean_txt}{cores_txt}: CPU-saturated");
        ev.advice = match spare {
            Some(s) if s >= 2 => format!(
                "The workers are CPU-bound and {s} cores are free: raise num_workers (now {n}) or \
                 make transforms cheaper."
            ),
            _ => "The workers are CPU-bound and no cores are free: make transforms cheaper \
                  (decode on the GPU, e.g. DALI or torchvision.io on CUDA; pre-process offline)."
                .to_string(),
        };
        return Some(ev);
    }
    if let Some(c) = cores.filter(|c| n * 4 <= *c as usize) {
        ev.verdict = LoaderVerdict::TooFewWorkers;
        ev.note = format!("only {n} DataLoader workers on {c} cores ({mean_txt})");
        ev.advice = format!(
            "Few workers for this machine: raise num_workers (now {n}, {c} cores) and prefetch_factor."
        );
        return Some(ev);
    }
    let sleeping = ws.iter().filter(|w| w.state == Some('S')).count();
    let main_busy = proc.cpu_percent.is_some_and(|c| c >= MAIN_BUSY_PERCENT);
    if sleeping * 2 > n && !main_busy && mean.is_some_and(|m| m < WAITING_WORKER_PERCENT) {
        ev.verdict = LoaderVerdict::WaitingOnSource;
        ev.note = format!(
            "{n} DataLoader workers, {sleeping} asleep, {mean_txt}{cores_txt}, none in disk wait: \
             they wait on something other than the CPU or local disk"
        );
        ev.advice = format!(
            "The workers mostly wait, neither computing nor reading local disk: a network file \
             system, object store or remote service is slow to answer (or a lock holds them). \
             Cache the data set on local NVMe or in RAM, or keep more requests in flight: raise \
             num_workers (now {n}) and prefetch_factor, or read with several threads per worker."
        );
        return Some(ev);
    }
    None
}

/// Marks what [`annotate_finding`] added, so that annotating again replaces rather than repeats.
const NOTE_PREFIX: &str = "host: ";
/// Joins the host's advice to the finding's: after a sentence, a new one; after a list of fixes
/// (the rules' advice ends without a full stop), one more item.
const ADVICE_MARKS: [&str; 2] = [" Host: ", "; host: "];

/// Add host evidence to an input-starvation or erratic-stalls finding: one note per GPU process
/// with evidence, and the first process's advice appended to the finding's advice. Other kinds are
/// left alone. Calling it again replaces what an earlier call added.
pub fn annotate_finding(finding: &mut Finding, procs: &[GpuProcess], host: &HostReading) {
    if !matches!(
        finding.kind,
        FindingKind::InputStarvation | FindingKind::ErraticStalls
    ) {
        return;
    }
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
    let mut advice: Option<String> = None;
    for p in ordered {
        if let Some(ev) = loader_evidence(p, host) {
            finding
                .evidence
                .notes
                .push(format!("{NOTE_PREFIX}pid {}: {}", ev.pid, ev.note));
            advice.get_or_insert(ev.advice);
        }
    }
    if let Some(a) = advice {
        let mark = ADVICE_MARKS[usize::from(!finding.advice.ends_with('.'))];
        finding.advice = format!("{}{mark}{a}", finding.advice);
    }
}
