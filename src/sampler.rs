//! Ticks to deadlines and reads every GPU, each on its own thread.
//!
//! The coordinator asks every idle GPU worker for a reading at each tick and waits for the answers
//! until the tick's budget runs out. A GPU whose call has not returned by then is reported
//! [`GpuStatus::Stale`] (with the time its call started) and is not asked again until it answers, so
//! one hung NVML call never delays the other GPUs, the tick, or the screen. Ticks fall on a fixed
//! grid; a tick that runs late moves the next one to the next grid point after now, never a burst
//! of catch-up ticks.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

use crate::backend::{DeviceError, DeviceSampler};
use crate::clock;
use crate::host::HostProbe;
use crate::model::{GpuReading, GpuStatus, Sample, UnixTime};

/// A fixed grid of tick times: `t0 + k * interval`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Schedule {
    pub t0: UnixTime,
    pub interval: f64,
}

impl Schedule {
    pub fn new(t0: UnixTime, interval: f64) -> Self {
        Schedule {
            t0,
            interval: interval.max(0.001),
        }
    }

    /// The first grid point strictly after `now`: late ticks are skipped, not made up.
    pub fn next_after(&self, now: UnixTime) -> UnixTime {
        let k = ((now - self.t0) / self.interval).floor() + 1.0;
        self.t0 + k.max(1.0) * self.interval
    }
}

struct Worker {
    index: u32,
    requests: Sender<UnixTime>,
    /// When the outstanding request was sent, if one is.
    busy_since: Option<UnixTime>,
    /// Last failure reason while lost.
    lost: Option<String>,
    /// XIDs that came with answers no tick took (late ones): they go with the next reading.
    late_xids: Vec<crate::model::XidEvent>,
}

type Answer = (
    u32,
    UnixTime,
    Result<GpuReading, DeviceError>,
    Vec<crate::model::XidEvent>,
);

/// Reads all GPUs once per tick.
pub struct Sampler {
    workers: Vec<Worker>,
    answers: Receiver<Answer>,
    host: HostProbe,
    /// How long a tick waits for the GPUs, as a share of the interval.
    budget_share: f64,
}

impl Sampler {
    /// Start one worker thread per device.
    pub fn new(devices: Vec<Box<dyn DeviceSampler>>, host: HostProbe) -> Self {
        let (answer_tx, answers) = mpsc::channel::<Answer>();
        let workers = devices
            .into_iter()
            .map(|mut dev| {
                let index = dev.index();
                let (req_tx, req_rx) = mpsc::channel::<UnixTime>();
                let tx = answer_tx.clone();
                let spawned = thread::Builder::new()
                    .name(format!("gpulse-gpu{index}"))
                    .spawn(move || {
                        while let Ok(t) = req_rx.recv() {
                            let r = dev.sample(t);
                            let xids = dev.take_events();
                            if tx.send((index, t, r, xids)).is_err() {
                                break;
                            }
                        }
                    });
                if let Err(e) = spawned {
                    tracing::error!("could not start the sampling thread of GPU {index}: {e}");
                }
                Worker {
                    index,
                    requests: req_tx,
                    busy_since: None,
                    lost: None,
                    late_xids: Vec::new(),
                }
            })
            .collect();
        Sampler {
            workers,
            answers,
            host,
            budget_share: 0.8,
        }
    }

    /// Read every GPU now, waiting at most `budget` for their answers.
    pub fn tick(&mut self, now: UnixTime, budget: Duration) -> Sample {
        let started = Instant::now();
        let deadline = started + budget;
        self.free_late_workers();
        self.ask_idle_workers(now);
        let got = self.collect_answers(now, deadline);
        let gpus = self.readings_or_stale(got, now);
        let mut sample = Sample {
            t: now,
            gpus,
            host: Default::default(),
            host_detail: Default::default(),
            sample_duration_s: None,
        };
        self.host.fill(&mut sample);
        sample.sample_duration_s = Some(started.elapsed().as_secs_f64());
        sample
    }

