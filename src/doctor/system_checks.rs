//! Driver, CUDA and visibility checks.

use std::path::Path;

use super::env::DoctorEnv;
use super::facts::DriverFacts;
use super::{Check, Status};

/// The driver library, its version, `nvidia-smi` on PATH and the driver's CUDA version.
pub fn driver_checks(d: &DriverFacts, env: &DoctorEnv) -> Vec<Check> {
    let mut out = driver_library_checks(d);
    out.push(nvidia_smi_check(d, env));
    out.push(driver_cuda_check(d));
    out
}

/// The driver library and version: not applicable when simulated, a failure when it did not load.
fn driver_library_checks(d: &DriverFacts) -> Vec<Check> {
    if d.simulated {
        return vec![
            Check::new(
                "driver library",
                Status::NotApplicable,
                "simulated backend: no NVIDIA driver used",
            ),
            Check::new(
                "driver version",
                Status::NotApplicable,
                format!(
                    "simulated: {}",
                    d.driver_version.as_deref().unwrap_or("no version")
                ),
            ),
        ];
    }
    if let Some(e) = &d.error {
        return vec![
            Check::new("driver library", Status::Fail, e.clone()).advise(
                "install the NVIDIA driver (it provides libnvidia-ml.so.1 and nvidia-smi); \
                 in a container, start it with the GPUs (e.g. `docker run --gpus all`)",
            ),
        ];
    }
    let from = d
        .library_path
        .as_deref()
        .map_or("(path not found in /proc/self/maps)".to_string(), |p| {
            format!("from {p}")
        });
    let v = |o: &Option<String>| o.clone().unwrap_or_else(|| "unknown".to_string());
    let status = if d.driver_version.is_some() {
        Status::Ok
    } else {
        Status::Unknown
    };
    vec![
        Check::new(
            "driver library",
            Status::Ok,
            format!("libnvidia-ml loaded {from}"),
        ),
        Check::new(
            "driver version",
            status,
            format!(
                "driver {}, NVML {}",
                v(&d.driver_version),
                v(&d.nvml_version)
            ),
        ),
    ]
}

/// `nvidia-smi` on PATH: a warning without it, unless the backend is simulated.
fn nvidia_smi_check(d: &DriverFacts, env: &DoctorEnv) -> Check {
    match env.which("nvidia-smi") {
        Some(p) => Check::new(
            "nvidia-smi",
            Status::Ok,
            format!("on PATH at {}", p.display()),
        ),
        None if d.simulated => Check::new(
            "nvidia-smi",
            Status::NotApplicable,
            "not on PATH (simulated backend: not needed)",
        ),
        None => Check::new("nvidia-smi", Status::Warn, "not on PATH").advise(
            "it ships with the driver (usually /usr/bin/nvidia-smi); add its directory to PATH \
             or install the driver's utilities package",
        ),
    }
}

/// The newest CUDA version the driver supports.
fn driver_cuda_check(d: &DriverFacts) -> Check {
    let cuda_name = "CUDA (driver)";
    match (&d.cuda_version, d.simulated) {
        (Some(c), true) => Check::new(
            cuda_name,
            Status::NotApplicable,
            format!("simulated driver supports CUDA up to {c}"),
        ),
        (Some(c), false) => Check::new(
            cuda_name,
            Status::Ok,
            format!("the driver supports CUDA up to {c}"),
        ),
        (None, _) => Check::new(
            cuda_name,
            Status::Unknown,
            "the driver's CUDA version could not be read",
        ),
    }
}

/// `CUDA_VISIBLE_DEVICES` and `LD_LIBRARY_PATH`.
pub fn visibility_checks(d: &DriverFacts, env: &DoctorEnv, gpu_count: u32) -> Vec<Check> {
    vec![
        visible_devices_check(env, gpu_count),
        library_path_check(d, env),
    ]
}

