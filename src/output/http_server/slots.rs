//! The live connections and which one gives way when there are too many.
//!
//! Every connection is accepted. When [`Limits::max_connections`](super::Limits) are already
//! open, the one that has waited longest for nothing is closed to make room: an idle keep-alive
//! connection first (its client simply reconnects), else the oldest one still sending its
//! request head, else the oldest one being answered. A scraper that sends its request at once is
//! the newest connection while it is served, so slow or idle clients, however many, cannot keep
//! it out; they only push each other out.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::Notify;

/// What a connection is doing, in the order connections are closed to make room.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// Between requests on a keep-alive connection.
    Idle,
    /// Handshake and request head under way.
    Head,
    /// Writing a response.
    Answering,
}

impl Phase {
    fn from_u8(v: u8) -> Phase {
        match v {
            0 => Phase::Idle,
            1 => Phase::Head,
            _ => Phase::Answering,
        }
    }
}

/// A connection's phase and when it began (nanoseconds since the table's epoch), changed by the
/// connection without taking the table's lock.
struct State {
    phase: AtomicU8,
    since_ns: AtomicU64,
}

struct Entry {
    state: Arc<State>,
    close: Arc<Notify>,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    live: HashMap<u64, Entry>,
}

/// The table of live connections.
pub struct Slots {
    max: usize,
    epoch: Instant,
    inner: Mutex<Inner>,
}

/// One connection's place in the table; leaving the table when dropped.
pub struct Slot {
    slots: Arc<Slots>,
    id: u64,
    state: Arc<State>,
    /// Notified when the connection must close to make room.
    pub close: Arc<Notify>,
}

impl Slots {
    pub fn new(max: usize) -> Arc<Slots> {
        Arc::new(Slots {
            max: max.max(1),
            epoch: Instant::now(),
            inner: Mutex::new(Inner::default()),
        })
    }

    /// Admit a new connection (in phase [`Phase::Head`]), closing another if the table is full.
    pub fn admit(self: &Arc<Self>) -> Slot {
        let close = Arc::new(Notify::new());
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        while inner.live.len() >= self.max {
            let victim = inner
                .live
                .iter()
                .min_by_key(|(_, e)| {
                    let phase = Phase::from_u8(e.state.phase.load(Ordering::Relaxed));
                    (phase, e.state.since_ns.load(Ordering::Relaxed))
                })
                .map(|(id, _)| *id);
            let Some(victim) = victim else { break };
            if let Some(e) = inner.live.remove(&victim) {
                e.close.notify_one();
            }
        }
        let id = inner.next_id;
        inner.next_id += 1;
        let state = Arc::new(State {
            phase: AtomicU8::new(Phase::Head as u8),
            since_ns: AtomicU64::new(self.now_ns()),
        });
        inner.live.insert(
            id,
            Entry {
                state: state.clone(),
                close: close.clone(),
            },
        );
        Slot {
            slots: self.clone(),
            id,
            state,
            close,
        }
    }

    fn now_ns(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.inner.lock().map_or(0, |i| i.live.len())
    }
}

impl Slot {
    /// The connection enters `phase` now.
    pub fn enter(&self, phase: Phase) {
        self.state.phase.store(phase as u8, Ordering::Relaxed);
        self.state
            .since_ns
            .store(self.slots.now_ns(), Ordering::Relaxed);
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut inner = self.slots.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.live.remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn closed(slot: &Slot) -> bool {
        let wait = std::time::Duration::from_millis(5);
        tokio::time::timeout(wait, slot.close.notified())
            .await
            .is_ok()
    }

    #[tokio::test]
    async fn idle_connections_give_way_first_then_the_oldest_head() {
        let slots = Slots::new(3);
        let a = slots.admit();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = slots.admit();
        let c = slots.admit();
        c.enter(Phase::Idle);
        // Full: the idle one goes, though it is the newest.
        let d = slots.admit();
        assert!(closed(&c).await && !closed(&a).await && !closed(&b).await);
        assert_eq!(slots.open(), 3);
        // Full again, nobody idle: the oldest head goes.
        b.enter(Phase::Answering);
        let _e = slots.admit();
        assert!(closed(&a).await && !closed(&b).await && !closed(&d).await);
        drop(c);
        drop(a);
        assert_eq!(slots.open(), 3);
    }
}
