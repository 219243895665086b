//! Rows grouped into samples: one row per GPU, a sample ending where a GPU repeats.

use super::lines::{too_long, RawLine};
use super::row::{RowKey, RowMeta};
use super::{SmiCsvSource, MIN_WINDOW_S};
use crate::model::{DeviceInfo, GpuReading, Sample, UtilWindow};

/// The row that ended the previous sample: the first of the next.
pub(super) struct Pending {
    pub(super) meta: RowMeta,
    pub(super) reading: GpuReading,
    /// Its device facts, while the GPUs are being learnt.
    pub(super) info: Option<DeviceInfo>,
}

impl SmiCsvSource {
    /// The next good row, parsed into `out`, skipping and counting bad lines.
    pub(super) fn next_row(
        &mut self,
        out: &mut GpuReading,
        mut info: Option<&mut DeviceInfo>,
    ) -> Option<RowMeta> {
        let mut raw = std::mem::take(&mut self.raw);
        let mut found = None;
        while !self.done {
            let stop = match self.read_raw(&mut raw) {
                Ok(RawLine::Line) => None,
                Ok(RawLine::End) => Some(None),
                Ok(RawLine::TooLong) => Some(Some(too_long(self.line_no).to_string())),
                Err(e) => Some(Some(format!("line {}: {e}", self.line_no + 1))),
            };
            if let Some(why) = stop {
                self.done = true;
                self.stopped = why;
                break;
            }
            let n = self.line_no;
            let Ok(line) = std::str::from_utf8(&raw) else {
                self.bad(n);
                continue;
            };
            let line = line.trim();
            // Blank lines, and a header repeated by concatenated logs.
            if line.is_empty() || line.starts_with("timestamp") {
                continue;
            }
            match self.parse_row(line, out, info.as_deref_mut()) {
                Some(meta) => {
                    self.rows += 1;
                    found = Some(meta);
                    break;
                }
                None => {
                    // Start the next line from a clean reading.
                    *out = GpuReading::default();
                    if let Some(info) = info.as_deref_mut() {
                        *info = DeviceInfo::default();
                    }
                    self.bad(n)
                }
            }
        }
        self.raw = raw;
        found
    }

    /// Readings of one sample: rows until a GPU repeats (or, with no identity, the timestamp
    /// changes). Each row is parsed in place; `self.metas` gets their times and identities, and
    /// `infos` (when learning the GPUs) their device facts.
    pub(super) fn next_group(
        &mut self,
        mut infos: Option<&mut Vec<DeviceInfo>>,
    ) -> Vec<GpuReading> {
        self.metas.clear();
        // One more than the GPUs: the row that ends the sample is parsed here too.
        let mut gpus: Vec<GpuReading> = Vec::with_capacity(self.system.devices.len() + 1);
        if let Some(p) = self.pending.take() {
            gpus.push(p.reading);
            self.metas.push(p.meta);
            if let Some(infos) = infos.as_deref_mut() {
                infos.push(p.info.unwrap_or_default());
            }
        }
        loop {
            gpus.push(GpuReading::default());
            let mut info = infos.is_some().then(DeviceInfo::default);
            let learn = info.as_mut();
            let Some(meta) = gpus.last_mut().and_then(|out| self.next_row(out, learn)) else {
                gpus.pop();
                break;
            };
            let ends = match (&meta.key, self.metas.first()) {
                (_, None) => false,
                (RowKey::None, Some(f)) => (meta.t - f.t).abs() > 1e-6,
                (k, Some(_)) => self.metas.iter().any(|r| &r.key == k),
            };
            if ends {
                if let Some(reading) = gpus.pop() {
                    self.pending = Some(Pending {
                        meta,
                        reading,
                        info,
                    });
                }
                break;
            }
            self.metas.push(meta);
            if let Some(infos) = infos.as_deref_mut() {
                infos.push(info.unwrap_or_default());
            }
        }
        gpus
    }

    /// The sample of `gpus`, read with `self.metas`: GPU indices and driver windows.
    pub(super) fn build(&mut self, mut gpus: Vec<GpuReading>) -> Sample {
        let t = self.metas.first().map(|r| r.t).unwrap_or(0.0);
        let metas = std::mem::take(&mut self.metas);
        for (pos, (reading, meta)) in gpus.iter_mut().zip(&metas).enumerate() {
            let idx = self.index_of(&meta.key, pos);
            if !self.system.devices.iter().any(|d| d.index == idx) {
                self.unknown_gpus += 1;
            }
            reading.index = idx;
            if let Some(u) = reading.metrics.util_gpu {
                let last = self.last_window.iter_mut().find(|(i, _)| *i == idx);
                // A row before the last window is not a re-read of it (time went back, or the
                // last window's time was damaged): it is a window, which the time checks judge.
                if last
                    .as_ref()
                    .is_none_or(|(_, l)| meta.t - *l >= MIN_WINDOW_S || meta.t < *l)
                {
                    let w = UtilWindow { t: meta.t, util: u };
                    if reading.util_windows.is_empty() {
                        // One window per row: allocated at its size, not grown.
                        reading.util_windows = vec![w];
                    } else {
                        reading.util_windows.push(w);
                    }
                    match last {
                        Some((_, l)) => *l = meta.t,
                        None => self.last_window.push((idx, meta.t)),
                    }
                }
            }
        }
        self.metas = metas;
        Sample {
            t,
            gpus,
            ..Default::default()
        }
    }
}
