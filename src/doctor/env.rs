//! The environment doctor reads, injected so tests can stand in for it.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Variables, procfs and `/dev/shm` as doctor sees them.
#[derive(Debug, Clone)]
pub struct DoctorEnv {
    pub vars: BTreeMap<String, String>,
    /// procfs root (`/proc`, or a fixture tree).
    pub proc_root: PathBuf,
    /// The shared-memory mount DataLoader workers pass batches through.
    pub shm_path: PathBuf,
    /// Who runs doctor.
    pub uid: u32,
}

impl DoctorEnv {
    /// This process's environment.
    pub fn from_process() -> DoctorEnv {
        DoctorEnv {
            vars: std::env::vars().collect(),
            proc_root: PathBuf::from("/proc"),
            shm_path: PathBuf::from("/dev/shm"),
            // SAFETY: getuid has no preconditions and cannot fail.
            uid: unsafe { libc::getuid() },
        }
    }

    pub fn var(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// The first executable named `cmd` on PATH.
    pub fn which(&self, cmd: &str) -> Option<PathBuf> {
        let path = self.var("PATH")?;
        path.split(':')
            .filter(|d| !d.is_empty())
            .map(|d| Path::new(d).join(cmd))
            .find(|p| {
                p.metadata()
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
    }

    /// Size of the shared-memory mount in bytes.
    pub fn shm_size(&self) -> Option<u64> {
        let c = CString::new(self.shm_path.as_os_str().as_bytes()).ok()?;
        // SAFETY: `c` is a valid NUL-terminated path and `st` a properly sized out-parameter.
        unsafe {
            let mut st: libc::statvfs = std::mem::zeroed();
            if libc::statvfs(c.as_ptr(), &mut st) != 0 {
                return None;
            }
            Some(st.f_blocks as u64 * st.f_frsize as u64)
        }
    }

    /// A procfs file's text.
    pub fn proc_file(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.proc_root.join(rel)).ok()
    }

    /// The owner of a process, from `status`'s Uid line.
    pub fn process_uid(&self, pid: u32) -> Option<u32> {
        let status = self.proc_file(&format!("{pid}/status"))?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|v| v.parse().ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_finds_executables_only_on_path() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("tool");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(dir.path().join("plain"), "").unwrap();
        let mut env = DoctorEnv::from_process();
        env.vars.insert(
            "PATH".into(),
            format!("/nonexistent:{}", dir.path().display()),
        );
        assert_eq!(env.which("tool"), Some(exe));
        assert_eq!(env.which("plain"), None);
        assert_eq!(env.which("missing"), None);
    }

    #[test]
    fn process_owner_comes_from_the_status_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("42")).unwrap();
        std::fs::write(
            dir.path().join("42/status"),
            "Name:\tpython\nUid:\t1001\t1001\t1001\t1001\n",
        )
        .unwrap();
        let mut env = DoctorEnv::from_process();
        env.proc_root = dir.path().to_path_buf();
        assert_eq!(env.process_uid(42), Some(1001));
        assert_eq!(env.process_uid(43), None);
    }

    #[test]
    fn shm_size_of_a_real_mount_is_positive() {
        let mut env = DoctorEnv::from_process();
        env.shm_path = PathBuf::from("/");
        assert!(env.shm_size().is_some_and(|s| s > 0));
        env.shm_path = PathBuf::from("/nonexistent/shm");
        assert_eq!(env.shm_size(), None);
    }
}
