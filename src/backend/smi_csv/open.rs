//! Opening a log: its header (or the fields given), and its GPUs learnt from the first sample.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;

use super::super::tick_times::TickTimes;
use super::clock::LocalClock;
use super::field::{field_of, Field};
use super::group::Pending;
use super::{SmiCsvError, SmiCsvSource, BACKEND};
use crate::model::{DeviceInfo, GpuReading, SystemInfo};
use crate::printable;

/// Why a log is not one: what a header must name, and how to read a log without one.
pub(super) const HEADERLESS: &str = "expected a header line naming at least `timestamp` and `utilization.gpu` (as `nvidia-smi --query-gpu=timestamp,index,utilization.gpu,... --format=csv` writes); for a log written with `noheader`, pass its field list with `--fields timestamp,index,utilization.gpu,...` in the order of the query";

/// The first non-empty line of a log.
enum FirstLine {
    /// A header: the columns it names.
    Header(Vec<Field>),
    /// Not a header (a headerless log's first row), and how it is quoted in messages.
    Row { line: String, shown: String },
    /// None: the log is empty.
    Nothing,
}

impl SmiCsvSource {
    /// Open a log file. `fields` names the columns of a headerless log.
    pub fn open(path: &Path, fields: Option<&[String]>) -> Result<Self, SmiCsvError> {
        let file = std::fs::File::open(path).map_err(|cause| SmiCsvError::Read {
            path: path.to_path_buf(),
            cause,
        })?;
        let reader = std::io::BufReader::with_capacity(1 << 16, file);
        Self::from_reader(path, Box::new(reader), fields)
    }

    /// Read a log from any reader; `path` names it in messages.
    pub fn from_reader(
        path: &Path,
        reader: Box<dyn BufRead>,
        fields: Option<&[String]>,
    ) -> Result<Self, SmiCsvError> {
        let unrecognised = |why: String| SmiCsvError::Unrecognised {
            path: path.to_path_buf(),
            why,
        };
        let mut src = Self::unread(path, reader);
        let first = src.first_line().map_err(|cause| SmiCsvError::Read {
            path: path.to_path_buf(),
            cause,
        })?;
        let (header, first_row) = match first {
            FirstLine::Nothing => {
                return Err(SmiCsvError::Empty {
                    path: path.to_path_buf(),
                })
            }
            FirstLine::Header(cols) => (Some(cols), None),
            FirstLine::Row { line, shown } => (None, Some((line, shown))),
        };
        src.fields = match (fields, header) {
            (Some(f), _) => f.iter().map(|c| field_of(c)).collect(),
            (None, Some(h)) => h,
            (None, None) => {
                let shown = first_row.as_ref().map_or("", |(_, shown)| shown.as_str());
                return Err(unrecognised(format!(
                    "first line '{shown}' is not a header; {HEADERLESS}"
                )));
            }
        };
        for (need, what) in [
            (Field::Timestamp, "timestamp"),
            (Field::UtilGpu, "utilization.gpu"),
        ] {
            if !src.fields.contains(&need) {
                return Err(unrecognised(format!("no `{what}` column; {HEADERLESS}")));
            }
        }
        src.has_index = src.fields.contains(&Field::Index);
        if let Some((line, _)) = first_row {
            src.keep_first_row(&line);
        }
        src.learn_gpus().map_err(unrecognised)?;
        Ok(src)
    }

    /// A source over `reader` with nothing read yet.
    fn unread(path: &Path, reader: Box<dyn BufRead>) -> Self {
        SmiCsvSource {
            name: printable::path(path),
            reader,
            fields: Vec::new(),
            has_index: false,
            clock: LocalClock::new(),
            system: SystemInfo {
                hostname: path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                backend: BACKEND.into(),
                ..Default::default()
            },
            ids: HashMap::new(),
            last_window: Vec::new(),
            first: None,
            pending: None,
            metas: Vec::new(),
            line_no: 0,
            raw: Vec::new(),
            rows: 0,
            bad_lines: 0,
            first_bad: None,
            unknown_gpus: 0,
            stopped: None,
            times: TickTimes::new(),
            samples_read: 0,
            ended: false,
            done: false,
        }
    }

    /// The first non-empty line: a header when it names `timestamp`, else a row.
    fn first_line(&mut self) -> std::io::Result<FirstLine> {
        while let Some(line) = self.read_line()? {
            let line = line.trim().to_string();
            if line.is_empty() {
                continue;
            }
            let cols: Vec<Field> = line.split(',').map(field_of).collect();
            if cols.contains(&Field::Timestamp) {
                return Ok(FirstLine::Header(cols));
            }
            let shown = printable::bytes(self.raw.trim_ascii(), 60);
            return Ok(FirstLine::Row { line, shown });
        }
        Ok(FirstLine::Nothing)
    }

    /// A headerless log read with `--fields`: its first line is a row, kept as the first of the
    /// first sample (or counted as unreadable).
    fn keep_first_row(&mut self, line: &str) {
        let n = self.line_no;
        let mut reading = GpuReading::default();
        let mut info = DeviceInfo::default();
        match self.parse_row(line, &mut reading, Some(&mut info)) {
            Some(meta) => {
                self.rows += 1;
                self.pending = Some(Pending {
                    meta,
                    reading,
                    info: Some(info),
                })
            }
            None => self.bad(n),
        }
    }

    /// Learn the GPUs from the first sample, kept to be given out first; `Err` (why) when the
    /// log has no readable row.
    fn learn_gpus(&mut self) -> Result<(), String> {
        let mut infos = Vec::new();
        let rows = self.next_group(Some(&mut infos));
        if rows.is_empty() {
            return Err(format!(
                "no readable data row ({} line(s) skipped, the first at line {}); expected rows like '2026/12/02 13:28:37.117, 0, 31 %, ...' matching the header",
                self.bad_lines,
                self.first_bad.map(|l| l.to_string()).unwrap_or_else(|| "-".into())
            ));
        }
        let metas = std::mem::take(&mut self.metas);
        for (pos, (meta, mut info)) in metas.iter().zip(infos).enumerate() {
            info.index = self.index_of(&meta.key, pos);
            self.system.devices.push(info);
        }
        self.metas = metas;
        self.system.devices.sort_by_key(|d| d.index);
        self.first = Some(rows);
        Ok(())
    }
}
