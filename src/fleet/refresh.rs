//! Refreshing off the UI thread: a thread asks Prometheus every few seconds and publishes the
//! outcome on a watch channel. The screen never waits on the network; it reads the latest
//! [`FleetState`], which keeps the last good fleet and says how old it is and what went wrong.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use tokio::sync::watch;

use super::{refresh_once, unix_now, DetectorCache, Fleet, FleetOptions, PromClient};

/// What the screen shows: the newest good data and the state of the refreshes.
#[derive(Debug, Clone, Default)]
pub struct FleetState {
    /// The fleet from the last refresh that got any answer.
    pub fleet: Option<Arc<Fleet>>,
    /// When that refresh was evaluated (unix seconds).
    pub fetched_at: Option<f64>,
    /// Failed queries and warnings of that refresh (partial data).
    pub problems: Vec<String>,
    /// The error of the latest refresh when it got no answer at all (Prometheus down or refusing).
    pub error: Option<String>,
    /// When the refresh now running started.
    pub in_flight_since: Option<f64>,
    /// Seconds the slowest query of the last good refresh took.
    pub took_s: Option<f64>,
    /// Refreshes finished, good or not.
    pub refreshes: u64,
}

impl FleetState {
    /// Seconds since the data shown was fetched, at `now`.
    pub fn age(&self, now: f64) -> Option<f64> {
        self.fetched_at.map(|t| (now - t).max(0.0))
    }
}

/// The refresh thread. Dropping it stops the thread after its current request.
pub struct Refresher {
    pub state: watch::Receiver<FleetState>,
    stop: Arc<AtomicBool>,
    wake: mpsc::Sender<()>,
}

impl Refresher {
    /// Start refreshing every `opts.refresh_s` seconds, the first one at once.
    pub fn start(client: PromClient, opts: FleetOptions) -> std::io::Result<Refresher> {
        let (tx, rx) = watch::channel(FleetState::default());
        let (wake_tx, wake_rx) = mpsc::channel::<()>();
        let stop = Arc::new(AtomicBool::new(false));
        let stop_thread = stop.clone();
        thread::Builder::new()
            .name("gpulse-fleet-refresh".into())
            .spawn(move || {
                let mut detectors = DetectorCache::default();
                loop {
                    tx.send_modify(|s| s.in_flight_since = Some(unix_now()));
                    let now = unix_now();
                    let outcome = refresh_catching_panics(&client, &opts, now, &mut detectors);
                    if stop_thread.load(Ordering::Relaxed) {
                        return;
                    }
                    // Take the current state out of the lock before sending (send takes the lock).
                    let current = tx.borrow().clone();
                    let alive = tx.send(apply(current, outcome, now)).is_ok();
                    if !alive {
                        return;
                    }
                    match wake_rx.recv_timeout(Duration::from_secs_f64(opts.refresh_s.max(0.1))) {
                        Ok(()) | Err(mpsc::RecvTimeoutError::Timeout) => {}
                        Err(mpsc::RecvTimeoutError::Disconnected) => return,
                    }
                    // Several wake-ups while busy make one refresh.
                    while wake_rx.try_recv().is_ok() {}
                    if stop_thread.load(Ordering::Relaxed) {
                        return;
                    }
                }
            })?;
        Ok(Refresher {
            state: rx,
            stop,
            wake: wake_tx,
        })
    }

    /// Refresh now instead of at the next interval.
    pub fn refresh_now(&self) {
        let _ = self.wake.send(());
    }
}

impl Drop for Refresher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.wake.send(());
    }
}

/// One refresh; a panic inside it becomes an error the screen shows, and the detectors start
/// over (their state may be half-updated).
fn refresh_catching_panics(
    client: &PromClient,
    opts: &FleetOptions,
    now: f64,
    detectors: &mut DetectorCache,
) -> Result<super::Refresh, super::FleetError> {
    let run = std::panic::AssertUnwindSafe(|| refresh_once(client, opts, now, detectors));
    match std::panic::catch_unwind(run) {
        Ok(outcome) => outcome,
        Err(payload) => {
            *detectors = DetectorCache::default();
            Err(super::FleetError::Internal(super::panic_message(
                payload.as_ref(),
            )))
        }
    }
}

/// The state after one refresh.
pub fn apply(
    mut state: FleetState,
    outcome: Result<super::Refresh, super::FleetError>,
    now: f64,
) -> FleetState {
    state.in_flight_since = None;
    state.refreshes += 1;
    match outcome {
        Ok(r) => {
            state.fleet = Some(Arc::new(r.fleet));
            state.fetched_at = Some(now);
            state.problems = r.problems;
            state.took_s = Some(r.took_s);
            state.error = None;
        }
        Err(e) => state.error = Some(e.to_string()),
    }
    state
}
