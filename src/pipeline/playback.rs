//! Plays a recording back in time: samples are released when the playback position passes their
//! recorded timestamp, the position advancing at `speed` times the clock, with pause and seek.
//!
//! [`Player`] is a plain struct over an injected [`Clock`], so its pacing is tested without
//! sleeping. [`start`] runs one on a thread, feeds the [`Engine`] and publishes snapshots on a
//! watch channel exactly like the live pipeline, returning a [`Live`] any front end can read;
//! [`open`] reads a recording file and starts it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::path::Path;

use tokio::sync::watch;

use super::Live;
use crate::engine::{Engine, EngineConfig};
use crate::model::{Sample, SystemInfo, UnixTime};
use crate::recording::{finding_marks, RecordingError, RecordingReader};

/// Monotonic seconds from an arbitrary origin.
pub trait Clock {
    fn now(&self) -> f64;
}

/// The process's monotonic clock.
#[derive(Debug, Clone, Copy)]
pub struct SystemClock(Instant);

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock(Instant::now())
    }
}

impl Clock for SystemClock {
    fn now(&self) -> f64 {
        self.0.elapsed().as_secs_f64()
    }
}

/// What a seek did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Seek {
    /// Forward: the samples up to the new position come out of the next [`Player::due`].
    Forward,
    /// Backward: a consumer that keeps history must rebuild it from [`Player::played`].
    Backward,
}

/// Paces recorded samples.
#[derive(Debug)]
pub struct Player<C: Clock> {
    samples: Vec<Sample>,
    /// Times of recorded findings, for "jump to the next finding".
    marks: Vec<UnixTime>,
    clock: C,
    speed: f64,
    paused: bool,
    /// Recording time at `anchor_clock`.
    anchor_pos: UnixTime,
    anchor_clock: f64,
    /// Samples already released.
    next: usize,
}

impl<C: Clock> Player<C> {
    /// A player at the start of `samples` (in time order), playing at ×1.
    pub fn new(samples: Vec<Sample>, clock: C) -> Self {
        let start = samples.first().map(|s| s.t).unwrap_or(0.0);
        let now = clock.now();
        Player {
            samples,
            marks: Vec::new(),
            clock,
            speed: 1.0,
            paused: false,
            anchor_pos: start,
            anchor_clock: now,
            next: 0,
        }
    }

    /// Times to stop at with [`Player::seek_next_mark`] (e.g. where findings were raised).
    pub fn with_marks(mut self, mut marks: Vec<UnixTime>) -> Self {
        marks.sort_by(f64::total_cmp);
        self.marks = marks;
        self
    }

    pub fn start(&self) -> UnixTime {
        self.samples.first().map(|s| s.t).unwrap_or(0.0)
    }

    pub fn end(&self) -> UnixTime {
        self.samples.last().map(|s| s.t).unwrap_or(0.0)
    }

    /// The playback position, in recording time.
    pub fn position(&self) -> UnixTime {
        let pos = if self.paused {
            self.anchor_pos
        } else {
            self.anchor_pos + (self.clock.now() - self.anchor_clock) * self.speed
        };
        pos.min(self.end())
    }

    fn re_anchor(&mut self, pos: UnixTime) {
        self.anchor_pos = pos.clamp(self.start(), self.end());
        self.anchor_clock = self.clock.now();
    }

    pub fn speed(&self) -> f64 {
        self.speed
    }

    /// Play at `speed` times real time (clamped to 0.1–1000).
    pub fn set_speed(&mut self, speed: f64) {
        let pos = self.position();
        self.speed = if speed.is_finite() {
            speed.clamp(0.1, 1000.0)
        } else {
            1.0
        };
        self.re_anchor(pos);
    }

    pub fn is_paused(&self) -> bool {
        self.paused
    }

    pub fn set_paused(&mut self, paused: bool) {
        let pos = self.position();
        self.paused = paused;
        self.re_anchor(pos);
    }

    pub fn toggle_pause(&mut self) {
        self.set_paused(!self.paused);
    }

    /// Whether every sample has been released.
    pub fn finished(&self) -> bool {
        self.next >= self.samples.len()
    }

    /// Move the position by `delta_s` seconds of recording time (negative: back).
    pub fn seek(&mut self, delta_s: f64) -> Seek {
        let to = self.position() + delta_s;
        self.seek_to(to)
    }

