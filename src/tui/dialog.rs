//! The signal dialog's state: which process, what it asks, and what happened.
//!
//! Signals go through a [`SignalSender`] (the real one is [`Signaller`]), so the dialog's flow is
//! tested with a sender that records what it was asked to do.

use std::fmt::Debug;

use crate::host::{ProcessRow, Signal, SignalError, Signaller};

/// Decides whether a process may be signalled and sends the signal.
pub trait SignalSender: Debug + Send + Sync {
    /// Why `pid` may not be signalled, if it may not.
    fn can_signal(&self, pid: u32) -> Result<(), SignalError>;
    /// Send `signal` to `pid`.
    fn send(&self, pid: u32, signal: Signal) -> Result<(), SignalError>;
}

impl SignalSender for Signaller {
    fn can_signal(&self, pid: u32) -> Result<(), SignalError> {
        Signaller::can_signal(self, pid)
    }

    fn send(&self, pid: u32, signal: Signal) -> Result<(), SignalError> {
        Signaller::send(self, pid, signal)
    }
}

/// Where the dialog is.
#[derive(Debug, Clone, PartialEq)]
pub enum DialogStage {
    /// Asking "send this signal? [y/N]".
    Confirm(Signal),
    /// The process may not be signalled; the reason, shown greyed.
    Refused(String),
    /// TERM was sent; KILL can be asked for next.
    TermSent,
    /// Sending failed; the error.
    Failed(String),
}

/// A confirmation dialog for one process.
#[derive(Debug, Clone, PartialEq)]
pub struct SignalDialog {
    /// The PID as the table shows it.
    pub pid: u32,
    /// The PID to signal here.
    pub target: Option<u32>,
    pub command: String,
    pub stage: DialogStage,
}

impl SignalDialog {
    /// The dialog for `row`: a question when it may be signalled, else the reason why not.
    pub fn open(row: &ProcessRow, sender: &dyn SignalSender) -> SignalDialog {
        let stage = match row.signal_pid {
            None => DialogStage::Refused(SignalError::NotVisible { pid: row.pid }.to_string()),
            Some(pid) => match sender.can_signal(pid) {
                Ok(()) => DialogStage::Confirm(Signal::Term),
                Err(e) => DialogStage::Refused(e.to_string()),
            },
        };
        SignalDialog {
            pid: row.pid,
            target: row.signal_pid,
            command: row.command.clone(),
            stage,
        }
    }

    /// `y`: send the signal asked about. Returns whether the dialog stays open.
    pub fn confirm(&mut self, sender: &dyn SignalSender) -> bool {
        let (DialogStage::Confirm(signal), Some(target)) = (&self.stage, self.target) else {
            return false;
        };
        let signal = *signal;
        match sender.send(target, signal) {
            Ok(()) => {
                tracing::info!(
                    target: "gpulse::events",
                    "sent SIG{} to pid {} ({})",
                    signal.name(),
                    target,
                    self.command
                );
                if signal == Signal::Term {
                    self.stage = DialogStage::TermSent;
                    true
                } else {
                    false
                }
            }
            Err(e) => {
                tracing::error!(target: "gpulse::events", "{e}");
                self.stage = DialogStage::Failed(e.to_string());
                true
            }
        }
    }

    /// `K` after TERM: ask about KILL. Returns whether it now asks.
    pub fn escalate(&mut self) -> bool {
        if self.stage == DialogStage::TermSent {
            self.stage = DialogStage::Confirm(Signal::Kill);
            true
        } else {
            false
        }
    }

    /// The question or message, as one line of text.
    pub fn message(&self) -> String {
        match &self.stage {
            DialogStage::Confirm(s) => format!(
                "Send SIG{} to PID {} ({})? [y/N]",
                s.name(),
                self.target.unwrap_or(self.pid),
                self.command
            ),
            DialogStage::Refused(why) => format!("Cannot signal PID {}: {why}", self.pid),
            DialogStage::TermSent => format!(
                "SIGTERM sent to PID {}. K sends SIGKILL; any other key closes.",
                self.target.unwrap_or(self.pid)
            ),
            DialogStage::Failed(why) => why.clone(),
        }
    }
}
