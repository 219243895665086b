//! History cut into the columns of a chart. Each reading covers the span before its time (a
//! driver window, or a tick); a column shows the mean of the readings that overlap it, and is
//! absent when none do or when all that do are absent.

use crate::engine::GpuSnapshot;
use crate::history::{GpuHistory, TickMetrics};
use crate::model::{FindingKind, Metrics, UnixTime};

/// The time span a chart shows: `columns` equal columns ending at `end`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    pub end: UnixTime,
    pub window_s: f64,
    pub columns: usize,
}

impl Span {
    pub fn start(&self) -> UnixTime {
        self.end - self.window_s
    }

    fn column_s(&self) -> f64 {
        self.window_s / self.columns.max(1) as f64
    }

    /// The column holding time `t` (may be out of range).
    fn column_of(&self, t: f64) -> i64 {
        ((t - self.start()) / self.column_s()).floor() as i64
    }

    /// Start and end time of column `i`.
    pub fn column_bounds(&self, i: usize) -> (f64, f64) {
        let a = self.start() + i as f64 * self.column_s();
        (a, a + self.column_s())
    }
}

/// One column per `span` column: the mean of the readings `(t, value)` that overlap it, each
/// covering `(t - cover, t]`. `points` are newest first. Columns older than the oldest reading
/// are `None` and counted in the returned `leading`, so a chart can leave them blank rather than
/// drawing them as gaps.
pub fn columns(points: impl Iterator<Item = (f64, Option<f64>)>, cover: f64, span: Span) -> Binned {
    let n = span.columns;
    let mut sum = vec![0.0f64; n];
    let mut count = vec![0u32; n];
    let mut oldest: Option<f64> = None;
    let start = span.start();
    for (t, v) in points {
        if t <= start {
            // Covers only time before the span; the history reaches back past it.
            oldest = Some(t - cover);
            break;
        }
        oldest = Some(t - cover);
        let Some(v) = v.filter(|v| v.is_finite()) else {
            continue;
        };
        let first = span.column_of((t - cover).max(start) + 1e-9).max(0);
        let last = span.column_of(t - 1e-9).min(n as i64 - 1);
        for c in first..=last {
            if c >= 0 {
                sum[c as usize] += v;
                count[c as usize] += 1;
            }
        }
    }
    let values: Vec<Option<f64>> = (0..n)
        .map(|i| (count[i] > 0).then(|| sum[i] / count[i] as f64))
        .collect();
    let leading = match oldest {
        None => n,
        Some(t0) if t0 <= start => 0,
        Some(t0) => (span.column_of(t0).clamp(0, n as i64)) as usize,
    };
    Binned { values, leading }
}

/// A chart's columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Binned {
    pub values: Vec<Option<f64>>,
    /// Columns before the history begins.
    pub leading: usize,
}

/// Newest-first ticks reaching back to `since`.
fn recent_ticks(g: &GpuSnapshot, since: f64) -> impl Iterator<Item = &TickMetrics> {
    g.history.ticks.iter_rev().take_while(move |m| m.t > since)
}

/// A tick metric of one GPU over the span.
pub fn tick_metric(
    g: &GpuSnapshot,
    span: Span,
    interval: f64,
    f: impl Fn(&Metrics) -> Option<f64>,
) -> Binned {
    let since = span.start() - interval;
    columns(
        recent_ticks(g, since).map(|m| (m.t, if m.ok { f(&m.metrics) } else { None })),
        interval,
        span,
    )
}

/// The highest reading of a tick metric within the span (not a column mean).
pub fn tick_peak(g: &GpuSnapshot, span: Span, f: impl Fn(&Metrics) -> Option<f64>) -> Option<f64> {
    recent_ticks(g, span.start())
        .filter(|m| m.ok)
        .filter_map(|m| f(&m.metrics))
        .reduce(f64::max)
}

/// Utilization over the span from the driver's windows (the finest signal), or from ticks when
/// the source gives no windows.
pub fn utilization(g: &GpuSnapshot, span: Span, interval: f64) -> Binned {
    if g.history.util.is_empty() {
        return tick_metric(g, span, interval, |m| m.util_gpu);
    }
    utilization_of(&g.history, span, interval)
}

