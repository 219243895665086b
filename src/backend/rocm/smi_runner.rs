//! The slow source: runs `rocm-smi` (or `amd-smi`) as a subprocess on its own thread.
//!
//! These tools take a second or more per call, so they never run on the sampling tick. A poller
//! thread runs the tool every `period`, kills it (and anything it started) when it overruns
//! `timeout`, parses the output and publishes the result with the time it was taken. The device
//! samplers read the latest result and drop it once it is older than `stale_after`.

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::smi_parse::{self, SmiGpu};

/// The flags gpulse passes to rocm-smi.
pub const ROCM_SMI_ARGS: &[&str] = &[
    "--showuse",
    "--showmemuse",
    "--showpower",
    "--showtemp",
    "--showclocks",
    "--showmeminfo",
    "vram",
    "--showbus",
    "--showproductname",
    "--json",
];

/// Which SMI tool answers on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SmiTool {
    RocmSmi(PathBuf),
    AmdSmi(PathBuf),
}

impl SmiTool {
    pub fn name(&self) -> &'static str {
        match self {
            SmiTool::RocmSmi(_) => "rocm-smi",
            SmiTool::AmdSmi(_) => "amd-smi",
        }
    }
}

/// Find an executable named `name` in a `PATH`-style list of directories.
pub fn find_in_path(name: &str, path: &std::ffi::OsStr) -> Option<PathBuf> {
    std::env::split_paths(path)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// rocm-smi if it is on `path`, else amd-smi, else none.
pub fn find_tool(path: &std::ffi::OsStr) -> Option<SmiTool> {
    find_in_path("rocm-smi", path)
        .map(SmiTool::RocmSmi)
        .or_else(|| find_in_path("amd-smi", path).map(SmiTool::AmdSmi))
}

/// Why one run of a tool gave no readings.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SmiRunError {
    #[error("could not start \"{program}\": {reason}")]
    Spawn { program: String, reason: String },
    #[error("\"{program}\" did not finish within {timeout_ms} ms and was killed")]
    Timeout { program: String, timeout_ms: u128 },
    #[error("\"{program}\" exited with status {status}: {stderr}")]
    Failed {
        program: String,
        status: String,
        stderr: String,
    },
    #[error("\"{program}\" printed no answer gpulse can read ({reason}); its stderr: {stderr}")]
    Parse {
        program: String,
        reason: String,
        stderr: String,
    },
}

/// The output of one finished run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutput {
    pub stdout: String,
    pub stderr: String,
}

/// First line of stderr worth showing, or "(nothing)".
pub fn stderr_summary(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if lines.is_empty() {
        "(nothing on stderr)".to_string()
    } else {
        lines
            .iter()
            .rev()
            .take(2)
            .rev()
            .cloned()
            .collect::<Vec<_>>()
            .join(" / ")
    }
}

/// Run `program args` with `PATH` set to `path`, killing it (and its process group) at `timeout`.
pub fn run_with_timeout(
    program: &Path,
    args: &[&str],
    path: &std::ffi::OsStr,
    timeout: Duration,
) -> Result<RunOutput, SmiRunError> {
    let name = program.display().to_string();
    let mut child = Command::new(program)
        .args(args)
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| SmiRunError::Spawn {
            program: name.clone(),
            reason: e.to_string(),
        })?;
    let out_reader = child.stdout.take().map(spawn_reader);
    let err_reader = child.stderr.take().map(spawn_reader);
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                kill_group(child.id());
                let _ = child.kill();
                let _ = child.wait();
                // The readers finish on their own once every holder of the pipes is gone; a
                // grandchild that escaped the group must not hold this thread.
                return Err(SmiRunError::Timeout {
                    program: name,
                    timeout_ms: timeout.as_millis(),
                });
            }
            Ok(None) => thread::sleep(Duration::from_millis(10)),
            Err(e) => {
                return Err(SmiRunError::Spawn {
                    program: name,
                    reason: e.to_string(),
                })
            }
        }
    };
    let stdout = out_reader.and_then(|h| h.join().ok()).unwrap_or_default();
    let stderr = err_reader.and_then(|h| h.join().ok()).unwrap_or_default();
    if !status.success() {
        return Err(SmiRunError::Failed {
            program: name,
            status: status.to_string(),
            stderr: stderr_summary(&stderr),
        });
    }
    Ok(RunOutput { stdout, stderr })
}

fn spawn_reader<R: Read + Send + 'static>(mut r: R) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// Kill the whole process group the tool leads (its shell wrapper's children included).
fn kill_group(pid: u32) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    // SAFETY: kill(2) takes plain integers and touches no memory of this process; the group id is
    // the child's own pid (it was started with process_group(0)) and the child has not been
    // reaped yet, so the id cannot have been reused.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
}

