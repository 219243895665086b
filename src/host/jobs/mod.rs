//! Whose work each GPU process is, from what the node already knows (no daemon): its cgroup
//! names a Kubernetes pod, a container or a Slurm job ([`cgroup`]); the names come from the
//! kubelet's per-pod log directories ([`kubelet_dirs`]), the container runtime's state
//! ([`runtime_state`]), the process's environment or `scontrol` ([`slurm`]), and, for processes
//! not visible from inside a container, the kubelet's pod-resources socket ([`pod_resources`]).
//! What is read for each runtime, and what needs which permission: `docs/JOBS.md`.
//!
//! Lookups run on a thread of their own ([`JobProbe`]), never on the sampler's: a tick asks for
//! the processes it has not seen and takes the answers that have arrived, so a slow socket or
//! `scontrol` delays a job's name, never a tick. Each process is looked up once per lifetime
//! (PID and start time).

pub mod cgroup;
pub mod h2c;
pub mod inside;
pub mod kubelet_dirs;
pub mod pod_resources;
mod reader;
pub mod runtime_state;
pub mod slurm;

use std::collections::{HashMap, HashSet};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

use crate::model::{GpuProcess, GpuReading, Job, JobKind};
use inside::SelfContext;
use pod_resources::GpuHolders;
pub use reader::{JobReader, JobSources};

/// A process for the lifetime of its PID: its PID here and its start time (clock ticks).
pub type ProcessKey = (u32, u64);

/// How often the kubelet is asked again which pods hold the GPUs, while processes are not visible.
pub const HOLDERS_PERIOD_S: f64 = 30.0;

enum Request {
    Job(ProcessKey),
    Holders,
}

enum Answer {
    Job(ProcessKey, Option<Job>),
    Holders(Option<GpuHolders>),
    Context(SelfContext),
}

/// The tick's side of the lookups: asks the thread, keeps its answers.
#[derive(Debug)]
pub struct JobProbe {
    sources: JobSources,
    channel: Option<(Sender<Request>, Receiver<Answer>)>,
    known: HashMap<ProcessKey, Option<Job>>,
    asked: HashSet<ProcessKey>,
    context: Option<SelfContext>,
    holders: Option<GpuHolders>,
    holders_asked: Option<Instant>,
    /// Whether an answer to the last question about the holders is still to come.
    holders_pending: bool,
}

impl JobProbe {
    /// Look jobs up in `sources`; the thread starts at the first lookup.
    pub fn new(sources: JobSources) -> Self {
        JobProbe {
            sources,
            channel: None,
            known: HashMap::new(),
            asked: HashSet::new(),
            context: None,
            holders: None,
            holders_asked: None,
            holders_pending: false,
        }
    }

    fn start(&mut self) -> Option<&Sender<Request>> {
        if self.channel.is_none() {
            let (req_tx, req_rx) = mpsc::channel::<Request>();
            let (ans_tx, ans_rx) = mpsc::channel::<Answer>();
            let sources = self.sources.clone();
            let spawned = std::thread::Builder::new()
                .name("gpulse-jobs".into())
                .spawn(move || serve(sources, req_rx, ans_tx));
            if let Err(e) = spawned {
                tracing::debug!("jobs: the lookup thread could not start: {e}");
            }
            self.channel = Some((req_tx, ans_rx));
        }
        self.channel.as_ref().map(|(tx, _)| tx)
    }

    /// Take the answers that have arrived.
    fn drain(&mut self) {
        let Some((_, rx)) = &self.channel else {
            return;
        };
        while let Ok(answer) = rx.try_recv() {
            match answer {
                Answer::Job(key, job) => {
                    self.asked.remove(&key);
                    self.known.insert(key, job);
                }
                Answer::Holders(h) => {
                    self.holders = h;
                    self.holders_pending = false;
                }
                Answer::Context(c) => self.context = Some(c),
            }
        }
    }

    /// The job of the process `key` as far as known now; the first call asks for it.
    pub fn job_of(&mut self, key: ProcessKey) -> Option<Job> {
        self.drain();
        if let Some(known) = self.known.get(&key) {
            return known.clone();
        }
        if self.asked.insert(key) {
            if let Some(tx) = self.start() {
                let _ = tx.send(Request::Job(key));
            }
        }
        None
    }

