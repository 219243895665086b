//! Reads one process's job and names it, from the sources the node offers (it runs on the job
//! probe's own thread: some of them block). Every problem (a file unreadable or of an unknown
//! shape, an absent socket, a command that fails) names nothing and is logged once, at debug
//! level, per kind.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::cgroup::{job_of_cgroup_file, CgroupJob};
use super::inside::{self, SelfContext};
use super::kubelet_dirs::{self, ContainerNames, PodNames};
use super::pod_resources::{self, GpuHolders};
use super::runtime_state::{self, StateError};
use super::slurm;
use crate::model::{Job, JobKind};

/// A directory listing is read again on a miss at most this often.
const RELIST_S: f64 = 5.0;
/// How long the kubelet may take to answer.
const SOCKET_TIMEOUT: Duration = Duration::from_secs(2);

/// Where the node's files are: procfs and the file system root (fixture trees in tests).
#[derive(Debug, Clone, PartialEq)]
pub struct JobSources {
    pub proc_root: PathBuf,
    /// The file system root the kubelet's, the runtimes' and the container's own files are read
    /// under (none: only procfs is read).
    pub root: Option<PathBuf>,
    /// The `scontrol` to ask for Slurm job names (none: not asked).
    pub scontrol: Option<PathBuf>,
}

impl JobSources {
    /// The live system's: `/proc`, `/`, and `scontrol` where it is on `PATH`.
    pub fn system() -> Self {
        JobSources {
            proc_root: PathBuf::from("/proc"),
            root: Some(PathBuf::from("/")),
            scontrol: slurm::find_scontrol(),
        }
    }

    /// Only procfs at `proc_root`: cgroups and environments, no names from the node's files.
    pub fn procfs_only(proc_root: impl Into<PathBuf>) -> Self {
        JobSources {
            proc_root: proc_root.into(),
            root: None,
            scontrol: None,
        }
    }
}

/// A listing kept between lookups, read again on a miss once [`RELIST_S`] has passed.
#[derive(Debug)]
struct Listing<T> {
    map: HashMap<String, T>,
    read_at: Option<Instant>,
}

impl<T> Default for Listing<T> {
    fn default() -> Self {
        Listing {
            map: HashMap::new(),
            read_at: None,
        }
    }
}

/// Reads jobs; owned by the probe's thread.
#[derive(Debug)]
pub struct JobReader {
    sources: JobSources,
    context: SelfContext,
    pods: Listing<PodNames>,
    container_logs: Listing<ContainerNames>,
    slurm_names: HashMap<String, Option<String>>,
    /// The kinds of problem already logged.
    logged: HashSet<String>,
}

impl JobReader {
    pub fn new(sources: JobSources) -> Self {
        let context = match &sources.root {
            Some(root) => inside::read(&sources.proc_root, root),
            None => SelfContext::default(),
        };
        JobReader {
            sources,
            context,
            pods: Listing::default(),
            container_logs: Listing::default(),
            slurm_names: HashMap::new(),
            logged: HashSet::new(),
        }
    }

    /// Where the monitor itself runs.
    pub fn context(&self) -> &SelfContext {
        &self.context
    }

    fn log_once(&mut self, kind: &str, message: impl FnOnce() -> String) {
        if self.logged.insert(kind.to_string()) {
            tracing::debug!("jobs: {}", message());
        }
    }