/// `CUDA_VISIBLE_DEVICES`: a failure when it hides every GPU, a warning when it hides some.
fn visible_devices_check(env: &DoctorEnv, gpu_count: u32) -> Check {
    let name = "CUDA_VISIBLE_DEVICES";
    match env.var(name) {
        None if gpu_count == 0 => Check::new(name, Status::Ok, "not set"),
        None => Check::new(
            name,
            Status::Ok,
            format!("not set: all {gpu_count} GPU(s) visible"),
        ),
        Some(v) => {
            let ids: Vec<&str> = v
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect();
            let hides_all = ids.is_empty()
                || ids
                    .first()
                    .is_some_and(|f| *f == "-1" || f.eq_ignore_ascii_case("NoDevFiles"));
            if hides_all && gpu_count > 0 {
                Check::new(
                    name,
                    Status::Fail,
                    format!("'{v}' hides all {gpu_count} GPU(s) from CUDA programs"),
                )
                .advise(format!(
                    "unset it (`unset {name}`) or list the GPUs to use, e.g. `{name}=0`"
                ))
            } else if ids.len() < gpu_count as usize {
                Check::new(
                    name,
                    Status::Warn,
                    format!(
                        "'{v}' shows {} of {gpu_count} GPU(s) to CUDA programs",
                        ids.len()
                    ),
                )
                .advise("intended? unset it to use every GPU")
            } else {
                Check::new(name, Status::Ok, format!("'{v}'"))
            }
        }
    }
}

/// `LD_LIBRARY_PATH`: a warning when a directory in it holds a libcuda that would be loaded
/// before the driver's own.
fn library_path_check(d: &DriverFacts, env: &DoctorEnv) -> Check {
    let name = "LD_LIBRARY_PATH";
    let driver_dir = d
        .library_path
        .as_deref()
        .and_then(|p| Path::new(p).parent());
    match env.var(name) {
        None => Check::new(name, Status::Ok, "not set"),
        Some(v) => {
            let shadows: Vec<String> = v
                .split(':')
                .filter(|dir| !dir.is_empty())
                .filter(|dir| Some(Path::new(dir)) != driver_dir)
                .filter_map(|dir| {
                    let lib = ["libcuda.so.1", "libcuda.so"]
                        .iter()
                        .map(|n| Path::new(dir).join(n))
                        .find(|p| p.exists())?;
                    shadowing_reason(&lib, d.driver_version.as_deref())
                        .map(|why| format!("{dir} ({why})"))
                })
                .collect();
            if shadows.is_empty() {
                Check::new(name, Status::Ok, "no libcuda in it shadows the driver's")
            } else {
                Check::new(
                    name,
                    Status::Warn,
                    format!(
                        "libcuda found in {}: it is loaded before the driver's own",
                        shadows.join(", ")
                    ),
                )
                .advise("remove that directory from LD_LIBRARY_PATH (a stub or old CUDA compat libcuda makes CUDA fail or mismatch the driver)")
            }
        }
    }
}

