//! The dashboard's side of a replay: the controls it sends to the player and a mirror of the
//! player's speed and pause, for the status line. The position is the displayed snapshot's time.

use std::path::PathBuf;

use crate::model::UnixTime;
use crate::pipeline::playback::{ReplayCommand, ReplayControl};

/// Speeds the `<` / `>` keys step through.
pub const SPEEDS: [f64; 5] = [0.5, 1.0, 2.0, 10.0, 100.0];

/// Seconds of recording time one seek key moves.
pub const SEEK_S: f64 = 10.0;

/// A recording being played.
#[derive(Debug, Clone)]
pub struct ReplaySession {
    pub control: ReplayControl,
    pub file: PathBuf,
    /// Recorded time span, Unix seconds.
    pub start: UnixTime,
    pub end: UnixTime,
    /// Problems met reading the file, logged when the dashboard opens.
    pub warnings: Vec<String>,
}

/// The replay as the dashboard sees it.
#[derive(Debug, Clone)]
pub struct ReplayState {
    control: ReplayControl,
    pub file: String,
    pub start: UnixTime,
    pub end: UnixTime,
    pub speed: f64,
    pub paused: bool,
    /// False once the player thread is gone.
    pub running: bool,
}

impl ReplayState {
    pub fn new(session: &ReplaySession) -> ReplayState {
        ReplayState {
            control: session.control.clone(),
            file: session
                .file
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_else(|| session.file.display().to_string()),
            start: session.start,
            end: session.end,
            speed: 1.0,
            paused: false,
            running: true,
        }
    }

    fn send(&mut self, cmd: ReplayCommand) -> bool {
        if !self.control.send(cmd) {
            self.running = false;
        }
        self.running
    }

    pub fn toggle_pause(&mut self) {
        if self.send(ReplayCommand::TogglePause) {
            self.paused = !self.paused;
        }
    }

    pub fn set_speed(&mut self, speed: f64) {
        if self.send(ReplayCommand::SetSpeed(speed)) {
            self.speed = speed;
        }
    }

    /// The next speed up (`up`) or down from [`SPEEDS`].
    pub fn step_speed(&mut self, up: bool) {
        let next = if up {
            SPEEDS.iter().copied().find(|&s| s > self.speed + 1e-9)
        } else {
            SPEEDS
                .iter()
                .rev()
                .copied()
                .find(|&s| s < self.speed - 1e-9)
        };
        if let Some(s) = next {
            self.set_speed(s);
        }
    }

    pub fn seek(&mut self, delta_s: f64) {
        self.send(ReplayCommand::Seek(delta_s));
    }

    pub fn next_finding(&mut self) {
        self.send(ReplayCommand::NextFinding);
    }

    /// "REPLAY file 12:03:04 (+35 s of 6 min) ×2 ▶" at playback position `t`.
    pub fn status(&self, t: UnixTime) -> String {
        use crate::tui::format;
        let pos = if t > 0.0 { t } else { self.start };
        let speed = if self.speed.fract() == 0.0 {
            format!("{}", self.speed as u64)
        } else {
            format!("{}", self.speed)
        };
        format!(
            "REPLAY {} {} (+{} of {}) ×{} {}",
            self.file,
            format::clock(pos),
            format::seconds((pos - self.start).max(0.0)),
            format::seconds((self.end - self.start).max(0.0)),
            speed,
            if self.paused { "⏸" } else { "▶" }
        )
    }
}
