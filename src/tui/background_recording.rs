//! Recording from the dashboard (`r`): a thread of its own reads the snapshots from the watch
//! channel and writes each new sample with its active findings through
//! [`crate::recording::Recorder`], so the screen never waits on the disk.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::{watch, Notify};

use crate::engine::Snapshot;
use crate::model::{Finding, UnixTime};
use crate::recording::Recorder;

/// What the status line shows about a recording in progress.
#[derive(Debug, Clone)]
pub struct RecordingStatus {
    pub path: PathBuf,
    ticks: Arc<AtomicU64>,
    failed: Arc<AtomicBool>,
}

impl RecordingStatus {
    /// Ticks written so far.
    pub fn ticks(&self) -> u64 {
        self.ticks.load(Ordering::Relaxed)
    }

    /// Whether writing failed (the error went to the event log).
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// "● REC file (N ticks)".
    pub fn text(&self) -> String {
        let name = self
            .path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.path.display().to_string());
        if self.failed() {
            format!("REC FAILED {name}")
        } else {
            format!("● REC {name} ({} ticks)", self.ticks())
        }
    }
}

/// A recording in progress.
pub struct Recording {
    status: RecordingStatus,
    stop: Arc<Notify>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// `gpulse-YYYYmmdd-HHMMSS.ndjson.zst` for the UTC time `t`.
pub fn default_file_name(t: UnixTime) -> String {
    let secs = t.floor() as i64;
    let days = secs.div_euclid(86_400);
    let tod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "gpulse-{y:04}{m:02}{d:02}-{:02}{:02}{:02}.ndjson.zst",
        tod / 3600,
        (tod / 60) % 60,
        tod % 60
    )
}

/// Year, month, day of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

impl Recording {
    /// Create the file in `dir` (named for the current time) and start writing every new sample
    /// that arrives on `snapshots`.
    pub fn start(
        dir: &Path,
        snapshots: watch::Receiver<Arc<Snapshot>>,
    ) -> Result<Recording, crate::recording::RecordError> {
        let path = dir.join(default_file_name(crate::clock::now()));
        Self::start_at(&path, snapshots)
    }

    /// Start writing to `path`.
    pub fn start_at(
        path: &Path,
        mut snapshots: watch::Receiver<Arc<Snapshot>>,
    ) -> Result<Recording, crate::recording::RecordError> {
        let first = snapshots.borrow_and_update().clone();
        let mut recorder = Recorder::create(path, &first.system, first.stats.interval_s, false)?;
        let status = RecordingStatus {
            path: path.to_path_buf(),
            ticks: Arc::new(AtomicU64::new(0)),
            failed: Arc::new(AtomicBool::new(false)),
        };
        let stop = Arc::new(Notify::new());
        let (ticks, failed, stop_rx) = (status.ticks.clone(), status.failed.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("gpulse-recorder".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread().build() {
                    Ok(r) => r,
                    Err(e) => {
                        tracing::error!(target: "gpulse::events", "recording stopped: {e}");
                        failed.store(true, Ordering::Relaxed);
                        return;
                    }
                };
                let mut last_seq = first.seq;
                let mut write = |s: &Snapshot, rec: &mut Recorder| -> bool {
                    let Some(sample) = s.sample.as_deref() else {
                        return true;
                    };
                    if s.seq == last_seq {
                        return true;
                    }
                    last_seq = s.seq;
                    let findings: Vec<Finding> = s.active_findings().cloned().collect();
                    match rec.write_with_findings(sample, &findings) {
                        Ok(()) => {
                            ticks.fetch_add(1, Ordering::Relaxed);
                            true
                        }
                        Err(e) => {
                            tracing::error!(target: "gpulse::events", "recording stopped: {e}");
                            failed.store(true, Ordering::Relaxed);
                            false
                        }
                    }
                };
                runtime.block_on(async {
                    loop {
                        tokio::select! {
                            changed = snapshots.changed() => {
                                if changed.is_err() {
                                    break;
                                }
                                let s = snapshots.borrow_and_update().clone();
                                if !write(&s, &mut recorder) {
                                    return;
                                }
                            }
                            _ = stop_rx.notified() => break,
                        }
                    }
                });
                if let Err(e) = recorder.finish() {
                    tracing::error!(target: "gpulse::events", "recording not closed cleanly: {e}");
                    failed.store(true, Ordering::Relaxed);
                }
            })
            .map_err(|cause| crate::recording::RecordError::Write {
                path: path.to_path_buf(),
                cause,
            })?;
        tracing::info!(target: "gpulse::events", "recording to {}", path.display());
        Ok(Recording {
            status,
            stop,
            thread: Some(thread),
        })
    }

    pub fn status(&self) -> &RecordingStatus {
        &self.status
    }

    /// Stop writing and close the file (waits for the last line to be written).
    pub fn stop(mut self) -> RecordingStatus {
        self.finish();
        self.status.clone()
    }

    fn finish(&mut self) {
        self.stop.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
            if !self.status.failed() {
                tracing::info!(
                    target: "gpulse::events",
                    "recorded {} ticks to {}",
                    self.status.ticks(),
                    self.status.path.display()
                );
            }
        }
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_names_carry_the_utc_date_and_time() {
        // 2026-01-01 12:00:00 UTC
        assert_eq!(
            default_file_name(1_767_268_800.0),
            "gpulse-20260101-120000.ndjson.zst"
        );
        assert_eq!(default_file_name(0.0), "gpulse-19700101-000000.ndjson.zst");
        // 2024-02-29 23:59:59 UTC (a leap day)
        assert_eq!(
            default_file_name(1_709_251_199.0),
            "gpulse-20240229-235959.ndjson.zst"
        );
    }
}