    /// The job of process `pid` (its PID here), named as far as the node allows.
    pub fn job_of(&mut self, pid: u32) -> Option<Job> {
        let path = self.sources.proc_root.join(pid.to_string()).join("cgroup");
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                self.log_once("cgroup", || format!("cannot read {}: {e}", path.display()));
                return None;
            }
        };
        let mut job = match job_of_cgroup_file(&text) {
            CgroupJob::Job(j) => j,
            // Hidden by a cgroup namespace: visible here, so in this container.
            CgroupJob::Hidden => return self.context.job.clone(),
            CgroupJob::None => return None,
        };
        match job.kind {
            JobKind::Pod => self.name_pod(&mut job),
            JobKind::Container => self.name_container(&mut job),
            JobKind::Slurm => self.name_slurm(&mut job, pid),
        }
        Some(job)
    }

    fn name_pod(&mut self, job: &mut Job) {
        if let Some(id) = job.container_id.clone() {
            if let Some(c) = self.container_log(&id) {
                job.name = Some(c.pod);
                job.namespace = Some(c.namespace);
                job.container = Some(c.container);
                return;
            }
            let names = self.runtime_names(&id, job);
            job.container = names.container;
            job.name = names.pod;
            job.namespace = names.namespace;
        }
        if job.name.is_none() {
            if let Some(p) = self.pod_dir(&job.id) {
                if job.container.is_none() && p.containers.len() == 1 {
                    job.container = p.containers.first().cloned();
                }
                job.name = Some(p.name);
                job.namespace = Some(p.namespace);
            }
        }
    }

    fn name_container(&mut self, job: &mut Job) {
        let id = job.id.clone();
        job.name = self.runtime_names(&id, job).container;
    }

    fn runtime_names(&mut self, id: &str, job: &Job) -> runtime_state::RuntimeNames {
        let Some(root) = self.sources.root.clone() else {
            return Default::default();
        };
        match runtime_state::names(&root, id, job.runtime) {
            Ok(n) => n,
            Err(StateError::Unreadable) => {
                let runtime = job.runtime.map_or("runtime", |r| r.as_str());
                self.log_once(&format!("state-{runtime}"), || {
                    format!("no readable {runtime} state names container {id}")
                });
                Default::default()
            }
            Err(StateError::UnknownShape(why)) => {
                self.log_once("state-shape", || {
                    format!("a runtime state file of unknown shape: {why}")
                });
                Default::default()
            }
        }
    }

    fn pod_dir(&mut self, uid: &str) -> Option<PodNames> {
        let dir = self.sources.root.as_ref()?.join("var/log/pods");
        let found = relist(&mut self.pods, uid, || kubelet_dirs::pods(&dir));
        match found {
            Ok(p) => p,
            Err(e) => {
                let shown = dir.display().to_string();
                self.log_once("pod-dirs", || format!("cannot list {shown}: {e}"));
                None
            }
        }
    }

    fn container_log(&mut self, id: &str) -> Option<ContainerNames> {
        let dir = self.sources.root.as_ref()?.join("var/log/containers");
        match relist(&mut self.container_logs, id, || {
            kubelet_dirs::containers(&dir)
        }) {
            Ok(c) => c,
            Err(e) => {
                let shown = dir.display().to_string();
                self.log_once("container-logs", || format!("cannot list {shown}: {e}"));
                None
            }
        }
    }

    fn name_slurm(&mut self, job: &mut Job, pid: u32) {
        if let Some(n) = slurm::name_from_environ(&self.sources.proc_root, pid, &job.id) {
            job.name = Some(n);
            return;
        }
        if let Some(known) = self.slurm_names.get(&job.id) {
            job.name = known.clone();
            return;
        }
        let asked = self
            .sources
            .scontrol
            .clone()
            .and_then(|program| slurm::name_from_scontrol(&program, &job.id));
        if asked.is_none() {
            let id = job.id.clone();
            self.log_once("slurm", || {
                format!("neither the environment nor scontrol names Slurm job {id}")
            });
        }
        self.slurm_names.insert(job.id.clone(), asked.clone());
        job.name = asked;
    }

    /// The kubelet's NVIDIA devices' holders, where its socket answers.
    pub fn gpu_holders(&mut self) -> Option<GpuHolders> {
        let socket = self.sources.root.as_ref()?.join(pod_resources::SOCKET);
        match pod_resources::list(&socket, SOCKET_TIMEOUT) {
            Ok(h) => Some(h),
            Err(e) => {
                let shown = socket.display().to_string();
                self.log_once("pod-resources", || {
                    format!("no pod resources from {shown}: {e}")
                });
                None
            }
        }
    }
}

/// `key` in `listing`, read again (by `read`) on a miss when the last read is older than
/// [`RELIST_S`].
fn relist<T: Clone>(
    listing: &mut Listing<T>,
    key: &str,
    read: impl FnOnce() -> std::io::Result<HashMap<String, T>>,
) -> std::io::Result<Option<T>> {
    if let Some(v) = listing.map.get(key) {
        return Ok(Some(v.clone()));
    }
    if listing
        .read_at
        .is_some_and(|at| at.elapsed().as_secs_f64() < RELIST_S)
    {
        return Ok(None);
    }
    listing.read_at = Some(Instant::now());
    listing.map = read()?;
    Ok(listing.map.get(key).cloned())
}
