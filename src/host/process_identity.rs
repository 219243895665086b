//! Which process a PID names, and a signal sent only to that process.
//!
//! The kernel gives a PID to a new process once the old one is gone, so a PID alone names
//! whichever process holds it at the moment. A PID with its start time (clock ticks after boot,
//! field 22 of `/proc/PID/stat`) names one process for good.
//!
//! Before a signal leaves, the process is opened with `pidfd_open` (Linux 5.3 and later), its
//! start time read and compared with the chosen one, and the signal sent through the pidfd: the
//! pidfd names the process it was opened on even if that process ends and its PID is reused
//! after the comparison, so the signal reaches the chosen process or nothing. Where the kernel
//! (or a seccomp filter) refuses pidfds, the start time is compared just before `kill`, leaving
//! only the moment between the two for a reuse.

use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;

use super::procfs;

/// A process as it was chosen: its PID here and when it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessIdentity {
    pub pid: u32,
    /// Start time in clock ticks after boot; `None` when unknown (a simulated or replayed process,
    /// which is never signalled).
    pub start_ticks: Option<u64>,
}

impl ProcessIdentity {
    /// The identity of the process at `pid` now, from `ROOT/PID/stat`.
    pub fn current(root: &Path, pid: u32) -> Option<ProcessIdentity> {
        procfs::read_stat(root, pid).map(|s| ProcessIdentity {
            pid,
            start_ticks: Some(s.starttime),
        })
    }
}

/// What holds the PID now, compared with the chosen process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    /// The chosen process.
    Same,
    /// Another process, started at this time: the chosen one ended and its PID was reused.
    Other { start_ticks: u64 },
    /// No process.
    Gone,
    /// The chosen process's start time is unknown: it cannot be told from another.
    Unknown,
}

/// Who holds `id.pid` now, read from `ROOT/PID/stat`.
pub fn holder(root: &Path, id: ProcessIdentity) -> Holder {
    let Some(chosen) = id.start_ticks else {
        return Holder::Unknown;
    };
    match procfs::read_stat(root, id.pid) {
        None => Holder::Gone,
        Some(s) if s.starttime == chosen => Holder::Same,
        Some(s) => Holder::Other {
            start_ticks: s.starttime,
        },
    }
}

/// What became of a signal.
#[derive(Debug)]
pub enum Delivery {
    Sent,
    /// Not sent: the PID is held by another process, or none, or the chosen one is not known.
    NotSent(Holder),
    /// The kernel refused it.
    Failed(std::io::Error),
}

/// Send `signal` to the process `id` names, only if it still holds its PID (checked against
/// `root`, the procfs of the PID namespace `id.pid` belongs to).
pub fn signal_if_same(root: &Path, id: ProcessIdentity, signal: libc::c_int) -> Delivery {
    if id.start_ticks.is_none() {
        return Delivery::NotSent(Holder::Unknown);
    }
    match pidfd_open(id.pid) {
        Ok(pidfd) => match holder(root, id) {
            Holder::Same => outcome(pidfd_send_signal(&pidfd, signal)),
            other => Delivery::NotSent(other),
        },
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Delivery::NotSent(Holder::Gone),
        // No pidfds here (kernel before 5.3, or a seccomp filter that answers EPERM).
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) => {
            match holder(root, id) {
                Holder::Same => outcome(kill(id.pid, signal)),
                other => Delivery::NotSent(other),
            }
        }
        Err(e) => Delivery::Failed(e),
    }
}

fn outcome(sent: std::io::Result<()>) -> Delivery {
    match sent {
        Ok(()) => Delivery::Sent,
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Delivery::NotSent(Holder::Gone),
        Err(e) => Delivery::Failed(e),
    }
}

fn pid_t(pid: u32) -> std::io::Result<libc::pid_t> {
    libc::pid_t::try_from(pid)
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| std::io::Error::from_raw_os_error(libc::ESRCH))
}

fn pidfd_open(pid: u32) -> std::io::Result<OwnedFd> {
    let pid = pid_t(pid)?;
    // SAFETY: pidfd_open takes a PID and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0 as libc::c_uint) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let fd = libc::c_int::try_from(fd).map_err(|_| std::io::Error::other("bad descriptor"))?;
    // SAFETY: the descriptor was just returned by the kernel and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn pidfd_send_signal(pidfd: &OwnedFd, signal: libc::c_int) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid pidfd, a signal number, no siginfo (the kernel fills in a kill()'s) and no
    // flags.
    let r = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            signal,
            std::ptr::null::<libc::siginfo_t>(),
            0 as libc::c_uint,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn kill(pid: u32, signal: libc::c_int) -> std::io::Result<()> {
    let pid = pid_t(pid)?;
    // SAFETY: a positive PID (never a process group) and a signal number.
    if unsafe { libc::kill(pid, signal) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat_file(root: &Path, pid: u32, start: u64) {
        let dir = root.join(pid.to_string());
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(
            dir.join("stat"),
            format!("{pid} (p) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 {start} 1000 100 0\n"),
        )
        .expect("stat");
    }

    #[test]
    fn the_holder_of_a_pid_is_told_by_its_start_time() {
        let dir = tempfile::tempdir().expect("tempdir");
        let chosen = ProcessIdentity {
            pid: 4242,
            start_ticks: Some(1000),
        };
        assert_eq!(holder(dir.path(), chosen), Holder::Gone);
        stat_file(dir.path(), 4242, 1000);
        assert_eq!(holder(dir.path(), chosen), Holder::Same);
        assert_eq!(ProcessIdentity::current(dir.path(), 4242), Some(chosen));
        stat_file(dir.path(), 4242, 9000);
        assert_eq!(
            holder(dir.path(), chosen),
            Holder::Other { start_ticks: 9000 }
        );
        let unknown = ProcessIdentity {
            pid: 4242,
            start_ticks: None,
        };
        assert_eq!(holder(dir.path(), unknown), Holder::Unknown);
        assert!(matches!(
            signal_if_same(dir.path(), unknown, 0),
            Delivery::NotSent(Holder::Unknown)
        ));
    }
}