/// The mean utilization of the `secs` seconds before `end`: of the driver's windows, or of the
/// ticks' readings where there is no window in that time. `None` when there is no reading.
pub fn recent_util_mean(g: &GpuSnapshot, end: UnixTime, secs: f64) -> Option<f64> {
    let since = end - secs;
    let mut values: Vec<f64> = g
        .history
        .util
        .iter_rev()
        .take_while(|w| w.t > since)
        .map(|w| w.util)
        .collect();
    if values.is_empty() {
        values = recent_ticks(g, since)
            .filter(|m| m.ok)
            .filter_map(|m| m.metrics.util_gpu)
            .collect();
    }
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// [`utilization`] from a GPU's history that has driver windows.
pub fn utilization_of(history: &GpuHistory, span: Span, interval: f64) -> Binned {
    let g = history;
    // The window length: the smallest spacing among the newest windows.
    let mut cover = f64::INFINITY;
    let mut prev: Option<f64> = None;
    for w in g.util.iter_rev().take(16) {
        if let Some(p) = prev {
            let d = p - w.t;
            if d > 0.0 {
                cover = cover.min(d);
            }
        }
        prev = Some(w.t);
    }
    let cover = if cover.is_finite() { cover } else { interval };
    let since = span.start() - cover;
    // The driver's buffer is read every few ticks: a tick more than one window past the newest
    // window shows, as its current value, a window the history does not have yet; those ticks
    // stand in until the windows arrive.
    let newest = g
        .util
        .iter_rev()
        .next()
        .map_or(since, |w| (w.t + cover).max(since));
    let tail = g
        .ticks
        .iter_rev()
        .take_while(|m| m.t > newest)
        .filter(|m| m.ok)
        .map(|m| (m.t, m.metrics.util_gpu));
    // Windows exist only while the GPU answers: a failed tick leaves no window, so the columns
    // it covers have nothing to average and stay absent.
    columns(
        tail.chain(
            g.util
                .iter_rev()
                .take_while(|w| w.t > since)
                .map(|w| (w.t, Some(w.util))),
        ),
        cover,
        span,
    )
}

/// Findings whose dips the util chart marks.
pub const DIP_KINDS: [FindingKind; 3] = [
    FindingKind::InputStarvation,
    FindingKind::ErraticStalls,
    FindingKind::PeriodicStall,
];

/// Below this utilization (percent) a column inside a stall finding counts as a dip.
pub const DIP_UTIL: f64 = 20.0;

/// For each column: whether it is a dip (utilization below [`DIP_UTIL`]) inside the time an
/// active stall finding covers.
pub fn dip_marks(g: &GpuSnapshot, util: &Binned, span: Span) -> Vec<bool> {
    let covers: Vec<(f64, f64)> = g
        .findings
        .iter()
        .filter(|f| DIP_KINDS.contains(&f.kind))
        .map(|f| (f.start, f.end.unwrap_or(f64::INFINITY)))
        .collect();
    util.values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let (a, b) = span.column_bounds(i);
            v.is_some_and(|u| u < DIP_UTIL) && covers.iter().any(|&(s, e)| b > s && a < e)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(cols: usize) -> Span {
        Span {
            end: 100.0,
            window_s: 10.0,
            columns: cols,
        }
    }

    #[test]
    fn each_column_is_the_mean_of_what_overlaps_it() {
        // Readings every second covering the second before; 10 columns of one second.
        let pts: Vec<(f64, Option<f64>)> = (91..=100)
            .rev()
            .map(|t| (t as f64, Some(t as f64)))
            .collect();
        let b = columns(pts.into_iter(), 1.0, span(10));
        assert_eq!(b.leading, 0);
        let want: Vec<Option<f64>> = (91..=100).map(|t| Some(t as f64)).collect();
        assert_eq!(b.values, want);
    }

    #[test]
    fn finer_columns_than_readings_repeat_the_reading_not_gaps() {
        let pts = vec![(100.0, Some(50.0)), (98.0, Some(10.0))];
        let b = columns(pts.into_iter(), 2.0, span(10));
        // Columns 96..98 take 10, 98..100 take 50; before 96 there is no history.
        assert_eq!(b.values[9], Some(50.0));
        assert_eq!(b.values[8], Some(50.0));
        assert_eq!(b.values[7], Some(10.0));
        assert_eq!(b.values[6], Some(10.0));
        assert_eq!(b.values[5], None);
        assert_eq!(b.leading, 6);
    }

    #[test]
    fn absent_readings_are_gaps_not_zero() {
        let pts = vec![(100.0, Some(5.0)), (99.0, None), (98.0, Some(7.0))];
        let b = columns(pts.into_iter(), 1.0, span(10));
        assert_eq!(b.values[9], Some(5.0));
        assert_eq!(b.values[8], None);
        assert_eq!(b.values[7], Some(7.0));
    }

    #[test]
    fn coarse_columns_average() {
        let pts: Vec<(f64, Option<f64>)> = (1..=40)
            .rev()
            .map(|k| {
                (
                    90.0 + k as f64 * 0.25,
                    Some(if k % 2 == 0 { 100.0 } else { 0.0 }),
                )
            })
            .collect();
        let b = columns(pts.into_iter(), 0.25, span(5));
        for v in b.values {
            assert_eq!(v, Some(50.0));
        }
    }

    #[test]
    fn ticks_after_the_newest_window_stand_in_until_the_windows_arrive() {
        use crate::model::UtilWindow;
        let mut h = GpuHistory::new(60.0, 0.25);
        // Windows every 200 ms up to t = 98 at 40 %; ticks every 250 ms up to t = 100 at 90 %.
        for i in 0..40 {
            h.util.push(UtilWindow {
                t: 90.2 + 0.2 * f64::from(i),
                util: 40.0,
            });
        }
        for i in 0..40 {
            h.ticks.push(TickMetrics {
                t: 90.25 + 0.25 * f64::from(i),
                ok: true,
                metrics: Metrics {
                    util_gpu: Some(90.0),
                    ..Default::default()
                },
            });
        }
        let b = utilization_of(&h, span(10), 0.25);
        assert_eq!(b.values[..8], [Some(40.0); 8], "windows where they exist");
        assert_eq!(
            b.values[8..],
            [Some(90.0); 2],
            "then the ticks' current values"
        );
    }
}
