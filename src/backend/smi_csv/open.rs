//! Opening a log: its format from its first line, and its GPUs learnt from the first sample.

use std::collections::{HashMap, VecDeque};
use std::io::BufRead;
use std::path::Path;

use super::super::tick_times::TickTimes;
use super::clock::LocalClock;
use super::group::QueuedRow;
use super::header::{classify, untimed_note, FirstLine, Format, Layout, NO_DATE_NOTE};
use super::lines::Lines;
use super::table::SmiTableSource;
use super::{Counts, LogOptions, SmiCsvError, SmiCsvSource, BACKEND};
use crate::model::{DeviceInfo, GpuReading, SystemInfo};
use crate::printable;

/// The default poll interval of `nvidia-smi dmon` and `dcgmi dmon`: 1 s.
const DMON_INTERVAL_S: f64 = 1.0;

/// A log opened, by kind.
pub(super) enum Opened {
    Columns(Box<SmiCsvSource>),
    Table(Box<SmiTableSource>),
}

impl SmiCsvSource {
    /// Open a CSV, `nvidia-smi dmon` or `dcgmi dmon` log (gzip or zstd too). `fields` names the
    /// columns of a headerless CSV log.
    pub fn open(path: &Path, fields: Option<&[String]>) -> Result<Self, SmiCsvError> {
        let (reader, _) =
            crate::backend::input::open_decompressed(path).map_err(|cause| SmiCsvError::Read {
                path: path.to_path_buf(),
                cause,
            })?;
        Self::from_reader(path, reader, fields)
    }

    /// [`Self::open`] from any reader; `path` names it in messages.
    pub fn from_reader(
        path: &Path,
        reader: Box<dyn BufRead + Send>,
        fields: Option<&[String]>,
    ) -> Result<Self, SmiCsvError> {
        let options = LogOptions {
            fields: fields.map(<[String]>::to_vec),
            interval_s: None,
        };
        match Self::start(path, reader, &options)? {
            Opened::Columns(src) => Ok(*src),
            Opened::Table(_) => Err(SmiCsvError::Unrecognised {
                path: path.to_path_buf(),
                why: "it is the plain `nvidia-smi` table, read with `open_log`".into(),
            }),
        }
    }

    /// Read the first line of `reader` and open the log it starts.
    pub(super) fn start(
        path: &Path,
        reader: Box<dyn BufRead + Send>,
        options: &LogOptions,
    ) -> Result<Opened, SmiCsvError> {
        let unrecognised = |why: String| SmiCsvError::Unrecognised {
            path: path.to_path_buf(),
            why,
        };
        let mut lines = Lines::new(reader);
        let line = loop {
            let next = lines.next_text().map_err(|cause| SmiCsvError::Read {
                path: path.to_path_buf(),
                cause,
            })?;
            match next {
                None => {
                    return Err(SmiCsvError::Empty {
                        path: path.to_path_buf(),
                    })
                }
                Some(l) if l.is_empty() => continue,
                Some(l) => break l,
            }
        };
        let shown = printable::bytes(lines.raw.trim_ascii(), 60);
        let (layout, first_row) = match classify(&line, &shown, options).map_err(unrecognised)? {
            FirstLine::Table => {
                let src = SmiTableSource::start(path, lines, &line).map_err(unrecognised)?;
                return Ok(Opened::Table(Box::new(src)));
            }
            FirstLine::Columns(layout) => (layout, None),
            FirstLine::Row { layout, line } => (layout, Some(line)),
        };
        let mut src = Self::unread(path, lines, layout, options);
        if let Some(line) = first_row {
            src.keep_first_row(&line);
        }
        src.learn_gpus().map_err(unrecognised)?;
        Ok(Opened::Columns(Box::new(src)))
    }

