//! The library items the tests use, named in one place: when a module of the library moves,
//! this file is the one to change.

pub use gpulse::analyze::{analyze, analyze_path, verdict_over, Report};
pub use gpulse::backend::nvml::NvmlBackend;
pub use gpulse::backend::rocm::smi_parse::{
    merge_amd_static, normalize_bus_id, parse_amd_smi_metric, parse_amd_smi_static, parse_rocm_smi,
    rocm_smi_driver_version, SmiGpu, SmiParseError,
};
pub use gpulse::backend::rocm::smi_runner::{
    self, find_in_path, run_with_timeout, SmiRunError, SmiTool, ROCM_SMI_ARGS,
};
pub use gpulse::backend::rocm::sysfs;
pub use gpulse::backend::rocm::{RocmBackend, RocmOptions};
pub use gpulse::backend::sim::{Scenario, SimBackend, SimConfig};
pub use gpulse::backend::smi_csv::{
    read_log, LogOptions, SmiCsvSource, BACKEND as SMI_CSV_BACKEND,
};
pub use gpulse::backend::{Backend, DeviceError, DeviceSampler, SampleSource};
pub use gpulse::cli::Cli;
pub use gpulse::clock;
pub use gpulse::config::Settings;
pub use gpulse::detector::synth::{self, Polling, SynthJob};
pub use gpulse::detector::{DetectorConfig, FindingEvent};
pub use gpulse::engine::{Engine, EngineConfig, Snapshot};
pub use gpulse::fleet::api::{parse_answer, Answer, ApiError, ResultType, Series};
pub use gpulse::fleet::build::build;
pub use gpulse::fleet::http_client::{encode_query_value, HttpError, MAX_BODY};
pub use gpulse::fleet::http_options::{Auth, ClientOptions};
pub use gpulse::fleet::jobs::{self as fleet_jobs, JobAnswers};
pub use gpulse::fleet::json::to_json as fleet_to_json;
pub use gpulse::fleet::ledger::{self as fleet_ledger, RangeAnswers};
pub use gpulse::fleet::queries::{dcgm_only_instances, raw_util_promql, Grid, Query, QueryResults};
pub use gpulse::fleet::{
    dcgm, rank, refresh_once, DetectorCache, Fleet, FleetOptions, PromClient, Refresher, Source,
};
pub use gpulse::host::jobs::{
    h2c::serve_once as serve_pod_resources_once, inside::OUTSIDE_NOTE,
    pod_resources::encode as pod_resources_encode,
};
pub use gpulse::host::{
    annotate_finding, format_running, loader_evidence, process_rows, signal_target, state_name,
    unresolved_label, HostProbe, LoaderVerdict, ProcessIdentity, ProcessView, Signal, SignalError,
    Signaller, SortKey, TREE_INTERVAL_S,
};
pub use gpulse::ledger::Prices;
pub use gpulse::model::{
    throttle, DeviceInfo, Evidence, Finding, FindingKind, GpuHealth, GpuProcess, GpuReading,
    GpuStatus, HostDetail, HostProcess, HostReading, Job, JobKind, Metrics, MigReading, Runtime,
    Sample, Severity, SystemInfo, ThrottleReason, UtilSampling, UtilWindow, Vendor, XidWatch,
};
pub use gpulse::output::exporter::spawn_server;
pub use gpulse::output::json::snapshot_doc;
pub use gpulse::output::prometheus::{metric_names, render_named, DcgmNames};
pub use gpulse::output::snapshot_text::render as snapshot_text;
pub use gpulse::pipeline::playback::{start as start_replay, ReplayCommand};
pub use gpulse::pipeline::Live;
pub use gpulse::recording::{Recorder, RecordingReader};
pub use gpulse::sampler::Sampler;
pub use gpulse::tui::action::BINDINGS;
pub use gpulse::tui::app::{Focus, Overlay};
pub use gpulse::tui::background_recording::Recording;
pub use gpulse::tui::canvas::PartsTerminal;
pub use gpulse::tui::dialog::{DialogStage, SignalSender};
pub use gpulse::tui::fixture::{whole_screen, SimRun, T0};
pub use gpulse::tui::replay_bar::{ReplaySession, ReplayState};
pub use gpulse::tui::theme::Theme;
pub use gpulse::tui::widgets::ledger::LedgerView;
pub use gpulse::tui::{draw_frame, init_tui_logging, map_key, render, Action, App};
