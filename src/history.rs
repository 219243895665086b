//! Fixed-capacity time series, cheap to share with readers.
//!
//! [`RingBuffer`] keeps its items in chunks behind `Arc`s. Full chunks never change again, so a
//! snapshot takes a clone of the buffer (a few pointers) and the writer only copies the one chunk it
//! is still filling when a reader holds it: on the dashboard, at every tick (the screen holds the
//! last snapshot). Chunks therefore hold about [`CHUNK_BYTES`] each (at most [`MAX_CHUNK`] items):
//! a tick's readings are 344 bytes, so 47 to a chunk. The oldest chunk is dropped once the buffer
//! holds more than its capacity, so it always holds at least `capacity` items once that many were
//! pushed (and never more than `capacity + chunk - 1`); `iter` yields exactly the newest
//! `capacity`.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::model::{Metrics, UnixTime, UtilWindow};

/// About how many bytes of items a chunk holds: the most the writer copies per push.
pub const CHUNK_BYTES: usize = 16 * 1024;
/// The most items a chunk holds (for small items).
pub const MAX_CHUNK: usize = 256;

/// Items per chunk for items of `size` bytes.
const fn chunk_len(size: usize) -> usize {
    let n = CHUNK_BYTES / if size == 0 { 1 } else { size };
    if n < 16 {
        16
    } else if n > MAX_CHUNK {
        MAX_CHUNK
    } else {
        n
    }
}

/// A bounded, append-only series that readers can clone in O(chunks).
#[derive(Debug, Clone)]
pub struct RingBuffer<T> {
    chunks: VecDeque<Arc<Vec<T>>>,
    capacity: usize,
    len: usize,
    /// Items pushed since creation (for "samples total" counters).
    pushed: u64,
}

impl<T: Clone> RingBuffer<T> {
    /// A buffer keeping the newest `capacity` items (at least one).
    pub fn new(capacity: usize) -> Self {
        RingBuffer {
            chunks: VecDeque::new(),
            capacity: capacity.max(1),
            len: 0,
            pushed: 0,
        }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Items visible to readers (at most `capacity`).
    pub fn len(&self) -> usize {
        self.len.min(self.capacity)
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn pushed(&self) -> u64 {
        self.pushed
    }

    /// Items per chunk.
    pub const CHUNK: usize = chunk_len(std::mem::size_of::<T>());

    pub fn push(&mut self, item: T) {
        let need_new = self.chunks.back().is_none_or(|c| c.len() >= Self::CHUNK);
        if need_new {
            self.chunks
                .push_back(Arc::new(Vec::with_capacity(Self::CHUNK)));
        }
        if let Some(last) = self.chunks.back_mut() {
            match Arc::get_mut(last) {
                Some(chunk) => chunk.push(item),
                None => {
                    // A reader holds it: copy it, with room for the rest of the chunk.
                    let mut chunk = Vec::with_capacity(Self::CHUNK);
                    chunk.extend_from_slice(last);
                    chunk.push(item);
                    *last = Arc::new(chunk);
                }
            }
        }
        self.len += 1;
        self.pushed += 1;
        // Drop the oldest chunk once the rest still covers the capacity.
        while let Some(front) = self.chunks.front() {
            if self.len - front.len() >= self.capacity {
                self.len -= front.len();
                self.chunks.pop_front();
            } else {
                break;
            }
        }
    }

    /// The newest item.
    pub fn last(&self) -> Option<&T> {
        self.chunks.back().and_then(|c| c.last())
    }

    /// The newest `capacity` items, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        let skip = self.len.saturating_sub(self.capacity);
        self.chunks.iter().flat_map(|c| c.iter()).skip(skip)
    }

    /// The newest items, newest first.
    pub fn iter_rev(&self) -> impl Iterator<Item = &T> + '_ {
        let visible = self.len();
        self.chunks
            .iter()
            .rev()
            .flat_map(|c| c.iter().rev())
            .take(visible)
    }

    /// The newest items as slices, newest slice first, each oldest first (what [`Self::iter_rev`]
    /// yields, for loops that walk back without an iterator per item).
    pub fn chunks_rev(&self) -> impl Iterator<Item = &[T]> + '_ {
        let skip = self.len.saturating_sub(self.capacity);
        self.chunks.iter().enumerate().rev().map(move |(i, c)| {
            if i == 0 {
                c.get(skip..).unwrap_or(&[])
            } else {
                &c[..]
            }
        })
    }

    pub fn clear(&mut self) {
        self.chunks.clear();
        self.len = 0;
    }
}

/// Something stamped with a time, so a series can be cut to a window.
pub trait Timed {
    fn time(&self) -> UnixTime;
}

impl Timed for UtilWindow {
    fn time(&self) -> UnixTime {
        self.t
    }
}

/// One tick of one GPU's scalar readings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TickMetrics {
    pub t: UnixTime,
    /// False when the GPU did not answer this tick (stale or lost): every metric is then absent.
    pub ok: bool,
    pub metrics: Metrics,
}

impl Timed for TickMetrics {
    fn time(&self) -> UnixTime {
        self.t
    }
}

impl<T: Clone + Timed> RingBuffer<T> {
    /// Items with `time() >= since`, oldest first.
    pub fn since(&self, since: UnixTime) -> Vec<T> {
        let mut out: Vec<T> = self
            .iter_rev()
            .take_while(|x| x.time() >= since)
            .cloned()
            .collect();
        out.reverse();
        out
    }
}

/// Everything remembered about one GPU.
#[derive(Debug, Clone)]
pub struct GpuHistory {
    /// One entry per tick.
    pub ticks: RingBuffer<TickMetrics>,
    /// One entry per driver utilization window (on the H200: every 200 ms, none skipped).
    pub util: RingBuffer<UtilWindow>,
}

