//! nvidia-smi CSV logs as a recorded source.
//!
//! Reads what `nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits] -l N` (or `-lms N`)
//! writes: any subset and order of fields that includes `timestamp` and `utilization.gpu`, with or
//! without units, with or without `index` (rows of several GPUs interleave; a sample ends when a
//! GPU repeats). `[N/A]`, `[Not Supported]` and `N/A` are absent readings. Timestamps are local time
//! (`TZ` applies). A headerless file needs its field list (`--fields`). Each row is also one driver
//! utilization window, except rows closer than [`MIN_WINDOW_S`] to the previous one, which re-read
//! the same window. Bad lines are skipped and counted.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use super::SampleSource;
use crate::model::{
    throttle, DeviceInfo, GpuReading, Metrics, Sample, SystemInfo, UnixTime, UtilWindow,
};

/// Rows of one GPU closer than this re-read the same driver window (no new window).
pub const MIN_WINDOW_S: f64 = 0.15;
const MIB: f64 = 1048576.0;

/// Why a CSV log cannot be read at all.
#[derive(Debug, thiserror::Error)]
pub enum SmiCsvError {
    #[error("cannot read '{path}': {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("'{path}' is empty: expected an nvidia-smi CSV log (nvidia-smi --query-gpu=timestamp,utilization.gpu,... --format=csv -lms 250)")]
    Empty { path: PathBuf },
    #[error("'{path}' is not a recognised format: {why}")]
    Unrecognised { path: PathBuf, why: String },
}

/// One column's meaning.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Field {
    Timestamp,
    Index,
    Uuid,
    Name,
    BusId,
    UtilGpu,
    UtilMem,
    MemUsed,
    MemTotal,
    Power,
    PowerLimit,
    SmClock,
    MemClock,
    SmClockMax,
    Temp,
    Fan,
    Pstate,
    PcieGen,
    PcieWidth,
    PcieGenMax,
    PcieWidthMax,
    ThrottleMask,
    ThrottleBit(u64),
    Ignored,
}

fn field_of(name: &str) -> Field {
    let n = name
        .split('[')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let bit = |rest: &str| -> Field {
        match rest {
            "active" => Field::ThrottleMask,
            "gpu_idle" => Field::ThrottleBit(throttle::GPU_IDLE),
            "applications_clocks_setting" => {
                Field::ThrottleBit(throttle::APPLICATIONS_CLOCKS_SETTING)
            }
            "sw_power_cap" => Field::ThrottleBit(throttle::SW_POWER_CAP),
            "hw_slowdown" => Field::ThrottleBit(throttle::HW_SLOWDOWN),
            "sync_boost" => Field::ThrottleBit(throttle::SYNC_BOOST),
            "sw_thermal_slowdown" => Field::ThrottleBit(throttle::SW_THERMAL_SLOWDOWN),
            "hw_thermal_slowdown" => Field::ThrottleBit(throttle::HW_THERMAL_SLOWDOWN),
            "hw_power_brake_slowdown" => Field::ThrottleBit(throttle::HW_POWER_BRAKE_SLOWDOWN),
            "display_clock_setting" => Field::ThrottleBit(throttle::DISPLAY_CLOCK_SETTING),
            _ => Field::Ignored,
        }
    };
    if let Some(rest) = n
        .strip_prefix("clocks_event_reasons.")
        .or_else(|| n.strip_prefix("clocks_throttle_reasons."))
    {
        return bit(rest);
    }
    match n.as_str() {
        "timestamp" => Field::Timestamp,
        "index" => Field::Index,
        "uuid" | "gpu_uuid" => Field::Uuid,
        "name" | "gpu_name" => Field::Name,
        "pci.bus_id" | "gpu_bus_id" => Field::BusId,
        "utilization.gpu" => Field::UtilGpu,
        "utilization.memory" => Field::UtilMem,
        "memory.used" => Field::MemUsed,
        "memory.total" => Field::MemTotal,
        "power.draw" | "power.draw.instant" | "power.draw.average" => Field::Power,
        "power.limit" | "enforced.power.limit" => Field::PowerLimit,
        "clocks.sm" | "clocks.current.sm" => Field::SmClock,
        "clocks.mem" | "clocks.current.memory" => Field::MemClock,
        "clocks.max.sm" | "clocks.max.sm_clock" => Field::SmClockMax,
        "temperature.gpu" => Field::Temp,
        "fan.speed" => Field::Fan,
        "pstate" => Field::Pstate,
        "pcie.link.gen.current" | "pcie.link.gen.gpucurrent" => Field::PcieGen,
        "pcie.link.width.current" => Field::PcieWidth,
        "pcie.link.gen.max" | "pcie.link.gen.gpumax" => Field::PcieGenMax,
        "pcie.link.width.max" => Field::PcieWidthMax,
        _ => Field::Ignored,
    }
}

