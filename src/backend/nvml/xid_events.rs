//! XID events on a thread of their own: one NVML event set with every GPU registered for
//! critical XID errors, waited on with a timeout so the thread can stop. Each XID goes to its
//! GPU's queue, which the GPU's sampler empties at its next tick.
//!
//! XIDs that happened before the set was registered are not delivered: each GPU's watch says
//! since when it is watched. A GPU the driver refuses to register, or a thread that fails, says
//! why once (a warning in the log, and the GPU's watch), and sampling goes on without XIDs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enums::event::XidError;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, EventSet, Nvml};

use super::health::XidWatchCell;
use crate::model::{XidEvent, XidWatch};

/// How long one wait on the event set lasts (the thread checks whether to stop between waits).
const WAIT_MS: u32 = 500;
/// Failed waits in a row (other than timeouts) after which the thread gives up.
const MAX_FAILED_WAITS: u32 = 10;

/// One GPU's XIDs waiting for its sampler.
pub type XidQueue = Arc<Mutex<Vec<XidEvent>>>;

/// The XID feed of every GPU; the thread stops when this is dropped.
pub struct XidFeed {
    /// Per GPU (by position): its queue and its watch.
    pub gpus: Vec<(XidQueue, XidWatchCell)>,
    stop: Arc<AtomicBool>,
}

impl Drop for XidFeed {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Start watching the XIDs of `devices` (`(index, device)`, in the backend's order).
pub fn start(nvml: &'static Nvml, devices: Vec<(u32, Device<'static>)>) -> Arc<XidFeed> {
    let gpus: Vec<(XidQueue, XidWatchCell)> = devices
        .iter()
        .map(|_| (Arc::default(), Arc::default()))
        .collect();
    let feed = Arc::new(XidFeed {
        gpus: gpus.clone(),
        stop: Arc::new(AtomicBool::new(false)),
    });
    let stop = feed.stop.clone();
    let cells: Vec<XidWatchCell> = gpus.iter().map(|g| g.1.clone()).collect();
    // Registered before the first tick, so the first health read says since when.
    let set = match register(nvml, &devices, &cells) {
        Ok((set, watched)) if !watched.is_empty() => set,
        Ok(_) => return feed,
        Err(e) => {
            unavailable(&cells, &format!("the driver refused an event set: {e}"));
            return feed;
        }
    };
    let thread_cells = cells.clone();
    let spawned = std::thread::Builder::new()
        .name("gpulse-xid".into())
        .spawn(move || watch(set, &devices, &gpus, &thread_cells, &stop));
    if let Err(e) = spawned {
        unavailable(&cells, &format!("the XID thread did not start: {e}"));
    }
    feed
}

/// Mark every GPU unwatched, saying why once.
fn unavailable(cells: &[XidWatchCell], reason: &str) {
    tracing::warn!("XID events are not watched: {reason}");
    for c in cells {
        if let Ok(mut w) = c.lock() {
            *w = Some(XidWatch::Unavailable {
                reason: reason.to_string(),
            });
        }
    }
}

fn set_watch(cell: &XidWatchCell, w: XidWatch) {
    if let Ok(mut c) = cell.lock() {
        *c = Some(w);
    }
}

/// Register every GPU that accepts it in one event set. A refusal frees the set (NVML's rule),
/// so the set is made again with the GPUs registered so far.
fn register(
    nvml: &'static Nvml,
    devices: &[(u32, Device<'static>)],
    cells: &[XidWatchCell],
) -> Result<(EventSet<'static>, Vec<u32>), NvmlError> {
    let mut set = nvml.create_event_set()?;
    let mut watched: Vec<usize> = Vec::new();
    for (pos, (index, d)) in devices.iter().enumerate() {
        match d.register_events(EventTypes::CRITICAL_XID_ERROR, set) {
            Ok(s) => {
                set = s;
                watched.push(pos);
            }
            Err(e) => {
                let reason = format!("GPU {index} refused XID events: {}", e.error);
                tracing::warn!("{reason}");
                set_watch(&cells[pos], XidWatch::Unavailable { reason });
                set = nvml.create_event_set()?;
                for &p in &watched {
                    set = devices[p]
                        .1
                        .register_events(EventTypes::CRITICAL_XID_ERROR, set)
                        .map_err(|e| e.error)?;
                }
            }
        }
    }
    let since = crate::clock::now();
    for &p in &watched {
        set_watch(&cells[p], XidWatch::Watching { since });
    }
    Ok((set, watched.iter().map(|&p| devices[p].0).collect()))
}

/// The thread: wait for XIDs until told to stop, or until the event set keeps failing.
fn watch(
    set: EventSet<'static>,
    devices: &[(u32, Device<'static>)],
    gpus: &[(XidQueue, XidWatchCell)],
    cells: &[XidWatchCell],
    stop: &AtomicBool,
) {
    let mut failed = 0;
    while !stop.load(Ordering::Relaxed) {
        match set.wait(WAIT_MS) {
            Ok(ev) => {
                failed = 0;
                let xid = match ev.event_data {
                    Some(XidError::Value(x)) => x,
                    Some(XidError::Unknown) => 999,
                    None => continue,
                };
                let index = ev.device.index().ok();
                let pos = devices.iter().position(|(i, _)| Some(*i) == index);
                if let Some((queue, _)) = pos.and_then(|p| gpus.get(p)) {
                    if let Ok(mut q) = queue.lock() {
                        q.push(XidEvent {
                            t: crate::clock::now(),
                            xid,
                        });
                    }
                }
            }
            Err(NvmlError::Timeout) => failed = 0,
            Err(e) => {
                failed += 1;
                if failed >= MAX_FAILED_WAITS {
                    let reason = format!("waiting for XID events kept failing: {e}");
                    return unavailable(cells, &reason);
                }
                // A GPU lost answers at once: do not spin.
                std::thread::sleep(Duration::from_millis(u64::from(WAIT_MS)));
            }
        }
    }
}