/// Why the libcuda at `lib` would shadow the driver's, or `None` when it is harmless: the driver's
/// own copy (the same version, as container runtimes mount it in several directories) or a 32-bit
/// build, which 64-bit programs skip.
fn shadowing_reason(lib: &Path, driver_version: Option<&str>) -> Option<String> {
    let real = std::fs::canonicalize(lib).unwrap_or_else(|_| lib.to_path_buf());
    let mut head = [0u8; 5];
    let elf = std::fs::File::open(&real)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok()
        && head[..4] == *b"\x7fELF";
    if elf && head[4] == 1 {
        return None;
    }
    if real.components().any(|c| c.as_os_str() == "stubs") {
        return Some("a CUDA toolkit stub".into());
    }
    let file = real.file_name()?.to_string_lossy().into_owned();
    let version = file
        .strip_prefix("libcuda.so.")
        .filter(|v| v.contains('.'))
        .map(str::to_string);
    match (version, driver_version) {
        (Some(v), Some(d)) if v == d => None,
        (Some(v), Some(d)) => Some(format!("version {v}, driver {d}")),
        (Some(v), None) => Some(format!("version {v}")),
        (None, _) => Some("unknown version".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> DoctorEnv {
        let mut e = DoctorEnv::from_process();
        e.vars = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        e
    }

    #[test]
    fn cuda_visible_devices_hiding_some_or_all_gpus_is_flagged() {
        let d = DriverFacts::default();
        let c = &visibility_checks(&d, &env(&[]), 4)[0];
        assert_eq!(c.status, Status::Ok);
        let c = &visibility_checks(&d, &env(&[("CUDA_VISIBLE_DEVICES", "")]), 4)[0];
        assert_eq!(c.status, Status::Fail);
        let c = &visibility_checks(&d, &env(&[("CUDA_VISIBLE_DEVICES", "-1")]), 4)[0];
        assert_eq!(c.status, Status::Fail);
        let c = &visibility_checks(&d, &env(&[("CUDA_VISIBLE_DEVICES", "0,2")]), 4)[0];
        assert_eq!(c.status, Status::Warn);
        assert!(c.found.contains("2 of 4"), "{}", c.found);
    }

    #[test]
    fn a_libcuda_earlier_on_ld_library_path_is_flagged() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("libcuda.so.1"), "").unwrap();
        let d = DriverFacts {
            library_path: Some("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1".into()),
            ..Default::default()
        };
        let p = format!("/usr/lib/x86_64-linux-gnu:{}", dir.path().display());
        let c = &visibility_checks(&d, &env(&[("LD_LIBRARY_PATH", &p)]), 1)[1];
        assert_eq!(c.status, Status::Warn);
        assert!(c.found.contains(&dir.path().display().to_string()));
    }

    #[test]
    fn the_drivers_own_libcuda_in_another_directory_is_not_flagged() {
        // Container runtimes mount the driver's libraries in several directories.
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("libcuda.so.580.159.04");
        let mut elf64 = b"\x7fELF\x02".to_vec();
        elf64.extend([0u8; 59]);
        std::fs::write(&real, &elf64).unwrap();
        std::os::unix::fs::symlink(&real, dir.path().join("libcuda.so.1")).unwrap();
        let mut d = DriverFacts {
            library_path: Some("/usr/local/nvidia/lib64/libnvidia-ml.so.1".into()),
            driver_version: Some("580.159.04".into()),
            ..Default::default()
        };
        let p = dir.path().display().to_string();
        let c = &visibility_checks(&d, &env(&[("LD_LIBRARY_PATH", &p)]), 1)[1];
        assert_eq!(c.status, Status::Ok, "{}", c.found);
        // Another version is a compat or stale copy: flagged, with both versions named.
        d.driver_version = Some("570.86.15".into());
        let c = &visibility_checks(&d, &env(&[("LD_LIBRARY_PATH", &p)]), 1)[1];
        assert_eq!(c.status, Status::Warn);
        assert!(
            c.found.contains("version 580.159.04, driver 570.86.15"),
            "{}",
            c.found
        );
        // A 32-bit build is skipped by 64-bit programs.
        let mut elf32 = b"\x7fELF\x01".to_vec();
        elf32.extend([0u8; 47]);
        std::fs::write(&real, &elf32).unwrap();
        let c = &visibility_checks(&d, &env(&[("LD_LIBRARY_PATH", &p)]), 1)[1];
        assert_eq!(c.status, Status::Ok, "{}", c.found);
    }

    #[test]
    fn a_toolkit_stub_is_named_as_such() {
        let dir = tempfile::tempdir().unwrap();
        let stubs = dir.path().join("stubs");
        std::fs::create_dir(&stubs).unwrap();
        std::fs::write(stubs.join("libcuda.so"), b"\x7fELF\x02").unwrap();
        let d = DriverFacts {
            driver_version: Some("580.159.04".into()),
            ..Default::default()
        };
        let p = stubs.display().to_string();
        let c = &visibility_checks(&d, &env(&[("LD_LIBRARY_PATH", &p)]), 1)[1];
        assert_eq!(c.status, Status::Warn);
        assert!(c.found.contains("a CUDA toolkit stub"), "{}", c.found);
    }

    #[test]
    fn a_missing_driver_fails_with_what_to_do() {
        let d = DriverFacts {
            error: Some("libnvidia-ml.so.1 could not be loaded".into()),
            ..Default::default()
        };
        let checks = driver_checks(&d, &env(&[("PATH", "/nonexistent")]));
        assert_eq!(checks[0].status, Status::Fail);
        assert!(checks[0].advice.contains("install the NVIDIA driver"));
        assert_eq!(checks[1].name, "nvidia-smi");
        assert_eq!(checks[1].status, Status::Warn);
    }
}
