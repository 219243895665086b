//! Probing PyTorch, TensorFlow and JAX through `python3 -c`, each with a timeout, and judging
//! what they say against the driver and the GPUs.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::env::DoctorEnv;
use super::{Check, Status};

/// What a probe printed (one JSON object).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct FrameworkAnswer {
    pub installed: bool,
    #[serde(default)]
    pub version: Option<String>,
    /// The CUDA version the framework was built for; `None` for a CPU-only build.
    #[serde(default)]
    pub cuda: Option<String>,
    /// Whether the build has CUDA at all (TensorFlow and JAX say so separately).
    #[serde(default)]
    pub built_with_cuda: Option<bool>,
    #[serde(default)]
    pub available: Option<bool>,
    #[serde(default)]
    pub device_count: Option<u32>,
    #[serde(default)]
    pub devices: Vec<String>,
    #[serde(default)]
    pub error: Option<String>,
}

/// One framework's probe result.
#[derive(Debug, Clone, PartialEq)]
pub enum Probe {
    /// python3 is not on PATH.
    NoPython,
    Answered(FrameworkAnswer),
    TimedOut(Duration),
    /// The probe ran but its output was not understood.
    Failed(String),
}

/// The frameworks doctor knows: (name shown, probe marker).
pub const FRAMEWORKS: [(&str, &str); 3] = [
    ("PyTorch", "torch"),
    ("TensorFlow", "tensorflow"),
    ("JAX", "jax"),
];

/// The Python code that probes one framework and prints one JSON line.
pub fn probe_code(marker: &str) -> String {
    let body = match marker {
        "torch" => {
            "import torch\n\
             n = torch.cuda.device_count() if torch.cuda.is_available() else 0\n\
             out.update(version=torch.__version__, cuda=torch.version.cuda, \
             built_with_cuda=torch.version.cuda is not None, available=torch.cuda.is_available(), \
             device_count=n, devices=[torch.cuda.get_device_name(i) for i in range(n)])\n"
        }
        "tensorflow" => {
            "import os\nos.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')\nimport tensorflow as tf\n\
             info = tf.sysconfig.get_build_info()\n\
             gpus = tf.config.list_physical_devices('GPU')\n\
             out.update(version=tf.__version__, cuda=info.get('cuda_version'), \
             built_with_cuda=tf.test.is_built_with_cuda(), available=len(gpus) > 0, \
             device_count=len(gpus), devices=[g.name for g in gpus])\n"
        }
        _ => {
            "import jax\n\
             devs = [d for d in jax.devices() if d.platform == 'gpu']\n\
             out.update(version=jax.__version__, built_with_cuda=jax.default_backend() == 'gpu' or len(devs) > 0, \
             available=len(devs) > 0, device_count=len(devs), devices=[d.device_kind for d in devs])\n"
        }
    };
    format!(
        "# gpulse-probe:{marker}\nimport json, sys\nout = {{'installed': True}}\ntry:\n{}\
         except ModuleNotFoundError as e:\n    out = {{'installed': e.name.split('.')[0] != '{marker}', 'error': str(e)}}\n\
         except Exception as e:\n    out['error'] = type(e).__name__ + ': ' + str(e)\n\
         print(json.dumps(out))\n",
        body.lines().map(|l| format!("    {l}\n")).collect::<String>()
    )
}

