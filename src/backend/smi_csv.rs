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

use super::{LineCounts, SampleSource};
use crate::model::{throttle, DeviceInfo, GpuReading, Sample, SystemInfo, UnixTime, UtilWindow};
use crate::printable;

/// The backend name of a system read from an nvidia-smi log (`SystemInfo::backend`).
pub const BACKEND: &str = "nvidia-smi-csv";

/// Rows of one GPU closer than this re-read the same driver window (no new window).
pub const MIN_WINDOW_S: f64 = 0.15;
/// The longest line read. An nvidia-smi row is well under a kilobyte; a longer line is not a
/// log's, and a file without line breaks (`/dev/zero`) would otherwise be read whole into memory.
pub const MAX_LINE_BYTES: u64 = 64 * 1024;
const MIB: f64 = 1048576.0;

/// Why a CSV log cannot be read at all.
#[derive(Debug, thiserror::Error)]
pub enum SmiCsvError {
    #[error("cannot read '{}': {cause}", printable::path(.path))]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("'{}' is empty: expected an nvidia-smi CSV log (nvidia-smi --query-gpu=timestamp,utilization.gpu,... --format=csv -lms 250)", printable::path(.path))]
    Empty { path: PathBuf },
    #[error("'{}' is not a recognised format: {why}", printable::path(.path))]
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

/// What one bounded read found.
enum RawLine {
    Line,
    End,
    /// [`MAX_LINE_BYTES`] without a line break.
    TooLong,
}

fn too_long(line: usize) -> std::io::Error {
    std::io::Error::other(format!(
        "line {line} is longer than {} KiB without a line break; an nvidia-smi log's lines are far shorter",
        MAX_LINE_BYTES / 1024
    ))
}

/// Where and when one parsed row belongs (its readings are parsed in place into the sample).
struct RowMeta {
    t: UnixTime,
    key: RowKey,
}

/// The row that ended the previous sample: the first of the next.
struct Pending {
    meta: RowMeta,
    reading: GpuReading,
    /// Its device facts, while the GPUs are being learnt.
    info: Option<DeviceInfo>,
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
    /// Time of each GPU's last driver window, by GPU index.
    last_window: Vec<(u32, f64)>,
    first: Option<Vec<GpuReading>>,
    pending: Option<Pending>,
    /// Time and identity of each row of the sample being read (reused).
    metas: Vec<RowMeta>,
    line_no: usize,
    raw: Vec<u8>,
    /// Data rows read.
    rows: usize,
    bad_lines: usize,
    first_bad: Option<usize>,
    unknown_gpus: usize,
    /// Why reading stopped before the end of the file, if it did.
    stopped: Option<String>,
    /// Time of the last sample given out, and samples skipped for not being after it.
    last_t: Option<UnixTime>,
    out_of_order: usize,
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

/// Powers of ten that are exact in an `f64`.
const POW10: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// A numeric cell: `Ok(None)` for the not-available markers, `Err` for garbage.
fn cell(v: &str) -> Result<Option<f64>, ()> {
    // The common shape first: spaces, digits with at most one '.', then the end or a space
    // before the unit. Anything else takes the general path below (same values).
    let b = v.as_bytes();
    let mut i = b.iter().take_while(|&&c| c == b' ').count();
    let (mut int, mut digits, mut frac) = (0u64, 0usize, 0usize);
    let mut seen_point = false;
    while let Some(&c) = b.get(i) {
        if c.is_ascii_digit() {
            int = int.wrapping_mul(10).wrapping_add((c - b'0') as u64);
            digits += 1;
            frac += usize::from(seen_point);
        } else if c == b'.' && !seen_point && digits > 0 {
            seen_point = true;
        } else {
            break;
        }
        i += 1;
    }
    let ends = b.get(i).is_none_or(|&c| c == b' ');
    if ends && digits > 0 && digits <= 15 && (!seen_point || frac > 0) {
        return Ok(Some(int as f64 / POW10[frac]));
    }
    cell_general(v)
}

/// [`cell`] for any shape of cell.
fn cell_general(v: &str) -> Result<Option<f64>, ()> {
    let v = v.trim();
    let num = match v.as_bytes().iter().position(|&b| b == b' ') {
        Some(end) => &v[..end],
        None => v,
    };
    if num.is_empty() || num.starts_with('[') || num.eq_ignore_ascii_case("n/a") {
        return Ok(None);
    }
    // Most cells are small integers ("31 %", "7288 MiB") or short decimals ("436.07 W"): read
    // those without the float parser. With at most 15 digits the digits are an exact integer and
    // one division by an exact power of ten rounds once, as the parser does (the same value).
    let b = num.as_bytes();
    if b.len() <= 16 {
        let (mut int, mut point, mut digits) = (0u64, None, 0usize);
        let mut plain = true;
        for (i, &c) in b.iter().enumerate() {
            if c.is_ascii_digit() {
                int = int * 10 + (c - b'0') as u64;
                digits += 1;
            } else if c == b'.' && point.is_none() && i > 0 && i + 1 < b.len() {
                point = Some(i);
            } else {
                plain = false;
                break;
            }
        }
        if plain && digits <= 15 {
            let frac = point.map_or(0, |p| b.len() - p - 1);
            return Ok(Some(int as f64 / POW10[frac]));
        }
    }
    match num.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(Some(x)),
        _ => Err(()),
    }
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
        let mut src = SmiCsvSource {
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
            last_t: None,
            out_of_order: 0,
            done: false,
        };
        // The first non-empty line: the header, or (headerless) the first row.
        let mut first_line = None;
        let mut first_shown = String::new();
        let mut header = None;
        loop {
            match src.read_line() {
                Err(cause) => {
                    return Err(SmiCsvError::Read {
                        path: path.to_path_buf(),
                        cause,
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
                        first_shown = printable::bytes(src.raw.trim_ascii(), 60);
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
                return Err(unrecognised(format!(
                    "first line '{first_shown}' is not a header; {HEADERLESS}"
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
            let mut reading = GpuReading::default();
            let mut info = DeviceInfo::default();
            match src.parse_row(&line, &mut reading, Some(&mut info)) {
                Some(meta) => {
                    src.rows += 1;
                    src.pending = Some(Pending {
                        meta,
                        reading,
                        info: Some(info),
                    })
                }
                None => src.bad(n),
            }
        }
        // Learn the GPUs from the first sample.
        let mut infos = Vec::new();
        let rows = src.next_group(Some(&mut infos));
        if rows.is_empty() {
            return Err(unrecognised(format!(
                "no readable data row ({} line(s) skipped, the first at line {}); expected rows like '2026/12/02 13:28:37.117, 0, 31 %, ...' matching the header",
                src.bad_lines,
                src.first_bad.map(|l| l.to_string()).unwrap_or_else(|| "-".into())
            )));
        }
        let metas = std::mem::take(&mut src.metas);
        for (pos, (meta, mut info)) in metas.iter().zip(infos).enumerate() {
            info.index = src.index_of(&meta.key, pos);
            src.system.devices.push(info);
        }
        src.metas = metas;
        src.system.devices.sort_by_key(|d| d.index);
        src.first = Some(rows);
        Ok(src)
    }

    fn bad(&mut self, line: usize) {
        self.bad_lines += 1;
        self.first_bad.get_or_insert(line);
    }

    /// The next line, without its end; `None` at the end of the input. A line longer than
    /// [`MAX_LINE_BYTES`] is an error.
    fn read_line(&mut self) -> std::io::Result<Option<String>> {
        let mut raw = std::mem::take(&mut self.raw);
        let read = self.read_raw(&mut raw);
        self.raw = raw;
        match read? {
            RawLine::End => Ok(None),
            RawLine::Line => Ok(Some(String::from_utf8_lossy(&self.raw).into_owned())),
            RawLine::TooLong => Err(too_long(self.line_no)),
        }
    }

    /// Read the next line into `raw` (cleared first), at most [`MAX_LINE_BYTES`] of it.
    fn read_raw(&mut self, raw: &mut Vec<u8>) -> std::io::Result<RawLine> {
        use std::io::Read;
        raw.clear();
        let n = self
            .reader
            .by_ref()
            .take(MAX_LINE_BYTES)
            .read_until(b'\n', raw)?;
        if n == 0 {
            return Ok(RawLine::End);
        }
        self.line_no += 1;
        if n as u64 == MAX_LINE_BYTES && raw.last() != Some(&b'\n') {
            return Ok(RawLine::TooLong);
        }
        Ok(RawLine::Line)
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

    /// Parse one data line into `out` (and, when learning the GPUs, `info`); `None` when it does
    /// not match the fields (`out` then holds part of the line).
    fn parse_row(
        &mut self,
        line: &str,
        out: &mut GpuReading,
        mut info: Option<&mut DeviceInfo>,
    ) -> Option<RowMeta> {
        let m = &mut out.metrics;
        let (mut t, mut index, mut id) = (None, None, None);
        let mut bits: Option<u64> = None;
        let mut cols = 0;
        let mut rest = line;
        loop {
            // Split at each ',' (one byte, so the pieces stay valid text).
            let (v, more) = match rest.as_bytes().iter().position(|&b| b == b',') {
                Some(i) => (&rest[..i], Some(&rest[i + 1..])),
                None => (rest, None),
            };
            let f = *self.fields.get(cols)?;
            cols += 1;
            let num = || cell(v);
            match f {
                Field::Timestamp => t = Some(self.clock.parse(v)?),
                Field::Index => index = Some(num().ok()?? as u32),
                Field::Uuid | Field::BusId => {
                    if !self.has_index && id.is_none() {
                        id = text(v);
                    }
                    if let Some(info) = info.as_deref_mut() {
                        if f == Field::Uuid {
                            info.uuid = text(v);
                        } else {
                            info.bus_id = text(v);
                        }
                    }
                }
                Field::Name => {
                    if let Some(info) = info.as_deref_mut() {
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
                Field::SmClockMax => {
                    let v = num().ok()?.map(|x| x as u32);
                    if let Some(info) = info.as_deref_mut() {
                        info.sm_clock_max_mhz = v;
                    }
                }
                Field::Temp => m.temp_c = num().ok()?,
                Field::Fan => m.fan_pct = num().ok()?.map(|x| x as u32),
                Field::Pstate => m.pstate = v.trim().strip_prefix('P').and_then(|p| p.parse().ok()),
                Field::PcieGen => m.pcie_gen = num().ok()?.map(|x| x as u32),
                Field::PcieWidth => m.pcie_width = num().ok()?.map(|x| x as u32),
                Field::PcieGenMax => {
                    let v = num().ok()?.map(|x| x as u32);
                    if let Some(info) = info.as_deref_mut() {
                        info.pcie_gen_max = v;
                    }
                }
                Field::PcieWidthMax => {
                    let v = num().ok()?.map(|x| x as u32);
                    if let Some(info) = info.as_deref_mut() {
                        info.pcie_width_max = v;
                    }
                }
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
            match more {
                Some(r) => rest = r,
                None => break,
            }
        }
        if cols != self.fields.len() {
            return None;
        }
        m.throttle = bits;
        if let Some(info) = info {
            info.memory_total_bytes = m.mem_total_bytes;
            info.power_limit_watts = m.power_limit_w;
        }
        let key = match (index, id) {
            (Some(i), _) => RowKey::Index(i),
            (None, Some(id)) => RowKey::Id(id),
            (None, None) => RowKey::None,
        };
        Some(RowMeta { t: t?, key })
    }

    /// The next good row, parsed into `out`, skipping and counting bad lines.
    fn next_row(
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
    fn next_group(&mut self, mut infos: Option<&mut Vec<DeviceInfo>>) -> Vec<GpuReading> {
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
    fn build(&mut self, mut gpus: Vec<GpuReading>) -> Sample {
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
                if last
                    .as_ref()
                    .is_none_or(|(_, l)| meta.t - *l >= MIN_WINDOW_S)
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

impl SampleSource for SmiCsvSource {
    fn system(&self) -> &SystemInfo {
        &self.system
    }

    fn next_sample(&mut self) -> Option<Sample> {
        loop {
            let rows = match self.first.take() {
                Some(rows) => rows,
                None => self.next_group(None),
            };
            if rows.is_empty() {
                return None;
            }
            // Time runs forward: a sample not after the one before (a clock set back, logs
            // concatenated out of order) is skipped, as a recording's reader does.
            let t = self.metas.first().map(|m| m.t);
            if let (Some(t), Some(last)) = (t, self.last_t) {
                if t <= last {
                    self.out_of_order += 1;
                    continue;
                }
            }
            self.last_t = t;
            return Some(self.build(rows));
        }
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
        if let Some(why) = &self.stopped {
            w.push(format!(
                "{}: reading stopped early: {why}; what came before is analysed",
                self.name
            ));
        }
        if self.out_of_order > 0 {
            w.push(format!(
                "{}: skipped {} sample(s) whose time was not after the previous sample's",
                self.name, self.out_of_order
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

    fn line_counts(&self) -> Option<LineCounts> {
        Some(LineCounts {
            read: self.rows as u64,
            skipped: self.bad_lines as u64,
            first_skipped: self.first_bad.map(|l| l as u64),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            LineCounts {
                read: 5,
                skipped: 2,
                first_skipped: Some(7)
            }
        );
        assert!(!counts.mostly_unreadable());
        let w = src.warnings().join("\n");
        assert!(
            w.contains("skipped 2 sample(s) whose time was not after"),
            "{w}"
        );
    }

    #[test]
    fn cells_read_without_the_float_parser_equal_the_parser_bit_for_bit() {
        let mut cases: Vec<String> = [
            "0",
            "7",
            "100",
            "436.07",
            "0.5",
            "00.50",
            "123456789012345",
            "1234567890.12345",
            "99999999999.9999",
            "5.",
            ".5",
            "1e3",
            "-3.5",
            "12345678901234567",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for i in 0..20_000u32 {
            cases.push(format!("{}.{:02}", i / 7, i % 100));
            cases.push(format!("{}.{:03}", i * 13, i % 1000));
        }
        for c in &cases {
            let want = c.parse::<f64>().ok().filter(|x| x.is_finite());
            for shape in [
                format!(" {c} W"),
                c.to_string(),
                format!("  {c}"),
                format!("\t{c} %"),
            ] {
                let got = cell(&shape).ok().flatten();
                assert_eq!(got.map(f64::to_bits), want.map(f64::to_bits), "{shape:?}");
                assert_eq!(cell(&shape), cell_general(&shape), "{shape:?}");
            }
        }
        for odd in [
            "",
            " ",
            "1 2",
            "12a",
            "1.2.3",
            "[Not Supported]",
            " n/A",
            "7 MiB ",
        ] {
            assert_eq!(cell(odd), cell_general(odd), "{odd:?}");
        }
        assert_eq!(cell(" [N/A]"), Ok(None));
        assert_eq!(cell("N/A"), Ok(None));
        assert_eq!(cell("1.2.3 W"), Err(()));
    }
}