/// Run the tool once and parse its answer (amd-smi: `metric` plus `static` for bus ids and names).
pub fn query(
    tool: &SmiTool,
    path: &std::ffi::OsStr,
    timeout: Duration,
) -> Result<SmiAnswer, SmiRunError> {
    match tool {
        SmiTool::RocmSmi(p) => {
            let out = run_with_timeout(p, ROCM_SMI_ARGS, path, timeout)?;
            let gpus = smi_parse::parse_rocm_smi(&out.stdout).map_err(|e| SmiRunError::Parse {
                program: p.display().to_string(),
                reason: e.to_string(),
                stderr: stderr_summary(&out.stderr),
            })?;
            Ok(SmiAnswer {
                driver_version: smi_parse::rocm_smi_driver_version(&out.stdout),
                gpus,
            })
        }
        SmiTool::AmdSmi(p) => {
            let out = run_with_timeout(p, &["metric", "--json"], path, timeout)?;
            let mut gpus =
                smi_parse::parse_amd_smi_metric(&out.stdout).map_err(|e| SmiRunError::Parse {
                    program: p.display().to_string(),
                    reason: e.to_string(),
                    stderr: stderr_summary(&out.stderr),
                })?;
            if gpus.iter().any(|g| g.bus_id.is_none()) {
                match run_with_timeout(p, &["static", "--json"], path, timeout)
                    .map(|o| smi_parse::parse_amd_smi_static(&o.stdout))
                {
                    Ok(Ok(statics)) => smi_parse::merge_amd_static(&mut gpus, &statics),
                    Ok(Err(e)) => tracing::warn!("amd-smi static: {e}"),
                    Err(e) => tracing::warn!("amd-smi static: {e}"),
                }
            }
            Ok(SmiAnswer {
                driver_version: None,
                gpus,
            })
        }
    }
}

/// One parsed answer of the tool.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SmiAnswer {
    pub driver_version: Option<String>,
    pub gpus: Vec<SmiGpu>,
}

/// The latest answer, when it was taken.
#[derive(Debug, Clone)]
struct Latest {
    at: Instant,
    gpus: Arc<Vec<SmiGpu>>,
}

/// The latest SMI answer, shared between the poller thread (writer) and the device samplers.
#[derive(Debug, Clone, Default)]
pub struct SmiCache {
    latest: Arc<Mutex<Option<Latest>>>,
}

impl SmiCache {
    pub fn publish(&self, gpus: Vec<SmiGpu>) {
        if let Ok(mut l) = self.latest.lock() {
            *l = Some(Latest {
                at: Instant::now(),
                gpus: Arc::new(gpus),
            });
        }
    }

    /// The answer for `bus_id` if it is younger than `max_age`.
    pub fn get(&self, bus_id: &str, max_age: Duration) -> Option<SmiGpu> {
        let l = self.latest.lock().ok()?;
        let latest = l.as_ref()?;
        if latest.at.elapsed() > max_age {
            return None;
        }
        latest
            .gpus
            .iter()
            .find(|g| g.bus_id.as_deref() == Some(bus_id))
            .cloned()
    }
}

/// How the poller runs the tool.
#[derive(Debug, Clone)]
pub struct PollerConfig {
    pub tool: SmiTool,
    pub path: OsString,
    pub period: Duration,
    pub timeout: Duration,
}

/// The thread that runs the tool every `period`. Stops when dropped.
pub struct SmiPoller {
    stop: Arc<AtomicBool>,
}

impl SmiPoller {
    pub fn start(cfg: PollerConfig, cache: SmiCache) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let stop_flag = stop.clone();
        let spawned = thread::Builder::new()
            .name("gpulse-smi".to_string())
            .spawn(move || {
                // The backend asked once while opening; the first run here is one period later.
                let mut next = Instant::now() + cfg.period;
                let mut failing = false;
                loop {
                    while Instant::now() < next && !stop_flag.load(Ordering::Relaxed) {
                        thread::sleep(Duration::from_millis(50).min(cfg.period));
                    }
                    if stop_flag.load(Ordering::Relaxed) {
                        break;
                    }
                    match query(&cfg.tool, &cfg.path, cfg.timeout) {
                        Ok(answer) => {
                            if failing {
                                tracing::info!("{} answers again", cfg.tool.name());
                                failing = false;
                            }
                            cache.publish(answer.gpus);
                        }
                        Err(e) => {
                            // Logged once per run of failures, not every period.
                            if !failing {
                                tracing::warn!(
                                    "{e}; its readings are absent until it answers again"
                                );
                            }
                            failing = true;
                        }
                    }
                    next += cfg.period;
                    let now = Instant::now();
                    if next < now {
                        next = now + cfg.period;
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::error!("could not start the {} thread: {e}", "gpulse-smi");
        }
        SmiPoller { stop }
    }
}

impl Drop for SmiPoller {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