/// Run every probe in parallel, each within `timeout`.
pub fn probe_all(env: &DoctorEnv, timeout: Duration) -> Vec<(&'static str, Probe)> {
    let Some(python) = env.which("python3") else {
        return FRAMEWORKS
            .iter()
            .map(|(n, _)| (*n, Probe::NoPython))
            .collect();
    };
    let children: Vec<(&'static str, Result<Child, String>)> = FRAMEWORKS
        .iter()
        .map(|(name, marker)| {
            let child = Command::new(&python)
                .arg("-c")
                .arg(probe_code(marker))
                .env_clear()
                .envs(&env.vars)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                // Its own process group, so a hung probe is killed with everything it started.
                .process_group(0)
                .spawn()
                .map_err(|e| format!("could not run '{}': {e}", python.display()));
            (*name, child)
        })
        .collect();
    let deadline = Instant::now() + timeout;
    children
        .into_iter()
        .map(|(name, child)| {
            let probe = match child {
                Ok(c) => wait_probe(c, deadline, timeout),
                Err(e) => Probe::Failed(e),
            };
            (name, probe)
        })
        .collect()
}

fn wait_probe(mut child: Child, deadline: Instant, timeout: Duration) -> Probe {
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() >= deadline => {
                if let Ok(pid) = i32::try_from(child.id()) {
                    // SAFETY: signalling the probe's own process group (created at spawn).
                    unsafe { libc::kill(-pid, libc::SIGKILL) };
                }
                let _ = child.kill();
                let _ = child.wait();
                return Probe::TimedOut(timeout);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Probe::Failed(e.to_string()),
        }
    }
    let mut out = String::new();
    if let Some(mut s) = child.stdout.take() {
        let _ = s.read_to_string(&mut out);
    }
    let line = out.lines().rev().find(|l| l.trim_start().starts_with('{'));
    match line.map(serde_json::from_str::<FrameworkAnswer>) {
        Some(Ok(a)) => Probe::Answered(a),
        Some(Err(e)) => Probe::Failed(format!("unreadable answer: {e}")),
        None => Probe::Failed("the probe printed nothing".to_string()),
    }
}

/// `"12.4"` → (12, 4).
pub fn parse_version(v: &str) -> Option<(u32, u32)> {
    let mut it = v.trim().split('.');
    let major = it.next()?.parse().ok()?;
    let minor = it.next().map_or(Some(0), |m| m.parse().ok())?;
    Some((major, minor))
}

