//! The signal dialog's state: which process, what it asks, and what happened.
//!
//! Signals go through a [`SignalSender`] (the real one is [`Signaller`]), so the dialog's flow is
//! tested with a sender that records what it was asked to do.

use std::fmt::Debug;

use crate::host::{ProcessIdentity, ProcessRow, Signal, SignalError, Signaller};

/// Decides whether a process may be signalled and sends the signal.
pub trait SignalSender: Debug + Send + Sync {
    /// Why the process `target` names may not be signalled, if it may not.
    fn can_signal(&self, target: ProcessIdentity) -> Result<(), SignalError>;
    /// Send `signal` to the process `target` names (never to another that took its PID).
    fn send(&self, target: ProcessIdentity, signal: Signal) -> Result<(), SignalError>;
}

impl SignalSender for Signaller {
    fn can_signal(&self, target: ProcessIdentity) -> Result<(), SignalError> {
        Signaller::can_signal(self, target)
    }

    fn send(&self, target: ProcessIdentity, signal: Signal) -> Result<(), SignalError> {
        Signaller::send(self, target, signal)
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
    /// The process to signal here, as chosen: TERM and KILL both go to it, or to nothing.
    pub target: Option<ProcessIdentity>,
    pub command: String,
    pub stage: DialogStage,
}

impl SignalDialog {
    /// The dialog for `row`: a question when it may be signalled, else the reason why not.
    pub fn open(row: &ProcessRow, sender: &dyn SignalSender) -> SignalDialog {
        let stage = match row.signal_target {
            None => DialogStage::Refused(SignalError::NotVisible { pid: row.pid }.to_string()),
            Some(target) => match sender.can_signal(target) {
                Ok(()) => DialogStage::Confirm(Signal::Term),
                Err(e) => DialogStage::Refused(e.to_string()),
            },
        };
        SignalDialog {
            pid: row.pid,
            target: row.signal_target,
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
                    target.pid,
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

    /// The PID the signal goes to (its PID here), else the one the table shows.
    fn shown_pid(&self) -> u32 {
        self.target.map_or(self.pid, |t| t.pid)
    }

    /// The question or message, as one line of text.
    pub fn message(&self) -> String {
        match &self.stage {
            DialogStage::Confirm(s) => format!(
                "Send SIG{} to PID {} ({})? [y/N]",
                s.name(),
                self.shown_pid(),
                self.command
            ),
            DialogStage::Refused(why) => format!("Cannot signal PID {}: {why}", self.pid),
            DialogStage::TermSent => format!(
                "SIGTERM sent to PID {}. K sends SIGKILL; any other key closes.",
                self.shown_pid()
            ),
            DialogStage::Failed(why) => why.clone(),
        }
    }
}
