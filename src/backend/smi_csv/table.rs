//! The plain `nvidia-smi` table, logged in a loop (`nvidia-smi -l 5 >> log`, or `nvidia-smi`
//! run again and again): one sample per table, at the table's date line (local time, to the
//! second). The process list below each table is not read.

use std::path::Path;

use super::clock::LocalClock;
use super::lines::{too_long, Lines, RawLine};
use super::table_rows::{date_line, gpu_line, readings_line};
use super::BACKEND;
use crate::backend::{LineCounts, SampleSource};
use crate::model::{
    DeviceInfo, GpuReading, Sample, SystemInfo, UnixTime, UtilSampling, UtilWindow,
};
use crate::printable;

/// Whether `line` begins an nvidia-smi table: its date line, its top border or its title.
pub(super) fn starts_table(line: &str) -> bool {
    date_line(line).is_some() || line.starts_with("+---") || line.contains("NVIDIA-SMI")
}

/// A log of nvidia-smi tables, read table by table.
pub struct SmiTableSource {
    name: String,
    lines: Lines,
    clock: LocalClock,
    system: SystemInfo,
    /// The time of the table being read.
    at: Option<UnixTime>,
    /// Its GPUs so far, and the device facts of the row waiting for its readings.
    gpus: Vec<GpuReading>,
    infos: Vec<DeviceInfo>,
    awaiting: Option<(u32, DeviceInfo)>,
    first: Option<Sample>,
    last_t: Option<UnixTime>,
    rows: u64,
    bad_rows: u64,
    first_bad: Option<u64>,
    out_of_order: usize,
    stopped: Option<String>,
    done: bool,
    /// A date line was read; the GPUs' device facts are being learnt (the first table).
    dated: bool,
    learning: bool,
}

impl std::fmt::Debug for SmiTableSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmiTableSource")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl SmiTableSource {
    /// Read a table log whose first line, `first`, has been read from `lines`; `Err` (why)
    /// without a table with its date line.
    pub(super) fn start(path: &Path, lines: Lines, first: &str) -> Result<Self, String> {
        let mut src = SmiTableSource {
            name: printable::path(path),
            lines,
            clock: LocalClock::new(),
            system: SystemInfo {
                hostname: path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                backend: BACKEND.into(),
                ..Default::default()
            },
            at: None,
            gpus: Vec::new(),
            infos: Vec::new(),
            awaiting: None,
            first: None,
            last_t: None,
            rows: 0,
            bad_rows: 0,
            first_bad: None,
            out_of_order: 0,
            stopped: None,
            done: false,
            dated: false,
            learning: true,
        };
        src.take_line(first);
        let Some(sample) = src.next_table() else {
            return Err(if !src.dated {
                "an nvidia-smi table without its date line: gpulse cannot tell when it was taken; log the table with `nvidia-smi -l 5 >> gpu.log` (it writes the date above each table), or log CSV with `nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used,power.draw --format=csv -l 5`".into()
            } else {
                "an nvidia-smi table without a readable GPU row (`|   0  NAME ... | BUS-ID ... |` and the row of readings below it)".into()
            });
        };
        src.system.devices = std::mem::take(&mut src.infos);
        src.system.devices.sort_by_key(|d| d.index);
        src.learning = false;
        src.first = Some(sample);
        Ok(src)
    }

    /// Take one line: a date line closes the table before it and dates the next; a GPU's rows
    /// add its readings. Returns the table closed.
    fn take_line(&mut self, line: &str) -> Option<Sample> {
        if let Some((date, secs)) = date_line(line) {
            let closed = self.close();
            self.at = self.clock.civil(date, secs);
            self.dated = true;
            return closed;
        }
        if let Some((index, mut info)) = self.awaiting.take() {
            let mut reading = GpuReading {
                index,
                ..Default::default()
            };
            if readings_line(line, &mut reading.metrics).is_some() {
                self.rows += 1;
                info.memory_total_bytes = reading.metrics.mem_total_bytes;
                info.power_limit_watts = reading.metrics.power_limit_w;
                self.gpus.push(reading);
                if self.learning {
                    self.infos.push(info);
                }
            } else {
                self.bad_rows += 1;
                self.first_bad.get_or_insert(self.lines.line_no as u64);
            }
            return None;
        }
        if let Some((index, name, bus_id)) = gpu_line(line) {
            let info = DeviceInfo {
                index,
                name,
                bus_id: Some(bus_id),
                util_sampling: UtilSampling::Polled,
                ..Default::default()
            };
            self.awaiting = Some((index, info));
        }
        None
    }

    /// The table read so far as a sample (none without a date or a GPU).
    fn close(&mut self) -> Option<Sample> {
        self.awaiting = None;
        let mut gpus = std::mem::take(&mut self.gpus);
        let t = self.at.take()?;
        if gpus.is_empty() {
            return None;
        }
        for g in &mut gpus {
            if let Some(util) = g.metrics.util_gpu {
                g.util_windows = vec![UtilWindow { t, util }];
            }
        }
        Some(Sample {
            t,
            gpus,
            ..Default::default()
        })
    }

    /// The next table, to the end of the log.
    fn next_table(&mut self) -> Option<Sample> {
        while !self.done {
            let read = self.lines.read_raw();
            let stop = match read {
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
            let raw = std::mem::take(&mut self.lines.raw);
            let closed = String::from_utf8_lossy(raw.trim_ascii()).into_owned();
            self.lines.raw = raw;
            if let Some(sample) = self.take_line(&closed) {
                return Some(sample);
            }
        }
        self.close()
    }
}

impl SampleSource for SmiTableSource {
    fn system(&self) -> &SystemInfo {
        &self.system
    }

    fn next_sample(&mut self) -> Option<Sample> {
        loop {
            let mut sample = match self.first.take() {
                Some(s) => s,
                None => self.next_table()?,
            };
            if self.last_t.is_some_and(|last| sample.t <= last) {
                self.out_of_order += 1;
                continue;
            }
            self.last_t = Some(sample.t);
            let known = &self.system.devices;
            sample
                .gpus
                .retain(|g| known.iter().any(|d| d.index == g.index));
            return Some(sample);
        }
    }

    fn warnings(&self) -> Vec<String> {
        let name = &self.name;
        let mut w = Vec::new();
        if self.bad_rows > 0 {
            w.push(format!(
                "{name}: skipped {} GPU row(s) whose readings could not be read, the first at line {}",
                self.bad_rows,
                self.first_bad.unwrap_or(0)
            ));
        }
        if let Some(why) = &self.stopped {
            w.push(format!(
                "{name}: reading stopped early: {why}; what came before is analysed"
            ));
        }
        if self.out_of_order > 0 {
            w.push(format!(
                "{name}: skipped {} table(s) whose date line was not after the previous table's (the date line is to the second)",
                self.out_of_order
            ));
        }
        w
    }

    fn line_counts(&self) -> Option<LineCounts> {
        Some(LineCounts {
            read: self.rows,
            skipped: self.bad_rows,
            first_skipped: self.first_bad,
        })
    }
}
