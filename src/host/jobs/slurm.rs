//! A Slurm job's name: from the process's environment (`SLURM_JOB_NAME`, which `srun` and
//! `sbatch` set in every task; readable by the job's owner and root), else from
//! `scontrol show job <id> --oneliner` (any user may run it; it asks slurmctld).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long `scontrol` may take before it is stopped (a slurmctld that does not answer).
pub const SCONTROL_TIMEOUT: Duration = Duration::from_secs(3);

/// `NAME=value` of a process's environment (`/proc/PID/environ`, NUL-separated).
pub fn environ_value(environ: &[u8], name: &str) -> Option<String> {
    environ.split(|b| *b == 0).find_map(|entry| {
        let text = std::str::from_utf8(entry).ok()?;
        let (k, v) = text.split_once('=')?;
        (k == name && !v.is_empty()).then(|| v.to_string())
    })
}

/// The job name in the environment of process `pid` under `proc_root`, when that environment is
/// the job `job_id`'s.
pub fn name_from_environ(proc_root: &Path, pid: u32, job_id: &str) -> Option<String> {
    let environ = std::fs::read(proc_root.join(pid.to_string()).join("environ")).ok()?;
    let id = environ_value(&environ, "SLURM_JOB_ID")
        .or_else(|| environ_value(&environ, "SLURM_JOBID"))?;
    (id == job_id)
        .then(|| environ_value(&environ, "SLURM_JOB_NAME"))
        .flatten()
}

/// `JobName=` of `scontrol show job --oneliner` output: up to the next ` Key=` field.
pub fn job_name_of_scontrol(out: &str) -> Option<String> {
    let rest = out.split_once("JobName=")?.1;
    let end = rest
        .match_indices(' ')
        .find(|(i, _)| {
            let after = &rest[i + 1..];
            after.split_once('=').is_some_and(|(k, _)| {
                !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == ':')
            })
        })
        .map_or(rest.trim_end().len(), |(i, _)| i);
    let name = rest[..end].trim();
    (!name.is_empty() && name != "(null)").then(|| name.to_string())
}

/// The `scontrol` on `PATH`, if any.
pub fn find_scontrol() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("scontrol"))
        .find(|p| p.is_file())
}

/// The job's name from `scontrol` at `program`; `None` when it fails, answers nothing useful, or
/// takes longer than [`SCONTROL_TIMEOUT`] (it is then stopped).
pub fn name_from_scontrol(program: &Path, job_id: &str) -> Option<String> {
    let mut child = Command::new(program)
        .args(["show", "job", job_id, "--oneliner"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break,
            Ok(Some(_)) | Err(_) => return None,
            Ok(None) if started.elapsed() > SCONTROL_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    let mut out = String::new();
    child.stdout.take()?.read_to_string(&mut out).ok()?;
    job_name_of_scontrol(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_names_the_job_it_belongs_to() {
        let env = b"PATH=/bin\0SLURM_JOB_ID=4242\0SLURM_JOB_NAME=train-llm\0\0";
        assert_eq!(
            environ_value(env, "SLURM_JOB_NAME").as_deref(),
            Some("train-llm")
        );
        assert_eq!(environ_value(env, "HOME"), None);
        assert_eq!(environ_value(b"SLURM_JOB_NAME=\0", "SLURM_JOB_NAME"), None);
    }

    #[test]
    fn scontrol_oneliners_give_the_job_name() {
        let out = "JobId=4242 JobName=train llm UserId=alice(1000) GroupId=alice(1000) MCS_label=N/A Priority=1\n";
        assert_eq!(job_name_of_scontrol(out).as_deref(), Some("train llm"));
        assert_eq!(
            job_name_of_scontrol("JobId=1 JobName=bash\n").as_deref(),
            Some("bash")
        );
        assert_eq!(
            job_name_of_scontrol("slurm_load_jobs error: Invalid job id specified"),
            None
        );
    }

    #[test]
    fn a_scontrol_that_hangs_is_stopped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fake = dir.path().join("scontrol");
        std::fs::write(&fake, "#!/bin/sh\nsleep 30\n").expect("write");
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("chmod");
        let started = Instant::now();
        assert_eq!(name_from_scontrol(&fake, "1"), None);
        assert!(started.elapsed() < SCONTROL_TIMEOUT + Duration::from_secs(2));
        std::fs::write(
            &fake,
            "#!/bin/sh\necho \"JobId=$3 JobName=sweep-$3 UserId=bo(1)\"\n",
        )
        .expect("write");
        assert_eq!(name_from_scontrol(&fake, "77").as_deref(), Some("sweep-77"));
    }
}
