//! Rows grouped into samples, one row per GPU: a sample ends where a GPU repeats, or, for rows
//! without a GPU identity, where the poll shape says ([`super::polls`]).

use super::lines::{too_long, RawLine};
use super::polls::PollShape;
use super::row::{NoRow, RowKey, RowMeta};
use super::{SmiCsvSource, MIN_WINDOW_S};
use crate::model::{DeviceInfo, GpuReading, Sample, UtilWindow};

/// A row read ahead of its sample.
pub(super) struct QueuedRow {
    pub(super) meta: RowMeta,
    pub(super) reading: GpuReading,
    /// Its device facts, while the GPUs are being learnt.
    pub(super) info: Option<DeviceInfo>,
}

/// Where a row falls against the sample being read.
enum Fit {
    /// In the sample.
    Joins,
    /// After it: the row begins the next sample.
    Next,
    /// The sample so far is a poll cut short (fewer rows than GPUs before a poll's gap): it is
    /// dropped and the row begins a new one.
    Restart,
}

impl SmiCsvSource {
    /// Count line `line` as unreadable.
    pub(super) fn bad(&mut self, line: usize) {
        self.counts.bad_lines += 1;
        self.counts.first_bad.get_or_insert(line);
    }

    /// The next good row, parsed into `out`, skipping and counting bad lines.
    pub(super) fn next_row(
        &mut self,
        out: &mut GpuReading,
        mut info: Option<&mut DeviceInfo>,
    ) -> Option<RowMeta> {
        while !self.done {
            let stop = match self.lines.read_raw() {
                Ok(RawLine::Line) => None,
                Ok(RawLine::End) => Some(None),
                Ok(RawLine::TooLong) => Some(Some(too_long(self.lines.line_no).to_string())),
                Err(e) => Some(Some(format!("line {}: {e}", self.lines.line_no + 1))),
            };
            if let Some(why) = stop {
                self.done = true;
                self.stopped = why;
                break;
            }
            let n = self.lines.line_no;
            let raw = std::mem::take(&mut self.lines.raw);
            let parsed = match std::str::from_utf8(raw.trim_ascii()) {
                Ok(line) if self.layout.skips(line) => Err(NoRow::NotGpu),
                Ok(line) => self.parse_row(line, out, info.as_deref_mut()),
                Err(_) => Err(NoRow::Bad),
            };
            self.lines.raw = raw;
            match parsed {
                Ok(meta) => {
                    self.counts.rows += 1;
                    return Some(meta);
                }
                Err(why) => {
                    // Start the next line from a clean reading.
                    *out = GpuReading::default();
                    if let Some(info) = info.as_deref_mut() {
                        *info = DeviceInfo::default();
                    }
                    if why == NoRow::Bad {
                        self.bad(n)
                    }
                }
            }
        }
        None
    }

    /// Readings of one sample. Each row is parsed in place; `self.metas` gets their times and
    /// identities, and `infos` (when learning the GPUs) their device facts.
    pub(super) fn next_group(
        &mut self,
        mut infos: Option<&mut Vec<DeviceInfo>>,
    ) -> Vec<GpuReading> {
        self.metas.clear();
        // One more than the GPUs: the row that ends the sample is parsed here too.
        let mut gpus: Vec<GpuReading> = Vec::with_capacity(self.system.devices.len() + 1);
        loop {
            let learning = infos.is_some();
            let Some((meta, info)) = self.take_row(&mut gpus, learning) else {
                break;
            };
            match self.fit(&meta, gpus.len() - 1) {
                Fit::Joins => {}
                Fit::Next => {
                    if let Some(reading) = gpus.pop() {
                        self.queue.push_front(QueuedRow {
                            meta,
                            reading,
                            info,
                        });
                    }
                    break;
                }
                Fit::Restart => {
                    let dropped = gpus.len() - 1;
                    self.counts.incomplete_rows += dropped;
                    gpus.drain(..dropped);
                    self.metas.clear();
                    if let Some(infos) = infos.as_deref_mut() {
                        infos.clear();
                    }
                }
            }
            self.metas.push(meta);
            if let Some(infos) = infos.as_deref_mut() {
                infos.push(info.unwrap_or_default());
            }
            if self.polls.and_then(PollShape::rows) == Some(self.metas.len()) {
                break;
            }
        }
        gpus
    }