impl GpuHistory {
    /// Room for `retention_s` of ticks at `interval_s`, and of driver windows at up to 20 per second.
    pub fn new(retention_s: f64, interval_s: f64) -> Self {
        let ticks = (retention_s / interval_s.max(0.01)).ceil() as usize + 1;
        let windows = (retention_s * 20.0).ceil() as usize + 1;
        GpuHistory {
            ticks: RingBuffer::new(ticks),
            util: RingBuffer::new(windows),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_newest_capacity_items_in_order() {
        let mut r = RingBuffer::new(1000);
        for i in 0..5000u32 {
            r.push(i);
        }
        assert_eq!(r.len(), 1000);
        let v: Vec<u32> = r.iter().copied().collect();
        assert_eq!(v.first(), Some(&4000));
        assert_eq!(v.last(), Some(&4999));
        assert!(v.windows(2).all(|w| w[1] == w[0] + 1));
        assert_eq!(r.last(), Some(&4999));
        assert_eq!(r.pushed(), 5000);
        let rev: Vec<u32> = r.iter_rev().copied().collect();
        assert_eq!(rev.len(), 1000);
        assert_eq!(rev[0], 4999);
        assert_eq!(rev[999], 4000);
    }

    #[test]
    fn below_capacity_and_exactly_at_capacity() {
        let mut r = RingBuffer::new(3);
        assert!(r.is_empty());
        assert_eq!(r.last(), None);
        r.push(1);
        r.push(2);
        assert_eq!(r.iter().copied().collect::<Vec<_>>(), vec![1, 2]);
        r.push(3);
        assert_eq!(r.iter().copied().collect::<Vec<_>>(), vec![1, 2, 3]);
        r.push(4);
        assert_eq!(r.iter().copied().collect::<Vec<_>>(), vec![2, 3, 4]);
        assert_eq!(r.len(), 3);
    }

    #[test]
    fn wraps_across_chunk_boundaries_for_odd_capacities() {
        for cap in [1, 2, 255, 256, 257, 511, 700] {
            let mut r = RingBuffer::new(cap);
            for i in 0..(cap * 3 + 17) {
                r.push(i);
                let v: Vec<usize> = r.iter().copied().collect();
                let want: Vec<usize> = (i.saturating_sub(cap - 1)..=i).collect();
                assert_eq!(v, want, "cap {cap} after {i}");
            }
            // Memory stays bounded: never more than one chunk beyond the capacity.
            assert!(
                r.chunks.iter().map(|c| c.len()).sum::<usize>() < cap + RingBuffer::<usize>::CHUNK
            );
        }
    }

    #[test]
    fn chunks_hold_about_16_kib_and_a_held_one_is_copied_with_room_to_grow() {
        assert_eq!(std::mem::size_of::<TickMetrics>(), 344);
        assert_eq!(RingBuffer::<TickMetrics>::CHUNK, 16 * 1024 / 344);
        assert_eq!(RingBuffer::<UtilWindow>::CHUNK, MAX_CHUNK);
        assert_eq!(RingBuffer::<[u8; 4096]>::CHUNK, 16);
        let mut r = RingBuffer::new(1000);
        for tick in 0..200u32 {
            let held = r.clone();
            r.push(tick);
            // The reader's view is unchanged; the writer's chunk was copied once, with room for
            // the rest of the chunk (no growth on the following pushes).
            assert_eq!(held.len(), tick as usize);
            let last = r.chunks.back().expect("a chunk");
            assert_eq!(last.capacity(), RingBuffer::<u32>::CHUNK);
        }
    }

    #[test]
    fn chunks_rev_hold_what_iter_rev_yields() {
        for (cap, pushes) in [(5, 3), (300, 1000), (256, 256), (257, 600), (1, 10)] {
            let mut r = RingBuffer::new(cap);
            for i in 0..pushes {
                r.push(i);
            }
            let from_chunks: Vec<i32> = r
                .chunks_rev()
                .flat_map(|c| c.iter().rev().copied())
                .collect();
            let from_iter: Vec<i32> = r.iter_rev().copied().collect();
            assert_eq!(from_chunks, from_iter, "capacity {cap}, {pushes} pushes");
        }
    }

    #[test]
    fn a_clone_is_unaffected_by_later_pushes() {
        let mut r = RingBuffer::new(600);
        for i in 0..300 {
            r.push(i);
        }
        let snap = r.clone();
        for i in 300..2000 {
            r.push(i);
        }
        assert_eq!(snap.len(), 300);
        assert_eq!(snap.last(), Some(&299));
        assert_eq!(snap.iter().next(), Some(&0));
        assert_eq!(r.last(), Some(&1999));
        // Full chunks are shared, not copied.
        let mut s2 = r.clone();
        assert!(Arc::ptr_eq(&r.chunks[0], &s2.chunks[0]));
        s2.push(5);
        assert_eq!(r.last(), Some(&1999));
    }

    #[test]
    fn gaps_are_kept_as_absent_readings() {
        let mut r = RingBuffer::new(10);
        for i in 0..6 {
            let ok = i != 3;
            r.push(TickMetrics {
                t: i as f64,
                ok,
                metrics: Metrics {
                    util_gpu: ok.then_some(50.0),
                    ..Default::default()
                },
            });
        }
        let utils: Vec<Option<f64>> = r.iter().map(|m| m.metrics.util_gpu).collect();
        assert_eq!(utils[3], None);
        assert_eq!(utils[2], Some(50.0));
        let recent = r.since(3.0);
        assert_eq!(recent.len(), 3);
        assert!(!recent[0].ok);
    }
}