    /// What can be said of a process the driver reports that is not visible here, on the GPU
    /// (or MIG device) with UUID `device`: the pod the kubelet gave that device to, when it gave
    /// it to one pod; else a note, when the monitor runs in a container.
    pub fn outside(&mut self, device: Option<&str>) -> (Option<Job>, Option<String>) {
        self.drain();
        let due = self
            .holders_asked
            .is_none_or(|at| at.elapsed().as_secs_f64() >= HOLDERS_PERIOD_S);
        if due {
            self.holders_asked = Some(Instant::now());
            self.holders_pending = self
                .start()
                .is_some_and(|tx| tx.send(Request::Holders).is_ok());
        }
        let holders = device.and_then(|d| self.holders.as_ref()?.get(d));
        let mut pods: Vec<(&str, &str, &str)> = holders
            .into_iter()
            .flatten()
            .map(|h| (h.namespace.as_str(), h.pod.as_str(), h.container.as_str()))
            .collect();
        pods.sort_unstable();
        pods.dedup_by(|a, b| (a.0, a.1) == (b.0, b.1));
        match pods.as_slice() {
            [(ns, pod, container)] => {
                let mut job = Job::new(JobKind::Pod, format!("{ns}/{pod}"));
                job.name = Some(pod.to_string());
                job.namespace = Some(ns.to_string());
                job.container = Some(container.to_string()).filter(|c| !c.is_empty());
                (Some(job), None)
            }
            [] => {
                let inside = self.context.as_ref().is_some_and(|c| c.in_container);
                (None, inside.then(|| inside::OUTSIDE_NOTE.to_string()))
            }
            many => {
                let names: Vec<String> =
                    many.iter().map(|(ns, p, _)| format!("{p}/{ns}")).collect();
                let note = format!(
                    "the kubelet shares this GPU between pods {}: which one runs this process cannot be read from here",
                    names.join(", ")
                );
                (None, Some(note))
            }
        }
    }

    /// Give each process of `gpu` (whose UUID is `uuid`) its job: a process found here (PID and
    /// start time known) by its cgroup, one not visible here by the device it runs on. A job the
    /// source already gave (simulated, replayed) stays.
    pub fn attribute(&mut self, gpu: &mut GpuReading, uuid: Option<&str>) {
        for p in &mut gpu.processes {
            if p.job.is_some() {
                continue;
            }
            if p.resolved {
                if let Some(start) = p.start_ticks {
                    p.job = self.job_of((p.local_pid.unwrap_or(p.pid), start));
                }
                continue;
            }
            // In MIG mode a process runs on its instance's MIG device.
            let mig = gpu
                .mig
                .iter()
                .find(|m| Some(m.gpu_instance_id) == p.gpu_instance_id)
                .and_then(|m| m.uuid.as_deref());
            let (job, note) = self.outside(mig.or(uuid));
            p.job = job;
            p.job_note = note;
        }
    }

    /// Forget the processes `alive` rejects (they exited).
    pub fn retain(&mut self, alive: impl Fn(&ProcessKey) -> bool) {
        self.known.retain(|k, _| alive(k));
    }

    /// Wait until every lookup asked so far is answered, at most `timeout` (for tests and tools:
    /// a tick never waits).
    pub fn settle(&mut self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            self.drain();
            if self.asked.is_empty() && !self.holders_pending || Instant::now() >= deadline {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// The job that holds the GPU among `processes`: that of the process with the most SM
/// utilization, else the most GPU memory, else the first process with a job.
pub fn dominant_job(processes: &[GpuProcess]) -> Option<&Job> {
    let weight = |p: &GpuProcess| {
        (
            p.sm_util.unwrap_or(0.0),
            p.gpu_memory_bytes.unwrap_or(0) as f64,
        )
    };
    processes
        .iter()
        .filter(|p| p.job.is_some())
        .max_by(|a, b| {
            let (wa, wb) = (weight(a), weight(b));
            wa.0.total_cmp(&wb.0)
                .then(wa.1.total_cmp(&wb.1))
                .then(b.pid.cmp(&a.pid))
        })
        .and_then(|p| p.job.as_ref())
}

/// The lookup thread: answers requests until the probe is dropped.
fn serve(sources: JobSources, requests: Receiver<Request>, answers: Sender<Answer>) {
    let mut reader = JobReader::new(sources);
    if answers
        .send(Answer::Context(reader.context().clone()))
        .is_err()
    {
        return;
    }
    while let Ok(req) = requests.recv() {
        let answer = match req {
            Request::Job(key) => Answer::Job(key, reader.job_of(key.0)),
            Request::Holders => Answer::Holders(reader.gpu_holders()),
        };
        if answers.send(answer).is_err() {
            return;
        }
    }
}