fn text(v: &str) -> Option<String> {
    let v = v.trim();
    (!v.is_empty() && !v.starts_with('[') && !v.eq_ignore_ascii_case("n/a")).then(|| v.to_string())
}

fn hex(v: &str) -> Option<u64> {
    let v = v.trim();
    let digits = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X"))?;
    u64::from_str_radix(digits, 16).ok()
}

/// Local civil time → Unix seconds, caching the start of each local hour.
#[derive(Debug)]
struct LocalClock {
    tz: jiff::tz::TimeZone,
    cache: HashMap<(i16, i8, i8, i8), i64>,
    /// The last timestamp text and its value: the rows of one sample (one per GPU) share it.
    last_text: Vec<u8>,
    last_value: UnixTime,
}

impl LocalClock {
    fn new() -> Self {
        LocalClock {
            tz: jiff::tz::TimeZone::system(),
            cache: HashMap::new(),
            last_text: Vec::new(),
            last_value: 0.0,
        }
    }

    /// [`Self::parse_text`], remembering the last answer.
    fn parse(&mut self, s: &str) -> Option<UnixTime> {
        let b = s.trim().as_bytes();
        if !b.is_empty() && b == self.last_text.as_slice() {
            return Some(self.last_value);
        }
        let v = self.parse_text(s)?;
        self.last_text.clear();
        self.last_text.extend_from_slice(b);
        self.last_value = v;
        Some(v)
    }

    /// `2026/12/02 13:28:37.117` (or with `-` between date parts).
    fn parse_text(&mut self, s: &str) -> Option<UnixTime> {
        let b = s.trim().as_bytes();
        if b.len() < 19 || !matches!(b[4], b'/' | b'-') || b[10] != b' ' {
            return None;
        }
        let d = |i: usize, n: usize| -> Option<i64> {
            let mut v = 0i64;
            for &c in b.get(i..i + n)? {
                if !c.is_ascii_digit() {
                    return None;
                }
                v = v * 10 + (c - b'0') as i64;
            }
            Some(v)
        };
        let (y, mo, da, h, mi, se) = (
            d(0, 4)?,
            d(5, 2)?,
            d(8, 2)?,
            d(11, 2)?,
            d(14, 2)?,
            d(17, 2)?,
        );
        if b[13] != b':' || b[16] != b':' || mi > 59 || se > 60 {
            return None;
        }
        let mut frac = 0.0;
        if b.len() > 19 {
            if b[19] != b'.' || b.len() == 20 {
                return None;
            }
            let digits = &s.trim()[20..];
            if !digits.bytes().all(|c| c.is_ascii_digit()) || digits.len() > 9 {
                return None;
            }
            frac = digits.parse::<u64>().ok()? as f64 / 10f64.powi(digits.len() as i32);
        }
        let key = (y as i16, mo as i8, da as i8, h as i8);
        let hour = match self.cache.get(&key) {
            Some(v) => *v,
            None => {
                let dt = jiff::civil::DateTime::new(key.0, key.1, key.2, key.3, 0, 0, 0).ok()?;
                let v = dt.to_zoned(self.tz.clone()).ok()?.timestamp().as_second();
                if self.cache.len() > 10_000 {
                    self.cache.clear();
                }
                self.cache.insert(key, v);
                v
            }
        };
        Some(hour as f64 + (mi * 60 + se) as f64 + frac)
    }
}