    /// Take the late answers to earlier ticks already waiting: each frees its worker.
    fn free_late_workers(&mut self) {
        while let Ok((index, _, _, xids)) = self.answers.try_recv() {
            if let Some(w) = self.workers.iter_mut().find(|w| w.index == index) {
                w.busy_since = None;
                w.late_xids.extend(xids);
            }
        }
    }

    /// Ask every worker without an outstanding request for a reading at `now`.
    fn ask_idle_workers(&mut self, now: UnixTime) {
        for w in &mut self.workers {
            if w.busy_since.is_none() && w.requests.send(now).is_ok() {
                w.busy_since = Some(now);
            }
        }
    }

    /// Wait until `deadline` for the answers to the requests sent at `now`, one slot per worker
    /// (`None` where no answer came).
    fn collect_answers(&mut self, now: UnixTime, deadline: Instant) -> Vec<Option<GpuReading>> {
        let mut got: Vec<Option<GpuReading>> = vec![None; self.workers.len()];
        loop {
            let waiting = self
                .workers
                .iter()
                .zip(&got)
                .any(|(w, g)| g.is_none() && w.busy_since == Some(now));
            if !waiting {
                break;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.answers.recv_timeout(left) {
                Ok((index, asked, result, xids)) => {
                    let Some(pos) = self.workers.iter().position(|w| w.index == index) else {
                        continue;
                    };
                    let w = &mut self.workers[pos];
                    w.busy_since = None;
                    w.late_xids.extend(xids);
                    if asked != now {
                        // A late answer to an earlier tick: the worker is free again (its XIDs
                        // come with the next reading).
                        continue;
                    }
                    let mut r = answer_reading(w, now, result);
                    r.xids.splice(0..0, w.late_xids.drain(..));
                    got[pos] = Some(r);
                }
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        got
    }

    /// Every worker's reading: its answer, or stale since its request was sent.
    fn readings_or_stale(&self, got: Vec<Option<GpuReading>>, now: UnixTime) -> Vec<GpuReading> {
        self.workers
            .iter()
            .zip(got)
            .map(|(w, g)| {
                g.unwrap_or_else(|| {
                    let since = w.busy_since.unwrap_or(now);
                    GpuReading::empty(w.index, GpuStatus::Stale { since })
                })
            })
            .collect()
    }

    /// Tick forever on `interval`, handing each sample to `sink` until it returns false.
    pub fn run(mut self, interval: f64, mut sink: impl FnMut(Sample) -> bool) {
        let schedule = Schedule::new(clock::now(), interval);
        let mut next = schedule.t0;
        let budget = Duration::from_secs_f64(interval * self.budget_share);
        loop {
            let now = clock::now();
            if next > now {
                thread::sleep(Duration::from_secs_f64(next - now));
            }
            let sample = self.tick(clock::now(), budget);
            if !sink(sample) {
                return;
            }
            next = schedule.next_after(clock::now());
        }
    }
}

/// The reading of worker `w`'s answer to the tick at `now`, logging a GPU lost or back.
fn answer_reading(
    w: &mut Worker,
    now: UnixTime,
    result: Result<GpuReading, DeviceError>,
) -> GpuReading {
    let index = w.index;
    match result {
        Ok(mut r) => {
            if let Some(reason) = w.lost.take() {
                tracing::info!(target: "gpulse::events", "GPU {index} is back (was: {reason})");
            }
            r.index = index;
            r
        }
        Err(DeviceError::Lost(reason)) => {
            if w.lost.is_none() {
                tracing::error!(target: "gpulse::events", "GPU {index} lost: {reason}");
            }
            w.lost = Some(reason.clone());
            GpuReading::empty(index, GpuStatus::Lost { reason })
        }
        Err(DeviceError::Transient(reason)) => {
            tracing::warn!(target: "gpulse::events", "GPU {index}: {reason}");
            GpuReading::empty(index, GpuStatus::Stale { since: now })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Metrics;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;

    #[test]
    fn schedule_skips_missed_ticks_instead_of_bursting() {
        let s = Schedule::new(100.0, 0.25);
        assert_eq!(s.next_after(100.0), 100.25);
        assert_eq!(s.next_after(100.1), 100.25);
        // A tick that took 1.1 s: the next is the next grid point after now, not four at once.
        assert_eq!(s.next_after(101.35), 101.5);
        let mut t = 100.0;
        for _ in 0..10 {
            let n = s.next_after(t);
            assert!(n > t && n - t <= 0.25 + 1e-9);
            t = n;
        }
    }

    struct Fake {
        index: u32,
        delay: Duration,
        calls: Arc<AtomicU32>,
        fail_lost: bool,
    }

    impl DeviceSampler for Fake {
        fn index(&self) -> u32 {
            self.index
        }
        fn sample(&mut self, _now: UnixTime) -> Result<GpuReading, DeviceError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            thread::sleep(self.delay);
            if self.fail_lost {
                return Err(DeviceError::Lost("GPU is lost".into()));
            }
            Ok(GpuReading {
                index: self.index,
                metrics: Metrics {
                    util_gpu: Some(42.0),
                    ..Default::default()
                },
                ..Default::default()
            })
        }
    }

    fn fake(index: u32, delay_ms: u64, lost: bool) -> (Box<dyn DeviceSampler>, Arc<AtomicU32>) {
        let calls = Arc::new(AtomicU32::new(0));
        (
            Box::new(Fake {
                index,
                delay: Duration::from_millis(delay_ms),
                calls: calls.clone(),
                fail_lost: lost,
            }),
            calls,
        )
    }

    #[test]
    fn a_slow_gpu_is_marked_stale_and_does_not_delay_the_others() {
        let (fast, _) = fake(0, 0, false);
        let (slow, slow_calls) = fake(1, 700, false);
        let mut s = Sampler::new(vec![fast, slow], HostProbe::disabled());
        let budget = Duration::from_millis(100);
        let started = Instant::now();
        let first = s.tick(10.0, budget);
        assert!(started.elapsed() < Duration::from_millis(400));
        assert_eq!(first.gpus[0].metrics.util_gpu, Some(42.0));
        assert_eq!(first.gpus[1].status, GpuStatus::Stale { since: 10.0 });
        assert_eq!(first.gpus[1].metrics.util_gpu, None);
        // While its call hangs it is not asked again; it stays stale since the first tick.
        let second = s.tick(10.25, budget);
        assert_eq!(second.gpus[1].status, GpuStatus::Stale { since: 10.0 });
        assert_eq!(slow_calls.load(Ordering::SeqCst), 1);
        assert_eq!(second.gpus[0].status, GpuStatus::Ok);
        // Once it answers it is asked again and reads normally.
        thread::sleep(Duration::from_millis(700));
        let third = s.tick(11.0, Duration::from_millis(1500));
        assert_eq!(third.gpus[1].status, GpuStatus::Ok);
        assert_eq!(slow_calls.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_lost_gpu_is_reported_and_the_rest_go_on() {
        let (ok, _) = fake(0, 0, false);
        let (lost, _) = fake(1, 0, true);
        let mut s = Sampler::new(vec![ok, lost], HostProbe::disabled());
        let sample = s.tick(5.0, Duration::from_millis(500));
        assert_eq!(sample.gpus[0].status, GpuStatus::Ok);
        assert!(matches!(sample.gpus[1].status, GpuStatus::Lost { .. }));
        assert!(sample.sample_duration_s.is_some());
    }

    #[test]
    fn run_ticks_on_time_with_a_slow_device() {
        let (slow, _) = fake(0, 180, false);
        let s = Sampler::new(vec![slow], HostProbe::disabled());
        let mut times = Vec::new();
        let started = Instant::now();
        s.run(0.1, |sample| {
            times.push((sample.t, sample.gpus[0].status.clone()));
            times.len() < 8
        });
        // Eight ticks in well under the 8 × 180 ms the device would take in series.
        assert!(
            started.elapsed() < Duration::from_millis(1300),
            "{:?}",
            started.elapsed()
        );
        let stale = times
            .iter()
            .filter(|(_, s)| matches!(s, GpuStatus::Stale { .. }))
            .count();
        assert!(stale >= 2, "slow answers are marked stale: {times:?}");
        for w in times.windows(2) {
            assert!(w[1].0 > w[0].0, "no two ticks at the same time");
        }
    }
}