    /// A source over `lines` with no data row read yet.
    fn unread(path: &Path, lines: Lines, layout: Layout, options: &LogOptions) -> Self {
        let mut assumptions = Vec::new();
        let untimed_interval_s = (!layout.timed).then(|| {
            let interval = options.interval_s.unwrap_or(DMON_INTERVAL_S);
            assumptions.push(untimed_note(
                layout.format,
                interval,
                options.interval_s.is_some(),
            ));
            interval
        });
        let fields = &layout.fields;
        if fields.contains(&super::field::Field::TimeOfDay)
            && !fields.contains(&super::field::Field::Date)
        {
            assumptions.push(NO_DATE_NOTE.to_string());
        }
        if fields.contains(&super::field::Field::Ratio(super::field::Percent::Util)) {
            assumptions.push(super::header::ENGINE_ACTIVITY_NOTE.to_string());
        }
        SmiCsvSource {
            name: printable::path(path),
            lines,
            layout,
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
            queue: VecDeque::new(),
            metas: Vec::new(),
            polls: None,
            untimed_interval_s,
            untimed_polls: 0,
            days: 0,
            last_time_of_day: None,
            counts: Counts::default(),
            stopped: None,
            times: TickTimes::new(),
            samples_read: 0,
            ended: false,
            done: false,
            assumptions,
        }
    }

    /// A headerless log read with `--fields`: its first line is a row, kept as the first of the
    /// first sample (or counted as unreadable).
    fn keep_first_row(&mut self, line: &str) {
        let n = self.lines.line_no;
        let mut reading = GpuReading::default();
        let mut info = DeviceInfo::default();
        match self.parse_row(line, &mut reading, Some(&mut info)) {
            Ok(meta) => {
                self.counts.rows += 1;
                self.queue.push_back(QueuedRow {
                    meta,
                    reading,
                    info: Some(info),
                })
            }
            Err(_) => self.bad(n),
        }
    }

    /// Learn the GPUs from the first sample, kept to be given out first; `Err` (why) when the
    /// log has no readable row, or rows without GPU identity that cannot be told apart by poll.
    fn learn_gpus(&mut self) -> Result<(), String> {
        if !self.layout.identified {
            self.learn_polls()?;
        }
        let mut infos = Vec::new();
        let rows = self.next_group(Some(&mut infos));
        if rows.is_empty() {
            return Err(format!(
                "no readable data row ({} line(s) skipped, the first at line {}); expected rows like {} matching the header",
                self.counts.bad_lines,
                self.counts.first_bad.map(|l| l.to_string()).unwrap_or_else(|| "-".into()),
                match self.layout.format {
                    Format::Csv => "'2026/12/02 13:28:37.117, 0, 31 %, ...'",
                    Format::Dmon => "'    0    70    48     -     5 ...'",
                    Format::Dcgmi => "'GPU 0     0.512 ...'",
                }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::SampleSource;

    fn source(text: &[u8]) -> Result<SmiCsvSource, SmiCsvError> {
        let reader = std::io::Cursor::new(text.to_vec());
        SmiCsvSource::from_reader(Path::new("log.csv"), Box::new(reader), None)
    }

    #[test]
    fn a_first_line_that_is_not_a_header_is_quoted_with_its_bytes_escaped() {
        let e = source(b"\x7fELF\x02\x01\0\0\r\x1b[2J\xff rest\n")
            .expect_err("not a log")
            .to_string();
        assert!(
            e.contains("first line '\\x7fELF\\x02\\x01\\0\\0\\r\\x1b[2J\\xff rest'"),
            "{e}"
        );
        assert!(!e.chars().any(char::is_control), "{e:?}");
    }

    #[test]
    fn read_and_skipped_lines_are_counted_and_time_only_runs_forward() {
        let mut text = String::from("timestamp, index, utilization.gpu [%]\n");
        for (sec, util) in [(10, 50), (11, 60), (9, 70), (11, 80), (12, 90)] {
            text.push_str(&format!("2026/12/02 13:28:{sec:02}.000, 0, {util} %\n"));
        }
        text.push_str("garbage\n,,,\n");
        let mut src = source(text.as_bytes()).expect("a log");
        let utils: Vec<Option<f64>> = std::iter::from_fn(|| src.next_sample())
            .map(|s| s.gpus[0].metrics.util_gpu)
            .collect();
        assert_eq!(utils, vec![Some(50.0), Some(60.0), Some(90.0)]);
        let counts = src.line_counts().expect("counts");
        assert_eq!(
            counts,
            crate::backend::LineCounts {
                read: 5,
                skipped: 2,
                first_skipped: Some(7)
            }
        );
        assert!(!counts.mostly_unreadable());
        let w = src.warnings().join("\n");
        assert!(
            w.contains("dropped 2 tick(s) whose time was not after"),
            "{w}"
        );
    }
}