/// One parsed row.
struct Row {
    t: UnixTime,
    key: RowKey,
    reading: GpuReading,
    info: DeviceInfo,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum RowKey {
    Index(u32),
    Id(String),
    None,
}

/// An nvidia-smi CSV log, read sample by sample.
pub struct SmiCsvSource {
    name: String,
    reader: Box<dyn BufRead>,
    fields: Vec<Field>,
    has_index: bool,
    clock: LocalClock,
    system: SystemInfo,
    /// Stable GPU index of each identity (uuid or bus id) when the log has no `index`.
    ids: HashMap<String, u32>,
    last_window: HashMap<u32, f64>,
    first: Option<Vec<Row>>,
    pending: Option<Row>,
    line_no: usize,
    raw: Vec<u8>,
    bad_lines: usize,
    first_bad: Option<usize>,
    unknown_gpus: usize,
    done: bool,
}

impl std::fmt::Debug for SmiCsvSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmiCsvSource")
            .field("name", &self.name)
            .field("line_no", &self.line_no)
            .finish()
    }
}

const HEADERLESS: &str = "expected a header line naming at least `timestamp` and `utilization.gpu` (as `nvidia-smi --query-gpu=timestamp,index,utilization.gpu,... --format=csv` writes); for a log written with `noheader`, pass its field list with `--fields timestamp,index,utilization.gpu,...` in the order of the query";

/// A numeric cell: `Ok(None)` for the not-available markers, `Err` for garbage.
fn cell(v: &str) -> Result<Option<f64>, ()> {
    let v = v.trim();
    let num = v.split(' ').next().unwrap_or("");
    if num.is_empty() || num.starts_with('[') || num.eq_ignore_ascii_case("n/a") {
        return Ok(None);
    }
    // Most cells are small integers ("31 %", "7288 MiB"): read those without the float parser.
    if num.len() <= 15 && num.bytes().all(|b| b.is_ascii_digit()) {
        let v = num.bytes().fold(0u64, |v, b| v * 10 + (b - b'0') as u64);
        return Ok(Some(v as f64));
    }
    match num.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(Some(x)),
        _ => Err(()),
    }
}

