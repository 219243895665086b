//! Sending TERM or KILL to a process from the process table.
//!
//! A confirmation dialog asks [`Signaller::can_signal`] first (to grey out the action and say why)
//! and then [`Signaller::send`]. Only real processes of this machine may be signalled: a
//! `--readonly` run, or a simulated or replayed backend (whose PIDs mean nothing here), refuses.

use std::path::Path;

use thiserror::Error;

use super::procfs;

/// The signals the process table offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Ask the process to stop (SIGTERM).
    Term,
    /// Stop it now (SIGKILL).
    Kill,
}

impl Signal {
    pub fn name(self) -> &'static str {
        match self {
            Signal::Term => "TERM",
            Signal::Kill => "KILL",
        }
    }

    fn number(self) -> libc::c_int {
        match self {
            Signal::Term => libc::SIGTERM,
            Signal::Kill => libc::SIGKILL,
        }
    }
}

/// Why a signal cannot be or was not sent.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SignalError {
    #[error(
        "signals are off: gpulse runs with --readonly; restart without it to signal processes"
    )]
    ReadOnly,
    #[error("pid '{pid}' belongs to the {backend} backend, not to this machine; only live GPUs' processes can be signalled")]
    NotLocal { pid: u32, backend: String },
    #[error("pid '{pid}' is not visible here (it may run in another PID namespace); signal it from the host")]
    NotVisible { pid: u32 },
    #[error("pid '{pid}' is protected (init or gpulse itself); choose a GPU process")]
    Protected { pid: u32 },
    #[error("pid '{pid}' no longer exists")]
    NoSuchProcess { pid: u32 },
    #[error("pid '{pid}' belongs to uid {owner}, you are uid {you}; only its owner or root may signal it")]
    NotPermitted { pid: u32, owner: u32, you: u32 },
    #[error("sending {signal} to pid '{pid}' failed: {reason}")]
    Failed {
        pid: u32,
        signal: &'static str,
        reason: String,
    },
}

/// The permission rule alone: root may signal anyone, others only their own processes.
pub fn permitted(pid: u32, owner: u32, you: u32) -> Result<(), SignalError> {
    if you == 0 || owner == you {
        Ok(())
    } else {
        Err(SignalError::NotPermitted { pid, owner, you })
    }
}

/// Decides and sends signals; built once with the run's settings.
#[derive(Debug, Clone)]
pub struct Signaller {
    readonly: bool,
    /// `Some(backend)` when the processes are not this machine's (simulated, replayed).
    foreign_backend: Option<String>,
}

impl Signaller {
    /// For processes reported by `backend` (`SystemInfo::backend`); `readonly` turns signals off.
    pub fn new(backend: &str, readonly: bool) -> Self {
        Signaller {
            readonly,
            foreign_backend: (!matches!(backend, "nvml" | "rocm")).then(|| backend.to_string()),
        }
    }

    /// Whether signals can be sent at all (false: the dialog should not be offered).
    pub fn enabled(&self) -> bool {
        !self.readonly && self.foreign_backend.is_none()
    }

    /// Whether `pid` (a PID of this machine's namespace) may be signalled now, and why not.
    pub fn can_signal(&self, pid: u32) -> Result<(), SignalError> {
        if self.readonly {
            return Err(SignalError::ReadOnly);
        }
        if let Some(backend) = &self.foreign_backend {
            return Err(SignalError::NotLocal {
                pid,
                backend: backend.clone(),
            });
        }
        can_signal(pid)
    }

    /// Send `signal` to `pid` after the same checks as [`can_signal`](Self::can_signal).
    pub fn send(&self, pid: u32, signal: Signal) -> Result<(), SignalError> {
        self.can_signal(pid)?;
        deliver(pid, signal)
    }
}

/// The PID to signal for a GPU process: its PID here (which differs from the reported one inside a
/// container), or why there is none.
pub fn signal_target(p: &crate::model::GpuProcess) -> Result<u32, SignalError> {
    if p.resolved {
        Ok(p.local_pid.unwrap_or(p.pid))
    } else {
        Err(SignalError::NotVisible { pid: p.pid })
    }
}

/// Whether this user may signal `pid`: it exists, is not init or gpulse itself, and belongs to
/// this user (or this user is root); confirmed with `kill(pid, 0)`.
pub fn can_signal(pid: u32) -> Result<(), SignalError> {
    if pid <= 1 || pid == std::process::id() || pid > i32::MAX as u32 {
        return Err(SignalError::Protected { pid });
    }
    let owner = procfs::read_status(Path::new("/proc"), pid)
        .ok_or(SignalError::NoSuchProcess { pid })?
        .uid;
    // SAFETY: geteuid has no preconditions.
    let you = unsafe { libc::geteuid() };
    if let Some(owner) = owner {
        permitted(pid, owner, you)?;
    }
    // SAFETY: signal 0 only checks existence and permission; pid is a positive i32.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    if r == 0 {
        return Ok(());
    }
    Err(os_error(pid, "0", owner, you))
}

/// Send `signal` to `pid` after [`can_signal`]'s checks (no readonly or backend check: use
/// [`Signaller`] from a front end).
pub fn send(pid: u32, signal: Signal) -> Result<(), SignalError> {
    can_signal(pid)?;
    deliver(pid, signal)
}

fn deliver(pid: u32, signal: Signal) -> Result<(), SignalError> {
    // SAFETY: pid was checked to be a positive i32 other than 1 and our own.
    let r = unsafe { libc::kill(pid as libc::pid_t, signal.number()) };
    if r == 0 {
        Ok(())
    } else {
        // SAFETY: geteuid has no preconditions.
        let you = unsafe { libc::geteuid() };
        Err(os_error(pid, signal.name(), None, you))
    }
}

fn os_error(pid: u32, signal: &'static str, owner: Option<u32>, you: u32) -> SignalError {
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::ESRCH) => SignalError::NoSuchProcess { pid },
        Some(libc::EPERM) => SignalError::NotPermitted {
            pid,
            owner: owner.unwrap_or(u32::MAX),
            you,
        },
        _ => SignalError::Failed {
            pid,
            signal,
            reason: err.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_may_signal_anyone_others_only_their_own() {
        assert_eq!(permitted(500, 1000, 0), Ok(()));
        assert_eq!(permitted(500, 1000, 1000), Ok(()));
        let e = permitted(500, 0, 1000).expect_err("not permitted");
        assert_eq!(
            e,
            SignalError::NotPermitted {
                pid: 500,
                owner: 0,
                you: 1000
            }
        );
        assert!(e.to_string().contains("'500'"), "{e}");
    }

    #[test]
    fn readonly_and_simulated_refuse_before_looking() {
        let ro = Signaller::new("nvml", true);
        assert!(!ro.enabled());
        assert_eq!(ro.can_signal(12345), Err(SignalError::ReadOnly));
        let sim = Signaller::new("sim", false);
        assert!(!sim.enabled());
        assert!(matches!(
            sim.send(std::process::id(), Signal::Term),
            Err(SignalError::NotLocal { .. })
        ));
        assert!(Signaller::new("nvml", false).enabled());
    }

    #[test]
    fn init_and_self_are_protected() {
        assert_eq!(can_signal(1), Err(SignalError::Protected { pid: 1 }));
        let me = std::process::id();
        assert_eq!(can_signal(me), Err(SignalError::Protected { pid: me }));
    }
}