    /// The next row, queued or read, pushed onto `gpus`; its time and identity, and its device
    /// facts when `learning`.
    fn take_row(
        &mut self,
        gpus: &mut Vec<GpuReading>,
        learning: bool,
    ) -> Option<(RowMeta, Option<DeviceInfo>)> {
        if let Some(q) = self.queue.pop_front() {
            gpus.push(q.reading);
            return Some((q.meta, q.info));
        }
        gpus.push(GpuReading::default());
        let mut info = learning.then(DeviceInfo::default);
        let out = gpus.last_mut()?;
        match self.next_row(out, info.as_mut()) {
            Some(meta) => Some((meta, info)),
            None => {
                gpus.pop();
                None
            }
        }
    }

    /// Where a row falls against the `rows` rows of the sample read so far.
    fn fit(&self, meta: &RowMeta, rows: usize) -> Fit {
        let Some(last) = self.metas.last() else {
            return Fit::Joins;
        };
        match (&meta.key, self.polls) {
            (RowKey::None, Some(PollShape::Count { split_s, .. })) => {
                let gap = match (meta.t, last.t) {
                    (Some(t), Some(l)) => t - l,
                    _ => 0.0,
                };
                if gap >= split_s && rows > 0 {
                    Fit::Restart
                } else {
                    Fit::Joins
                }
            }
            (RowKey::None, _) => {
                let first = self.metas.first().and_then(|m| m.t);
                match (meta.t, first) {
                    (Some(t), Some(f)) if (t - f).abs() > 1e-6 => Fit::Next,
                    _ => Fit::Joins,
                }
            }
            (k, _) if self.metas.iter().any(|r| &r.key == k) => Fit::Next,
            _ => Fit::Joins,
        }
    }

    /// Place a sample of a log without clock times: its poll's time.
    pub(super) fn place_untimed(&mut self) {
        let Some(interval) = self.untimed_interval_s else {
            return;
        };
        let t = self.untimed_polls as f64 * interval;
        self.untimed_polls += 1;
        for m in &mut self.metas {
            m.t = Some(t);
        }
    }

    /// The sample of `gpus`, read with `self.metas`: GPU indices and driver windows.
    pub(super) fn build(&mut self, mut gpus: Vec<GpuReading>) -> Sample {
        let t = self.metas.first().and_then(|r| r.t).unwrap_or(0.0);
        let metas = std::mem::take(&mut self.metas);
        for (pos, (reading, meta)) in gpus.iter_mut().zip(&metas).enumerate() {
            let idx = self.index_of(&meta.key, pos);
            if !self.system.devices.iter().any(|d| d.index == idx) {
                self.counts.unknown_gpus += 1;
            }
            reading.index = idx;
            let row_t = meta.t.unwrap_or(t);
            if let Some(u) = reading.metrics.util_gpu {
                self.add_window(reading, idx, row_t, u);
            }
        }
        self.metas = metas;
        Sample {
            t,
            gpus,
            ..Default::default()
        }
    }

    /// The row's utilization as a driver window, unless it re-reads the GPU's last one.
    fn add_window(&mut self, reading: &mut GpuReading, idx: u32, t: f64, u: f64) {
        let last = self.last_window.iter_mut().find(|(i, _)| *i == idx);
        // A row before the last window is not a re-read of it (time went back, or the last
        // window's time was damaged): it is a window, which the time checks judge.
        if last
            .as_ref()
            .is_some_and(|(_, l)| t - *l < MIN_WINDOW_S && t >= *l)
        {
            return;
        }
        let w = UtilWindow { t, util: u };
        if reading.util_windows.is_empty() {
            // One window per row: allocated at its size, not grown.
            reading.util_windows = vec![w];
        } else {
            reading.util_windows.push(w);
        }
        match last {
            Some((_, l)) => *l = t,
            None => self.last_window.push((idx, t)),
        }
    }
}
