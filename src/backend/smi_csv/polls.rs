//! Rows without a GPU identity, grouped by poll.
//!
//! `nvidia-smi --query-gpu` without `index` writes every GPU's row each poll, in the same order,
//! each stamped when it was read: a few milliseconds apart (tens on the first poll, a stall of a
//! hundred now and then), then the poll interval until the next poll. The gaps between rows are
//! therefore short or long with a clear break between the two, and the long ones fall every N
//! rows, N the number of GPUs. That N is learnt from the first rows; when the gaps show no such
//! pattern the log is refused rather than read as one GPU (which would merge the GPUs).

use super::group::QueuedRow;
use super::header::QUERY;
use super::SmiCsvSource;
use crate::model::{DeviceInfo, GpuReading};

/// Rows read to learn the poll shape (32 polls of 64 GPUs).
const LEARN_ROWS: usize = 2048;
/// The most GPUs a poll is taken to hold.
const MAX_GPUS: usize = 64;
/// Timestamps are read to the millisecond: shorter gaps count as this.
const RESOLUTION_S: f64 = 0.001;
/// The least ratio between a poll's gap and the gaps inside a poll that tells them apart.
const MIN_BREAK: f64 = 3.0;
/// The longest typical gap between the rows of one poll (nvidia-smi reads a GPU's row in a
/// few milliseconds).
const MAX_IN_POLL_S: f64 = 0.05;
/// The share of polls that must follow the shape (the rest: stalls, a GPU that did not answer).
const MIN_REGULAR: f64 = 0.95;

/// How rows without a GPU identity make a poll.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum PollShape {
    /// `rows` rows a poll; a gap of `split_s` or more between two rows begins a poll.
    Count { rows: usize, split_s: f64 },
    /// The rows of a poll share their timestamp (too few polls to learn more from).
    SameTime,
}

impl PollShape {
    /// Rows a poll, when known.
    pub(super) fn rows(self) -> Option<usize> {
        match self {
            PollShape::Count { rows, .. } => Some(rows),
            PollShape::SameTime => None,
        }
    }
}

impl SmiCsvSource {
    /// Read the first rows ahead and learn the poll shape from their times; `Err` (why, and
    /// what to log instead) when they show none.
    pub(super) fn learn_polls(&mut self) -> Result<(), String> {
        while self.queue.len() < LEARN_ROWS {
            let mut reading = GpuReading::default();
            let mut info = DeviceInfo::default();
            let Some(meta) = self.next_row(&mut reading, Some(&mut info)) else {
                break;
            };
            self.queue.push_back(QueuedRow {
                meta,
                reading,
                info: Some(info),
            });
        }
        let times: Vec<f64> = self.queue.iter().filter_map(|q| q.meta.t).collect();
        if times.is_empty() {
            // No row: the caller says so.
            self.polls = Some(PollShape::SameTime);
            return Ok(());
        }
        match learn(&times) {
            Some(shape) => {
                self.polls = Some(shape);
                Ok(())
            }
            None => Err(format!(
                "its rows have no GPU identity (no `index`, `uuid` or `pci.bus_id` column) and their times do not tell which rows are one poll of several GPUs, so it cannot be read without mixing GPUs up; log with `{QUERY}`"
            )),
        }
    }
}

/// The poll shape of rows at `times`, or `None` when no single shape fits.
pub(super) fn learn(times: &[f64]) -> Option<PollShape> {
    let gaps: Vec<f64> = times
        .windows(2)
        .map(|w| (w[1] - w[0]).max(RESOLUTION_S))
        .collect();
    if gaps.len() < 3 {
        return same_time(times);
    }
    let mut sorted = gaps.clone();
    sorted.sort_by(f64::total_cmp);
    if let Some(shape) = count_shape(&gaps, &sorted) {
        return Some(shape);
    }
    // One GPU: every gap is a poll's (a few longer: a poll missed), none as short as the rows
    // of one poll.
    let q = |p: f64| sorted[((sorted.len() - 1) as f64 * p).round() as usize];
    if q(0.25) >= 0.5 * q(0.75) && q(0.25) > MAX_IN_POLL_S / 5.0 {
        return Some(PollShape::Count {
            rows: 1,
            split_s: 0.5 * q(0.25),
        });
    }
    same_time(times)
}

/// Several GPUs: a break between short and long gaps (the highest of those that fit), and the
/// long gaps every N rows.
fn count_shape(gaps: &[f64], sorted: &[f64]) -> Option<PollShape> {
    // At least one long gap per poll of the most GPUs; the longest gaps may be polls missed.
    let most_short = sorted.len() - sorted.len() / MAX_GPUS;
    (0..most_short.min(sorted.len() - 1))
        .rev()
        .filter(|&i| sorted[i + 1] >= MIN_BREAK * sorted[i])
        // The rows of one poll are read milliseconds apart.
        .filter(|&i| sorted[i / 2] <= MAX_IN_POLL_S)
        .find_map(|i| beat(gaps, (sorted[i] * sorted[i + 1]).sqrt()))
}