/// The checks for every framework probe.
pub fn framework_checks(
    probes: &[(&'static str, Probe)],
    driver_cuda: Option<&str>,
    gpu_count: u32,
    env: &DoctorEnv,
) -> Vec<Check> {
    if probes.iter().all(|(_, p)| *p == Probe::NoPython) {
        return vec![Check::new(
            "frameworks",
            Status::NotApplicable,
            "python3 is not on PATH: PyTorch, TensorFlow and JAX not checked",
        )];
    }
    probes
        .iter()
        .filter_map(|(name, p)| judge(name, p, driver_cuda, gpu_count, env))
        .collect()
}

/// The check of one framework's probe; `None` when python3 is absent (the caller says that once
/// for all frameworks).
fn judge(
    name: &str,
    probe: &Probe,
    driver_cuda: Option<&str>,
    gpu_count: u32,
    env: &DoctorEnv,
) -> Option<Check> {
    let a = match probe {
        Probe::NoPython => return None,
        Probe::TimedOut(t) => {
            return Some(
                Check::new(
                    name,
                    Status::Unknown,
                    format!("the probe did not answer within {} s", t.as_secs()),
                )
                .advise(format!(
                    "run `python3 -c 'import {}'` by hand to see what hangs",
                    name.to_lowercase()
                )),
            )
        }
        Probe::Failed(e) => {
            return Some(Check::new(
                name,
                Status::Unknown,
                format!("could not probe: {e}"),
            ))
        }
        Probe::Answered(a) => a,
    };
    Some(judge_answer(name, a, driver_cuda, gpu_count, env))
}

/// The check of a framework that answered, the first problem found winning: not installed, the
/// import failed, a CPU-only build, a CUDA newer than the driver's, no GPU visible, fewer GPUs
/// visible than present.
fn judge_answer(
    name: &str,
    a: &FrameworkAnswer,
    driver_cuda: Option<&str>,
    gpu_count: u32,
    env: &DoctorEnv,
) -> Check {
    if !a.installed {
        return Check::new(name, Status::NotApplicable, "not installed (skipped)");
    }
    let version = a
        .version
        .clone()
        .unwrap_or_else(|| "unknown version".to_string());
    if let Some(e) = &a.error {
        return Check::new(name, Status::Fail, format!("{version}: importing failed: {e}"))
            .advise("fix the installation (a mismatched CUDA library or a broken wheel); reinstall it in a clean environment");
    }
    let sees = if a.devices.is_empty() {
        format!("sees {} GPU(s)", a.device_count.unwrap_or(0))
    } else {
        format!("sees {} GPU(s): {}", a.devices.len(), a.devices.join(", "))
    };
    let cpu_only =
        a.built_with_cuda == Some(false) || (a.cuda.is_none() && a.built_with_cuda != Some(true));
    if cpu_only {
        let status = if gpu_count > 0 {
            Status::Fail
        } else {
            Status::Warn
        };
        return Check::new(name, status, format!("{version} is a CPU-only build (no CUDA)"))
            .advise(format!(
                "install a CUDA build for CUDA {} or older (e.g. PyTorch: `pip install torch --index-url https://download.pytorch.org/whl/cu126`)",
                driver_cuda.unwrap_or("your driver's version")
            ));
    }
    if let Some(c) = cuda_newer_than_driver(name, a, &version, &sees, driver_cuda) {
        return c;
    }
    let cuda = a
        .cuda
        .as_deref()
        .map_or(String::new(), |c| format!(", CUDA {c}"));
    let described = format!("{version}{cuda}");
    if let Some(c) = gpus_not_visible(name, a, &described, &sees, gpu_count, env) {
        return c;
    }
    Check::new(name, Status::Ok, format!("{described}, {sees}"))
}

/// A framework built for a newer CUDA than the driver supports: a failure across major versions,
/// a warning within one (minor-version compatibility usually works, PTX JIT does not).
fn cuda_newer_than_driver(
    name: &str,
    a: &FrameworkAnswer,
    version: &str,
    sees: &str,
    driver_cuda: Option<&str>,
) -> Option<Check> {
    let (fw, drv) = (a.cuda.as_deref()?, driver_cuda?);
    let (f, d) = (parse_version(fw)?, parse_version(drv)?);
    if f.0 > d.0 {
        return Some(
            Check::new(name, Status::Fail, format!("{version} is built for CUDA {fw}, newer than the driver supports (CUDA {drv}); {sees}"))
                .advise(format!("update the NVIDIA driver to one supporting CUDA {fw}, or install a build for CUDA {drv} or older")),
        );
    }
    if f > d {
        return Some(
            Check::new(name, Status::Warn, format!("{version} is built for CUDA {fw}, newer than the driver's CUDA {drv} (minor-version compatibility usually works, PTX JIT does not); {sees}"))
                .advise(format!("update the driver, or install a build for CUDA {drv} or older")),
        );
    }
    None
}

/// A framework that sees no GPU although some are present (a failure), or fewer than are present
/// when `CUDA_VISIBLE_DEVICES` does not explain it (a warning). `described` is the version and
/// CUDA of the build.
fn gpus_not_visible(
    name: &str,
    a: &FrameworkAnswer,
    described: &str,
    sees: &str,
    gpu_count: u32,
    env: &DoctorEnv,
) -> Option<Check> {
    if a.available == Some(false) && gpu_count > 0 {
        let hint = match env.var("CUDA_VISIBLE_DEVICES") {
            Some(v) => format!("CUDA_VISIBLE_DEVICES is '{v}': check it names the GPUs you want"),
            None => "check the driver with `nvidia-smi`, that /dev/nvidia* are accessible, and that the build matches the driver".to_string(),
        };
        return Some(
            Check::new(
                name,
                Status::Fail,
                format!("{described}: CUDA not available although {gpu_count} GPU(s) are present"),
            )
            .advise(hint),
        );
    }
    let count = a.device_count.unwrap_or(a.devices.len() as u32);
    if count < gpu_count && env.var("CUDA_VISIBLE_DEVICES").is_none() {
        return Some(
            Check::new(
                name,
                Status::Warn,
                format!("{described}: {sees} of {gpu_count}"),
            )
            .advise("some GPUs are not visible to the framework: check the container's GPU list"),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> DoctorEnv {
        let mut e = DoctorEnv::from_process();
        e.vars.clear();
        e
    }

    fn answer(json: &str) -> Probe {
        Probe::Answered(serde_json::from_str(json).unwrap())
    }

    #[test]
    fn versions_parse() {
        assert_eq!(parse_version("12.4"), Some((12, 4)));
        assert_eq!(parse_version("13"), Some((13, 0)));
        assert_eq!(parse_version("x"), None);
    }

    #[test]
    fn cpu_only_too_new_unavailable_and_healthy_are_judged() {
        let cpu = answer(
            r#"{"installed":true,"version":"2.5.1+cpu","cuda":null,"available":false,"device_count":0}"#,
        );
        let c = judge("PyTorch", &cpu, Some("13.0"), 1, &env()).unwrap();
        assert_eq!(c.status, Status::Fail);
        assert!(c.found.contains("CPU-only"), "{}", c.found);

        let new = answer(
            r#"{"installed":true,"version":"3.0","cuda":"14.1","available":false,"device_count":0}"#,
        );
        let c = judge("PyTorch", &new, Some("13.0"), 1, &env()).unwrap();
        assert_eq!(c.status, Status::Fail);
        assert!(
            c.found.contains("newer than the driver supports"),
            "{}",
            c.found
        );

        let minor = answer(
            r#"{"installed":true,"version":"2.9","cuda":"13.1","available":true,"device_count":1}"#,
        );
        assert_eq!(
            judge("PyTorch", &minor, Some("13.0"), 1, &env())
                .unwrap()
                .status,
            Status::Warn
        );

        let mut hidden = env();
        hidden.vars.insert("CUDA_VISIBLE_DEVICES".into(), "".into());
        let none = answer(
            r#"{"installed":true,"version":"2.8","cuda":"12.8","available":false,"device_count":0}"#,
        );
        let c = judge("PyTorch", &none, Some("13.0"), 1, &hidden).unwrap();
        assert_eq!(c.status, Status::Fail);
        assert!(c.advice.contains("CUDA_VISIBLE_DEVICES"), "{}", c.advice);

        let ok = answer(
            r#"{"installed":true,"version":"2.8.0","cuda":"12.8","available":true,"device_count":1,"devices":["NVIDIA H200"]}"#,
        );
        let c = judge("PyTorch", &ok, Some("13.0"), 1, &env()).unwrap();
        assert_eq!(c.status, Status::Ok);
        assert!(c.found.contains("NVIDIA H200"));

        let absent = answer(r#"{"installed":false}"#);
        assert_eq!(
            judge("JAX", &absent, Some("13.0"), 1, &env())
                .unwrap()
                .status,
            Status::NotApplicable
        );
    }

    #[test]
    fn the_probe_code_is_valid_python_when_python_is_here() {
        let Some(py) = env_with_path().which("python3") else {
            // CI installs python3 (see .ci/run); this only runs the generated code.
            assert!(
                std::env::var("CI").is_err(),
                "python3 must be on PATH in CI"
            );
            return;
        };
        for (_, marker) in FRAMEWORKS {
            let out = Command::new(&py)
                .arg("-c")
                .arg(probe_code(marker))
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            let a: FrameworkAnswer = serde_json::from_str(text.trim())
                .unwrap_or_else(|e| panic!("{marker}: {e}: {text}"));
            // Either not installed, or installed and answered with a version.
            assert!(
                !a.installed || a.version.is_some() || a.error.is_some(),
                "{marker}: {text}"
            );
        }
    }

    fn env_with_path() -> DoctorEnv {
        DoctorEnv::from_process()
    }
}