impl SmiCsvSource {
    /// Open a log file. `fields` names the columns of a headerless log.
    pub fn open(path: &Path, fields: Option<&[String]>) -> Result<Self, SmiCsvError> {
        let file = std::fs::File::open(path).map_err(|source| SmiCsvError::Read {
            path: path.to_path_buf(),
            source,
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
        let mut src = SmiCsvSource {
            name: path.display().to_string(),
            reader,
            fields: Vec::new(),
            has_index: false,
            clock: LocalClock::new(),
            system: SystemInfo {
                hostname: path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                backend: "nvidia-smi-csv".into(),
                ..Default::default()
            },
            ids: HashMap::new(),
            last_window: HashMap::new(),
            first: None,
            pending: None,
            line_no: 0,
            raw: Vec::new(),
            bad_lines: 0,
            first_bad: None,
            unknown_gpus: 0,
            done: false,
        };
        // The first non-empty line: the header, or (headerless) the first row.
        let mut first_line = None;
        let mut header = None;
        loop {
            match src.read_line() {
                Err(source) => {
                    return Err(SmiCsvError::Read {
                        path: path.to_path_buf(),
                        source,
                    })
                }
                Ok(None) => break,
                Ok(Some(line)) => {
                    let line = line.trim().to_string();
                    if line.is_empty() {
                        continue;
                    }
                    let cols: Vec<Field> = line.split(',').map(field_of).collect();
                    if cols.contains(&Field::Timestamp) {
                        header = Some(cols);
                    } else {
                        first_line = Some(line);
                    }
                    break;
                }
            }
        }
        if header.is_none() && first_line.is_none() {
            return Err(SmiCsvError::Empty {
                path: path.to_path_buf(),
            });
        }
        src.fields = match (fields, header) {
            (Some(f), _) => f.iter().map(|c| field_of(c)).collect(),
            (None, Some(h)) => h,
            (None, None) => {
                let shown: String = first_line.unwrap_or_default().chars().take(60).collect();
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
        if let Some(line) = first_line {
            // A headerless log read with `--fields`: its first line is a row.
            let n = src.line_no;
            match src.parse_row(&line, true) {
                Some(r) => src.pending = Some(r),
                None => src.bad(n),
            }
        }
        // Learn the GPUs from the first sample.
        let rows = src.next_group(true);
        if rows.is_empty() {
            return Err(unrecognised(format!(
                "no readable data row ({} line(s) skipped, the first at line {}); expected rows like '2026/12/02 13:28:37.117, 0, 31 %, ...' matching the header",
                src.bad_lines,
                src.first_bad.map(|l| l.to_string()).unwrap_or_else(|| "-".into())
            )));
        }
        for (pos, r) in rows.iter().enumerate() {
            let mut info = r.info.clone();
            info.index = src.index_of(&r.key, pos);
            src.system.devices.push(info);
        }
        src.system.devices.sort_by_key(|d| d.index);
        src.first = Some(rows);
        Ok(src)
    }

    fn bad(&mut self, line: usize) {
        self.bad_lines += 1;
        self.first_bad.get_or_insert(line);
    }

    /// The next line, without its end; `None` at the end of the input.
    fn read_line(&mut self) -> std::io::Result<Option<String>> {
        self.raw.clear();
        let n = self.reader.read_until(b'\n', &mut self.raw)?;
        if n == 0 {
            return Ok(None);
        }
        self.line_no += 1;
        Ok(Some(String::from_utf8_lossy(&self.raw).into_owned()))
    }

    /// The GPU index of a row: its `index`, else the identity's first-seen order, else its position.
    fn index_of(&mut self, key: &RowKey, pos: usize) -> u32 {
        match key {
            RowKey::Index(i) => *i,
            RowKey::Id(id) => {
                let next = self.ids.len() as u32;
                *self.ids.entry(id.clone()).or_insert(next)
            }
            RowKey::None => pos as u32,
        }
    }

    /// Parse one data line; `None` when it does not match the fields.
    fn parse_row(&mut self, line: &str, learn: bool) -> Option<Row> {
        let mut m = Metrics::default();
        let mut info = DeviceInfo::default();
        let (mut t, mut index, mut id) = (None, None, None);
        let mut bits: Option<u64> = None;
        let mut cols = 0;
        for (i, v) in line.split(',').enumerate() {
            cols += 1;
            let f = *self.fields.get(i)?;
            let num = || cell(v);
            match f {
                Field::Timestamp => t = Some(self.clock.parse(v)?),
                Field::Index => index = Some(num().ok()?? as u32),
                Field::Uuid | Field::BusId => {
                    if !self.has_index && id.is_none() {
                        id = text(v);
                    }
                    if learn {
                        if f == Field::Uuid {
                            info.uuid = text(v);
                        } else {
                            info.bus_id = text(v);
                        }
                    }
                }
                Field::Name => {
                    if learn {
                        info.name = text(v).unwrap_or_default();
                    }
                }
                Field::UtilGpu => m.util_gpu = num().ok()?.map(|x| x.clamp(0.0, 100.0)),
                Field::UtilMem => m.util_mem = num().ok()?,
                Field::MemUsed => m.mem_used_bytes = num().ok()?.map(|x| (x * MIB) as u64),
                Field::MemTotal => m.mem_total_bytes = num().ok()?.map(|x| (x * MIB) as u64),
                Field::Power => m.power_w = num().ok()?,
                Field::PowerLimit => m.power_limit_w = num().ok()?,
                Field::SmClock => m.sm_clock_mhz = num().ok()?.map(|x| x as u32),
                Field::MemClock => m.mem_clock_mhz = num().ok()?.map(|x| x as u32),
                Field::SmClockMax => info.sm_clock_max_mhz = num().ok()?.map(|x| x as u32),
                Field::Temp => m.temp_c = num().ok()?,
                Field::Fan => m.fan_pct = num().ok()?.map(|x| x as u32),
                Field::Pstate => m.pstate = v.trim().strip_prefix('P').and_then(|p| p.parse().ok()),
                Field::PcieGen => m.pcie_gen = num().ok()?.map(|x| x as u32),
                Field::PcieWidth => m.pcie_width = num().ok()?.map(|x| x as u32),
                Field::PcieGenMax => info.pcie_gen_max = num().ok()?.map(|x| x as u32),
                Field::PcieWidthMax => info.pcie_width_max = num().ok()?.map(|x| x as u32),
                Field::ThrottleMask => {
                    if let Some(b) = hex(v) {
                        bits = Some(bits.unwrap_or(0) | b);
                    }
                }
                Field::ThrottleBit(b) => match v.trim() {
                    "Active" => bits = Some(bits.unwrap_or(0) | b),
                    "Not Active" => bits = Some(bits.unwrap_or(0)),
                    _ => {}
                },
                Field::Ignored => {}
            }
        }
        if cols != self.fields.len() {
            return None;
        }
        m.throttle = bits;
        info.memory_total_bytes = m.mem_total_bytes;
        info.power_limit_watts = m.power_limit_w;
        let key = match (index, id) {
            (Some(i), _) => RowKey::Index(i),
            (None, Some(id)) => RowKey::Id(id),
            (None, None) => RowKey::None,
        };
        Some(Row {
            t: t?,
            key,
            reading: GpuReading {
                metrics: m,
                ..Default::default()
            },
            info,
        })
    }

    /// The next good row, skipping and counting bad lines.
    fn next_row(&mut self, learn: bool) -> Option<Row> {
        if let Some(r) = self.pending.take() {
            return Some(r);
        }
        let mut raw = std::mem::take(&mut self.raw);
        let mut found = None;
        while !self.done {
            raw.clear();
            match self.reader.read_until(b'\n', &mut raw) {
                Ok(0) | Err(_) => {
                    self.done = true;
                    break;
                }
                Ok(_) => self.line_no += 1,
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
            match self.parse_row(line, learn) {
                Some(r) => {
                    found = Some(r);
                    break;
                }
                None => self.bad(n),
            }
        }
        self.raw = raw;
        found
    }

    /// Rows of one sample: until a GPU repeats (or, with no identity, the timestamp changes).
    fn next_group(&mut self, learn: bool) -> Vec<Row> {
        let mut rows: Vec<Row> = Vec::new();
        while let Some(row) = self.next_row(learn) {
            let ends = match (&row.key, rows.first()) {
                (_, None) => false,
                (RowKey::None, Some(f)) => (row.t - f.t).abs() > 1e-6,
                (k, Some(_)) => rows.iter().any(|r| &r.key == k),
            };
            if ends {
                self.pending = Some(row);
                break;
            }
            rows.push(row);
        }
        rows
    }

    fn build(&mut self, rows: Vec<Row>) -> Sample {
        let t = rows.first().map(|r| r.t).unwrap_or(0.0);
        let mut gpus = Vec::with_capacity(rows.len());
        for (pos, r) in rows.into_iter().enumerate() {
            let idx = self.index_of(&r.key, pos);
            if !self.system.devices.iter().any(|d| d.index == idx) {
                self.unknown_gpus += 1;
            }
            let mut reading = r.reading;
            reading.index = idx;
            if let Some(u) = reading.metrics.util_gpu {
                let last = self.last_window.get(&idx).copied();
                if last.is_none_or(|l| r.t - l >= MIN_WINDOW_S) {
                    reading.util_windows.push(UtilWindow { t: r.t, util: u });
                    self.last_window.insert(idx, r.t);
                }
            }
            gpus.push(reading);
        }
        Sample {
            t,
            gpus,
            ..Default::default()
        }
    }
}

impl SampleSource for SmiCsvSource {
    fn system(&self) -> &SystemInfo {
        &self.system
    }

    fn next_sample(&mut self) -> Option<Sample> {
        let rows = match self.first.take() {
            Some(rows) => rows,
            None => self.next_group(false),
        };
        if rows.is_empty() {
            return None;
        }
        Some(self.build(rows))
    }

    fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.bad_lines > 0 {
            w.push(format!(
                "{}: skipped {} unreadable line(s), the first at line {}",
                self.name,
                self.bad_lines,
                self.first_bad.unwrap_or(0)
            ));
        }
        if self.unknown_gpus > 0 {
            w.push(format!(
                "{}: {} reading(s) of GPUs absent from the first sample were ignored",
                self.name, self.unknown_gpus
            ));
        }
        w
    }
}
