//! Sending TERM or KILL to a process from the process table.
//!
//! A confirmation dialog asks [`Signaller::can_signal`] first (to grey out the action and say why)
//! and then [`Signaller::send`]. Only real processes of this machine may be signalled: a
//! `--readonly` run, or a simulated or replayed backend (whose PIDs mean nothing here), refuses.
//! A process is named by its [`ProcessIdentity`] (PID and start time), and each signal goes to
//! that process only: one that has ended and left its PID to another is never signalled.

use std::path::Path;

use thiserror::Error;

use super::process_identity::{self, Delivery, Holder, ProcessIdentity};
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
    #[error("pid '{pid}' now belongs to another process (the one chosen has ended and its PID was reused); nothing was sent")]
    Replaced { pid: u32 },
    #[error("pid '{pid}' cannot be told from a process that reused its PID (its start time is unknown); nothing was sent")]
    Unconfirmed { pid: u32 },
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

    /// Whether the process `target` names (in this machine's PID namespace) may be signalled
    /// now, and why not: it must still hold its PID.
    pub fn can_signal(&self, target: ProcessIdentity) -> Result<(), SignalError> {
        self.local_only(target.pid)?;
        can_signal(target.pid)?;
        match process_identity::holder(Path::new("/proc"), target) {
            Holder::Same => Ok(()),
            other => Err(not_sent(target.pid, other)),
        }
    }

    /// Send `signal` to the process `target` names after the same checks as
    /// [`can_signal`](Self::can_signal); the identity is checked again as it is sent.
    pub fn send(&self, target: ProcessIdentity, signal: Signal) -> Result<(), SignalError> {
        self.local_only(target.pid)?;
        send(target, signal)
    }

    fn local_only(&self, pid: u32) -> Result<(), SignalError> {
        if self.readonly {
            return Err(SignalError::ReadOnly);
        }
        match &self.foreign_backend {
            Some(backend) => Err(SignalError::NotLocal {
                pid,
                backend: backend.clone(),
            }),
            None => Ok(()),
        }
    }
}

/// The process to signal for a GPU process: its PID here (which differs from the reported one
/// inside a container) and start time, or why there is none.
pub fn signal_target(p: &crate::model::GpuProcess) -> Result<ProcessIdentity, SignalError> {
    if p.resolved {
        Ok(ProcessIdentity {
            pid: p.local_pid.unwrap_or(p.pid),
            start_ticks: p.start_ticks,
        })
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
    Err(os_error(pid, "0", std::io::Error::last_os_error(), owner))
}

/// Send `signal` to the process `target` names after [`can_signal`]'s checks, only if it still
/// holds its PID (no readonly or backend check: use [`Signaller`] from a front end).
pub fn send(target: ProcessIdentity, signal: Signal) -> Result<(), SignalError> {
    let pid = target.pid;
    can_signal(pid)?;
    match process_identity::signal_if_same(Path::new("/proc"), target, signal.number()) {
        Delivery::Sent => Ok(()),
        Delivery::NotSent(holder) => Err(not_sent(pid, holder)),
        Delivery::Failed(err) => Err(os_error(pid, signal.name(), err, None)),
    }
}

fn not_sent(pid: u32, holder: Holder) -> SignalError {
    match holder {
        Holder::Gone => SignalError::NoSuchProcess { pid },
        Holder::Unknown => SignalError::Unconfirmed { pid },
        Holder::Same | Holder::Other { .. } => SignalError::Replaced { pid },
    }
}

fn os_error(
    pid: u32,
    signal: &'static str,
    err: std::io::Error,
    owner: Option<u32>,
) -> SignalError {
    // SAFETY: geteuid has no preconditions.
    let you = unsafe { libc::geteuid() };
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
        let someone = ProcessIdentity {
            pid: 12345,
            start_ticks: Some(1),
        };
        assert_eq!(ro.can_signal(someone), Err(SignalError::ReadOnly));
        let sim = Signaller::new("sim", false);
        assert!(!sim.enabled());
        let me = ProcessIdentity::current(Path::new("/proc"), std::process::id());
        assert!(matches!(
            sim.send(me.expect("own identity"), Signal::Term),
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