/// The shape when gaps of `split_s` or more fall every N rows (N from 2 to [`MAX_GPUS`]).
fn beat(gaps: &[f64], split_s: f64) -> Option<PollShape> {
    let long: Vec<usize> = (0..gaps.len()).filter(|&i| gaps[i] >= split_s).collect();
    let rows = most_common(long.windows(2).map(|w| w[1] - w[0]))?;
    if !(2..=MAX_GPUS).contains(&rows) {
        return None;
    }
    let phase = most_common(long.iter().map(|p| p % rows))?;
    let expected = (phase..gaps.len()).step_by(rows).count();
    let on_beat = long.iter().filter(|p| *p % rows == phase).count() as f64;
    let regular =
        on_beat >= MIN_REGULAR * long.len() as f64 && on_beat >= MIN_REGULAR * expected as f64;
    regular.then_some(PollShape::Count { rows, split_s })
}

/// The most frequent value (the smallest of equals).
fn most_common(values: impl Iterator<Item = usize>) -> Option<usize> {
    let mut counts: Vec<(usize, usize)> = Vec::new();
    for v in values {
        match counts.iter_mut().find(|(x, _)| *x == v) {
            Some((_, c)) => *c += 1,
            None => counts.push((v, 1)),
        }
    }
    counts
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
        .map(|(v, _)| v)
}

/// Too few rows to learn from gaps: polls whose rows share one timestamp, every poll but the
/// last the same size.
fn same_time(times: &[f64]) -> Option<PollShape> {
    let mut sizes = Vec::new();
    let mut run = 0;
    for (i, t) in times.iter().enumerate() {
        run += 1;
        if times.get(i + 1).is_none_or(|next| (next - t).abs() > 1e-6) {
            sizes.push(run);
            run = 0;
        }
    }
    let full = sizes.split_last().map_or(&[][..], |(_, rest)| rest);
    let first = *sizes.first()?;
    let last_fits = sizes.last().is_some_and(|l| *l <= first);
    // Rows all at different times are one GPU's only when their gaps say so (above).
    let shared = first > 1 || times.len() < 4;
    (shared && full.iter().all(|s| *s == first) && last_fits).then_some(PollShape::SameTime)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `polls` polls of `gpus` rows `spread` apart, every `interval`; `stall` after row 1 of
    /// poll 5.
    fn stamps(gpus: usize, polls: usize, spread: f64, interval: f64, stall: f64) -> Vec<f64> {
        let mut t = Vec::new();
        let mut start = 1_700_000_000.0;
        for p in 0..polls {
            let mut at = start;
            for g in 0..gpus {
                if p == 5 && g == 1 {
                    at += stall;
                }
                t.push(at);
                at += spread;
            }
            start = at - spread + interval;
        }
        t
    }

    #[test]
    fn the_gpus_of_a_poll_are_counted_from_the_gaps_between_rows() {
        for gpus in [1, 2, 3, 8, 16] {
            let t = stamps(gpus, 40, 0.001, 0.25, 0.151);
            let shape = learn(&t).expect("a shape");
            assert_eq!(shape.rows(), Some(gpus), "{gpus} GPUs: {shape:?}");
        }
        // Rows of one poll stamped alike.
        let t = stamps(8, 40, 0.0, 1.0, 0.0);
        assert_eq!(learn(&t).and_then(PollShape::rows), Some(8));
        // Ten-second polls.
        let t = stamps(2, 20, 0.004, 10.002, 0.0);
        assert_eq!(learn(&t).and_then(PollShape::rows), Some(2));
    }

    #[test]
    fn gaps_without_a_pattern_are_refused_and_two_polls_group_by_timestamp() {
        // Rows milliseconds apart, the long gaps at no fixed count of rows.
        let mut t = vec![1_700_000_000.0];
        for i in 1..400u64 {
            let gap = if (i * i) % 7 == 1 { 0.25 } else { 0.002 };
            t.push(t[t.len() - 1] + gap);
        }
        assert_eq!(learn(&t), None);
        // One GPU polled every second, some polls late or missed.
        let t: Vec<f64> = (0..200)
            .map(|i| i as f64 + (i % 13 / 12) as f64 * 0.4)
            .collect();
        assert_eq!(learn(&t).and_then(PollShape::rows), Some(1));
        let t = [5.0, 5.0, 6.0, 6.0];
        assert_eq!(learn(&t), Some(PollShape::SameTime));
    }
}