    /// Move the position to recording time `t`.
    pub fn seek_to(&mut self, t: UnixTime) -> Seek {
        self.re_anchor(t);
        let pos = self.anchor_pos;
        let released = self.samples[..self.next].partition_point(|s| s.t <= pos);
        if released < self.next {
            self.next = released;
            Seek::Backward
        } else {
            Seek::Forward
        }
    }

    /// Jump to the first mark after the position; `None` when there is none.
    pub fn seek_next_mark(&mut self) -> Option<Seek> {
        let pos = self.position();
        let t = self.marks.iter().copied().find(|&m| m > pos + 1e-9)?;
        Some(self.seek_to(t))
    }

    /// Samples whose time the position has reached and that were not released yet.
    pub fn due(&mut self) -> &[Sample] {
        let pos = self.position();
        let from = self.next;
        let upto = from + self.samples[from..].partition_point(|s| s.t <= pos);
        self.next = upto;
        &self.samples[from..upto]
    }

    /// Samples released so far (to rebuild history after a backward seek).
    pub fn played(&self) -> &[Sample] {
        &self.samples[..self.next]
    }

    /// Clock time until the next sample is due (`None` when paused or finished).
    pub fn time_to_next(&self) -> Option<Duration> {
        if self.paused {
            return None;
        }
        let next = self.samples.get(self.next)?;
        let wait = ((next.t - self.position()) / self.speed).max(0.0);
        Some(Duration::from_secs_f64(wait))
    }
}

/// A command to a running replay.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ReplayCommand {
    TogglePause,
    SetSpeed(f64),
    Seek(f64),
    NextFinding,
}

/// Sends commands to the replay thread started by [`start`].
#[derive(Debug, Clone)]
pub struct ReplayControl {
    tx: mpsc::Sender<ReplayCommand>,
}

impl ReplayControl {
    /// `false` when the replay has ended.
    pub fn send(&self, cmd: ReplayCommand) -> bool {
        self.tx.send(cmd).is_ok()
    }
}

fn rebuild(system: &SystemInfo, config: &EngineConfig, played: &[Sample]) -> Engine {
    let mut engine = Engine::new(system.clone(), config.clone());
    for s in played {
        engine.ingest(s.clone());
    }
    engine
}

/// Play `samples` through a fresh engine on a thread, publishing a snapshot after every released
/// batch; `marks` are the times "next finding" jumps to.
pub fn start(
    mut system: SystemInfo,
    config: EngineConfig,
    samples: Vec<Sample>,
    marks: Vec<UnixTime>,
) -> (Live, ReplayControl) {
    system.backend = "replay".to_string();
    let mut engine = Engine::new(system.clone(), config.clone());
    let (tx, rx) = watch::channel(engine.snapshot());
    let stop = Arc::new(AtomicBool::new(false));
    let stop_thread = stop.clone();
    let (ctl_tx, ctl_rx) = mpsc::channel::<ReplayCommand>();
    let live = Live::from_parts(rx, engine.system().clone(), stop);
    let spawned = std::thread::Builder::new()
        .name("gpulse-replay".into())
        .spawn(move || {
            let mut player = Player::new(samples, SystemClock::default()).with_marks(marks);
            while !stop_thread.load(Ordering::Relaxed) {
                let mut changed = false;
                while let Ok(cmd) = ctl_rx.try_recv() {
                    let seek = match cmd {
                        ReplayCommand::TogglePause => {
                            player.toggle_pause();
                            None
                        }
                        ReplayCommand::SetSpeed(s) => {
                            player.set_speed(s);
                            None
                        }
                        ReplayCommand::Seek(d) => Some(player.seek(d)),
                        ReplayCommand::NextFinding => player.seek_next_mark(),
                    };
                    if seek == Some(Seek::Backward) {
                        engine = rebuild(&system, &config, player.played());
                        changed = true;
                    }
                }
                for s in player.due() {
                    engine.ingest(s.clone());
                    changed = true;
                }
                if changed && tx.send(engine.snapshot()).is_err() {
                    return;
                }
                let wait = player
                    .time_to_next()
                    .unwrap_or(Duration::from_millis(50))
                    .min(Duration::from_millis(50));
                std::thread::sleep(wait);
            }
        });
    if let Err(e) = spawned {
        tracing::error!("could not start the replay thread: {e}");
    }
    (live, ReplayControl { tx: ctl_tx })
}

