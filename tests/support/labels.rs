//! The labels of the recorded H200 jobs (`labels.json` in each folder under `tests/data/h200`;
//! the fields are described in `tests/data/README.md`): what each job was, the verdicts a good
//! detector may reach, and the bounds each check of the job takes. A field the tests do not know
//! is an error, so a misspelt bound cannot silently go unchecked.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use super::api::{FindingKind, Severity};

/// The folder of the H200 recordings.
pub fn h200() -> PathBuf {
    super::repo("tests/data/h200")
}

/// The inputs a job's folder may hold, each fed to the detector as a user would feed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
pub enum Input {
    /// `recording.ndjson.zst`: `gpulse record` beside the job.
    #[serde(rename = "recording")]
    Recording,
    /// `nvidia-smi.csv`: the `nvidia-smi --query-gpu=... -lms 250` log of the same job.
    #[serde(rename = "nvidia-smi")]
    NvidiaSmi,
    /// `poller.csv`: a 50 ms NVML poller's trace of the same job.
    #[serde(rename = "poller")]
    Poller,
}

impl Input {
    pub const ALL: [Input; 3] = [Input::Recording, Input::NvidiaSmi, Input::Poller];

    pub fn file(self) -> &'static str {
        match self {
            Input::Recording => "recording.ndjson.zst",
            Input::NvidiaSmi => "nvidia-smi.csv",
            Input::Poller => "poller.csv",
        }
    }

    /// Whether the input reads tensor-core activity (GPM): a gpulse recording and the poller's
    /// trace do, an nvidia-smi log does not.
    pub fn reads_tensor_activity(self) -> bool {
        self != Input::NvidiaSmi
    }

    pub fn name(self) -> &'static str {
        match self {
            Input::Recording => "recording",
            Input::NvidiaSmi => "nvidia-smi",
            Input::Poller => "poller",
        }
    }
}

/// A bound for every input alike, or one per input (an input not named has none).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum PerInput {
    Every(f64),
    Each(BTreeMap<Input, f64>),
}

impl PerInput {
    pub fn of(&self, input: Input) -> Option<f64> {
        match self {
            PerInput::Every(x) => Some(*x),
            PerInput::Each(m) => m.get(&input).copied(),
        }
    }
}

/// A period a finding must carry: within `within_s` of `s` (strictly).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamedPeriod {
    pub s: f64,
    pub within_s: f64,
}

impl NamedPeriod {
    pub fn holds(&self, p: Option<f64>) -> bool {
        p.is_some_and(|p| (p - self.s).abs() < self.within_s)
    }
}

/// Bounds on the job's own recording replayed tick by tick through the engine.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Replayed {
    pub named_within_periods: f64,
    pub cleared_within_periods: f64,
}

/// One job's label. In a job's own folder every field applies to its inputs; in a folder of a
/// recording of several jobs an entry gives the job's window and what the whole recording must
/// show while it ran (its verdict and the rest are in the job's own folder).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Label {
    /// The job's folder name (the key in `labels.json`).
    #[serde(skip)]
    pub job: String,
    pub verdict: Option<FindingKind>,
    #[serde(default)]
    pub also: Vec<FindingKind>,
    #[serde(default)]
    pub not: Vec<FindingKind>,
    #[serde(default)]
    pub why: String,
    pub start: f64,
    /// In a recording of several jobs: when the job's process began working on the GPU, where
    /// its start-up (model load, algorithm search, warm-up) ran long before `start`.
    pub process_start: Option<f64>,
    pub end: Option<f64>,
    pub onset: Option<f64>,
    pub recovered: Option<f64>,
    pub bursts_per_cycle: Option<usize>,
    #[serde(default)]
    pub aperiodic: bool,
    pub period_s: Option<f64>,
    pub period_tolerance: Option<f64>,
    pub severity_at_most: Option<Severity>,
    pub readings_over: Option<u64>,
    pub named_within_s: Option<PerInput>,
    pub named_within_periods: Option<PerInput>,
    #[serde(default)]
    pub named_before_end: bool,
    pub named_period: Option<NamedPeriod>,
    pub true_period_between_s: Option<[f64; 2]>,
    pub cleared_within_periods: Option<f64>,
    pub held_for_share_of_starving: Option<f64>,
    pub findings_at_most: Option<usize>,
    pub stall_findings: Option<usize>,
    pub lasts_to_end_within_s: Option<f64>,
    pub ends_within_s: Option<f64>,
    pub lost_share: Option<[f64; 2]>,
    pub wait_share: Option<f64>,
    pub lost_fraction_between: Option<[f64; 2]>,
    pub verdict_within_s: Option<PerInput>,
    pub watched_within_s: Option<f64>,
    pub findings_end_within_s: Option<f64>,
    #[serde(default)]
    pub period_confirmed_later: bool,
    pub idle_from_recording_start_s: Option<f64>,
    pub watch_share_at_most: Option<f64>,
    pub replayed: Option<Replayed>,
}