/// Why a recording cannot be played.
#[derive(Debug, thiserror::Error)]
pub enum PlaybackError {
    #[error(transparent)]
    Recording(#[from] RecordingError),
}

/// A recording loaded and playing: the snapshots, the controls, and what was wrong with the file.
pub struct Replay {
    pub live: Live,
    pub control: ReplayControl,
    /// Problems met reading the file (cut-off end, skipped lines), each naming the line.
    pub warnings: Vec<String>,
    /// Recorded time span, Unix seconds.
    pub start: UnixTime,
    pub end: UnixTime,
}

/// Read a recording and start playing it through a fresh engine at ×1 (the engine samples at the
/// recording's own interval).
pub fn open(config: &EngineConfig, path: &Path) -> Result<Replay, PlaybackError> {
    let mut reader = RecordingReader::open(path)?;
    let records = reader.read_all();
    let warnings = crate::backend::SampleSource::warnings(&reader);
    let (Some(first), Some(last)) = (records.first(), records.last()) else {
        return Err(RecordingError::NoSamples(path.to_path_buf()).into());
    };
    let (start_t, end_t) = (first.sample.t, last.sample.t);
    let marks = finding_marks(&records);
    let mut engine = config.clone();
    engine.interval_s = reader.header().interval_s;
    let samples = records.into_iter().map(|r| r.sample).collect();
    let (live, control) = start(reader.header().system.clone(), engine, samples, marks);
    Ok(Replay {
        live,
        control,
        warnings,
        start: start_t,
        end: end_t,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    #[derive(Clone)]
    struct FakeClock(Rc<Cell<f64>>);
    impl Clock for FakeClock {
        fn now(&self) -> f64 {
            self.0.get()
        }
    }

    fn samples(n: usize) -> Vec<Sample> {
        (0..n)
            .map(|i| Sample {
                t: 1000.0 + i as f64 * 0.5,
                ..Default::default()
            })
            .collect()
    }

    fn times(s: &[Sample]) -> Vec<f64> {
        s.iter().map(|s| s.t).collect()
    }

    #[test]
    fn releases_samples_at_their_recorded_pace_times_speed() {
        let now = Rc::new(Cell::new(0.0));
        let mut p = Player::new(samples(10), FakeClock(now.clone()));
        assert_eq!(times(p.due()), vec![1000.0]);
        assert!(p.due().is_empty());
        assert_eq!(p.time_to_next(), Some(Duration::from_millis(500)));
        now.set(1.0);
        assert_eq!(times(p.due()), vec![1000.5, 1001.0]);
        p.set_speed(10.0);
        assert_eq!(p.time_to_next(), Some(Duration::from_millis(50)));
        now.set(1.2);
        assert_eq!(times(p.due()), vec![1001.5, 1002.0, 1002.5, 1003.0]);
        now.set(100.0);
        assert_eq!(p.due().len(), 3);
        assert!(p.finished());
        assert_eq!(p.position(), 1004.5);
    }

    #[test]
    fn pause_stops_the_position_and_resume_continues_from_it() {
        let now = Rc::new(Cell::new(0.0));
        let mut p = Player::new(samples(10), FakeClock(now.clone()));
        now.set(1.0);
        p.toggle_pause();
        now.set(50.0);
        assert_eq!(p.position(), 1001.0);
        assert_eq!(p.due().len(), 3);
        assert_eq!(p.time_to_next(), None);
        p.toggle_pause();
        now.set(50.5);
        assert_eq!(p.position(), 1001.5);
        assert_eq!(times(p.due()), vec![1001.5]);
    }

    #[test]
    fn seeks_forward_and_back_and_to_the_next_mark() {
        let now = Rc::new(Cell::new(0.0));
        let mut p =
            Player::new(samples(40), FakeClock(now.clone())).with_marks(vec![1012.0, 1003.0]);
        assert_eq!(p.seek(10.0), Seek::Forward);
        assert_eq!(p.due().len(), 21);
        assert_eq!(p.seek(-4.0), Seek::Backward);
        assert_eq!(p.position(), 1006.0);
        assert_eq!(p.played().len(), 13);
        assert!(p.due().is_empty());
        assert_eq!(p.seek_next_mark(), Some(Seek::Forward));
        assert_eq!(p.position(), 1012.0);
        assert_eq!(p.due().len(), 12);
        assert_eq!(p.seek_next_mark(), None);
        assert_eq!(p.seek(-100.0), Seek::Backward);
        assert_eq!(p.position(), 1000.0);
        assert_eq!(p.played().len(), 1);
        assert_eq!(p.seek(1000.0), Seek::Forward);
        assert_eq!(p.position(), 1019.5);
    }
}