/// A starving job is named within this many seconds of its onset unless its label says more.
pub const NAMED_WITHIN_S: f64 = 15.0;
/// A period is right within this share of the true one unless the label says otherwise.
pub const PERIOD_TOLERANCE: f64 = 0.15;

impl Label {
    /// Where the job's own findings may begin: its process's start, else `start`.
    pub fn own_from(&self) -> f64 {
        self.process_start.unwrap_or(self.start)
    }

    /// When the job's bottleneck began: `onset`, else `start`.
    pub fn begin(&self) -> f64 {
        self.onset.unwrap_or(self.start)
    }

    pub fn end(&self) -> f64 {
        self.end
            .unwrap_or_else(|| panic!("{}: the label has no end", self.job))
    }

    /// The verdicts the label accepts: `verdict`, then `also`.
    pub fn accepted(&self) -> Vec<FindingKind> {
        self.verdict.iter().chain(&self.also).copied().collect()
    }

    /// The verdicts the label accepts from `input`: a job labelled `tensor_cores_idle` reads
    /// `healthy` from an input without tensor-core activity, which cannot tell.
    pub fn accepted_from(&self, input: Input) -> Vec<FindingKind> {
        self.accepted()
            .into_iter()
            .map(|k| match k {
                FindingKind::TensorCoresIdle if !input.reads_tensor_activity() => {
                    FindingKind::Healthy
                }
                k => k,
            })
            .collect()
    }

    /// How soon a starving job must be named from `input`: the label's bound for it, else
    /// [`NAMED_WITHIN_S`].
    pub fn named_within_s_from(&self, input: Input) -> f64 {
        self.named_within_s
            .as_ref()
            .and_then(|p| p.of(input))
            .unwrap_or(NAMED_WITHIN_S)
    }

    pub fn period_tolerance(&self) -> f64 {
        self.period_tolerance.unwrap_or(PERIOD_TOLERANCE)
    }

    pub fn bursts_per_cycle(&self) -> usize {
        self.bursts_per_cycle.unwrap_or(1).max(1)
    }
}

/// A folder under `tests/data/h200` and the labels of its `labels.json`.
#[derive(Debug, Clone)]
pub struct Folder {
    pub name: String,
    pub path: PathBuf,
    pub labels: Vec<Label>,
}

impl Folder {
    pub fn open(name: &str) -> Folder {
        let path = h200().join(name);
        let file = path.join("labels.json");
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let map: BTreeMap<String, Label> =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let mut labels: Vec<Label> = map
            .into_iter()
            .map(|(job, mut l)| {
                l.job = job;
                l
            })
            .collect();
        labels.sort_by(|a, b| a.start.total_cmp(&b.start));
        Folder {
            name: name.to_string(),
            path,
            labels,
        }
    }

    /// A job's own folder: its one label is keyed by the folder's name.
    pub fn is_job(&self) -> bool {
        self.labels.len() == 1 && self.labels[0].job == self.name
    }

    /// The label of a job's own folder.
    pub fn label(&self) -> &Label {
        assert!(self.is_job(), "{}: not a job's own folder", self.name);
        &self.labels[0]
    }

    /// The entry of `job` in a folder of several jobs.
    pub fn entry(&self, job: &str) -> &Label {
        self.labels
            .iter()
            .find(|l| l.job == job)
            .unwrap_or_else(|| panic!("{}: no job {job}", self.name))
    }

    /// The file of `input`, where the folder holds one.
    pub fn input(&self, input: Input) -> Option<PathBuf> {
        Some(self.path.join(input.file())).filter(|p| p.exists())
    }

    pub fn recording(&self) -> PathBuf {
        self.input(Input::Recording)
            .unwrap_or_else(|| panic!("{}: no recording", self.name))
    }
}

/// Every folder under `tests/data/h200`, by name.
pub fn folders() -> Vec<Folder> {
    let mut names: Vec<String> = std::fs::read_dir(h200())
        .expect("tests/data/h200")
        .map(|e| e.expect("a folder entry"))
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names.iter().map(|n| Folder::open(n)).collect()
}

/// The label of the job whose own folder is `name`.
pub fn job(name: &str) -> Label {
    Folder::open(name).label().clone()
}
