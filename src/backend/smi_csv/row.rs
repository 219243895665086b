//! One data row: its cells read into a GPU's reading, its time and its GPU's identity.

use super::cell::{cell, hex, text};
use super::clock::{date8, time_of_day, NO_DATE};
use super::field::{Field, Percent};
use super::header::Format;
use super::{SmiCsvSource, MIB};
use crate::model::{DeviceInfo, GpuReading, Metrics, UnixTime, UtilSampling};

/// Where and when one parsed row belongs (its readings are parsed in place into the sample).
pub(super) struct RowMeta {
    /// `None` in a log without clock times, until its poll is placed.
    pub(super) t: Option<UnixTime>,
    pub(super) key: RowKey,
}

/// Which GPU a row is of: its `index`, else its uuid or bus id, else nothing to tell.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum RowKey {
    Index(u32),
    Id(String),
    None,
}

/// Why a line gave no row.
#[derive(Debug, PartialEq)]
pub(super) enum NoRow {
    /// It does not match the columns: counted as unreadable.
    Bad,
    /// A row of something other than a whole GPU (`dcgmi dmon`'s MIG instances, switches).
    NotGpu,
}

/// What a row says besides its metrics, gathered cell by cell.
#[derive(Default)]
struct RowFacts {
    t: Option<UnixTime>,
    date: Option<(i16, i8, i8)>,
    time_of_day: Option<f64>,
    index: Option<u32>,
    /// The first uuid or bus id, read only when the log has no `index`.
    id: Option<String>,
    /// Throttle reasons: the mask, or the bits of the reason columns read.
    bits: Option<u64>,
    not_gpu: bool,
}

impl SmiCsvSource {
    /// Parse one data line into `out` (and, when learning the GPUs, `info`); `Err` when it does
    /// not match the fields (`out` then holds part of the line) or is not a GPU's.
    pub(super) fn parse_row(
        &mut self,
        line: &str,
        out: &mut GpuReading,
        mut info: Option<&mut DeviceInfo>,
    ) -> Result<RowMeta, NoRow> {
        let mut facts = RowFacts::default();
        let mut cols = 0;
        let fields = std::mem::take(&mut self.layout.fields);
        let mut read = |v: &str, src: &mut Self| -> Option<()> {
            let f = *fields.get(cols)?;
            cols += 1;
            src.read_cell(f, v, &mut facts, &mut out.metrics, info.as_deref_mut())
        };
        let ok = match self.layout.format {
            Format::Csv => csv_cells(line).try_for_each(|v| read(v, self)),
            Format::Dmon | Format::Dcgmi => line
                .split_ascii_whitespace()
                .try_for_each(|v| read(v, self)),
        };
        let complete = ok.is_some() && cols == fields.len();
        self.layout.fields = fields;
        if facts.not_gpu {
            return Err(NoRow::NotGpu);
        }
        if !complete {
            return Err(NoRow::Bad);
        }
        out.metrics.throttle = facts.bits;
        if let Some(info) = info {
            info.util_sampling = UtilSampling::Polled;
            info.memory_total_bytes = out.metrics.mem_total_bytes;
            info.power_limit_watts = out.metrics.power_limit_w;
        }
        let t = match (facts.t, facts.time_of_day) {
            (Some(t), _) => Some(t),
            (None, Some(tod)) => Some(self.place_time_of_day(facts.date, tod).ok_or(NoRow::Bad)?),
            (None, None) if self.layout.timed => return Err(NoRow::Bad),
            (None, None) => None,
        };
        let key = match (facts.index, facts.id) {
            (Some(i), _) => RowKey::Index(i),
            (None, Some(id)) => RowKey::Id(id),
            (None, None) => RowKey::None,
        };
        Ok(RowMeta { t, key })
    }

    /// A time of day on `date`; without a date, from 1970-01-01, a day later each time the
    /// time of day goes back by more than half a day (midnight passed).
    fn place_time_of_day(&mut self, date: Option<(i16, i8, i8)>, tod: f64) -> Option<UnixTime> {
        if let Some(date) = date {
            return self.clock.civil(date, tod);
        }
        if self
            .last_time_of_day
            .is_some_and(|last| tod + 43_200.0 < last)
        {
            self.days += 1;
        }
        self.last_time_of_day = Some(tod);
        self.clock.civil(NO_DATE, tod + self.days as f64 * 86_400.0)
    }

    /// Read cell `v` of column `f` into the row's facts, its metrics `m` or its device facts;
    /// `None` when the cell is not a value of its column.
    fn read_cell(
        &mut self,
        f: Field,
        v: &str,
        facts: &mut RowFacts,
        m: &mut Metrics,
        info: Option<&mut DeviceInfo>,
    ) -> Option<()> {
        match f {
            Field::Timestamp => facts.t = Some(self.clock.parse(v)?),
            Field::Date => facts.date = Some(date8(v.trim())?),
            Field::TimeOfDay => facts.time_of_day = Some(time_of_day(v.trim())?),
            Field::Index => facts.index = Some(cell(v).ok()?? as u32),
            Field::EntityKind => facts.not_gpu = v != "GPU",
            Field::Uuid | Field::BusId | Field::Name => {
                read_identity(f, v, !self.layout.has_index, facts, info)
            }
            Field::SmClockMax | Field::PcieGenMax | Field::PcieWidthMax => {
                read_device_limit(f, v, info)?
            }
            Field::ThrottleMask => {
                if let Some(b) = hex(v) {
                    facts.bits = Some(facts.bits.unwrap_or(0) | b);
                }
            }
            Field::ThrottleBit(b) => match v.trim() {
                "Active" => facts.bits = Some(facts.bits.unwrap_or(0) | b),
                "Not Active" => facts.bits = Some(facts.bits.unwrap_or(0)),
                _ => {}
            },
            Field::Ignored => {}
            _ => read_metric(f, v, m)?,
        }
        Some(())
    }

    /// The GPU index of a row: its `index`, else the identity's first-seen order, else its position.
    pub(super) fn index_of(&mut self, key: &RowKey, pos: usize) -> u32 {
        match key {
            RowKey::Index(i) => *i,
            RowKey::Id(id) => {
                let next = self.ids.len() as u32;
                *self.ids.entry(id.clone()).or_insert(next)
            }
            RowKey::None => pos as u32,
        }
    }
}

/// The cells of a CSV line, split at each `,` (one byte, so the pieces stay valid text). A
/// plain scan: cells are a few bytes long, shorter than a searcher takes to set up.
fn csv_cells(line: &str) -> impl Iterator<Item = &str> {
    let bytes = line.as_bytes();
    let mut start = 0;
    let mut at = 0;
    std::iter::from_fn(move || {
        if start > bytes.len() {
            return None;
        }
        while at < bytes.len() && bytes[at] != b',' {
            at += 1;
        }
        let cell = line.get(start..at);
        at += 1;
        start = at;
        cell
    })
}

/// A uuid, bus id or name cell: the row's identity (the first uuid or bus id, when `as_id`) and
/// the device's facts.
fn read_identity(
    f: Field,
    v: &str,
    as_id: bool,
    facts: &mut RowFacts,
    info: Option<&mut DeviceInfo>,
) {
    if f != Field::Name && as_id && facts.id.is_none() {
        facts.id = text(v);
    }
    if let Some(info) = info {
        match f {
            Field::Uuid => info.uuid = text(v),
            Field::BusId => info.bus_id = text(v),
            _ => info.name = text(v).unwrap_or_default(),
        }
    }
}

/// A device's maximum (SM clock, link gen or width) into its facts, when learning them; `None`
/// when the cell is not a number.
fn read_device_limit(f: Field, v: &str, info: Option<&mut DeviceInfo>) -> Option<()> {
    let v = cell(v).ok()?.map(|x| x as u32);
    if let Some(info) = info {
        match f {
            Field::SmClockMax => info.sm_clock_max_mhz = v,
            Field::PcieGenMax => info.pcie_gen_max = v,
            _ => info.pcie_width_max = v,
        }
    }
    Some(())
}

/// A metric cell into `m`; `None` when the cell is not a value of its column.
fn read_metric(f: Field, v: &str, m: &mut Metrics) -> Option<()> {
    let num = || cell(v);
    let pct = |x: f64| x.clamp(0.0, 100.0);
    match f {
        Field::UtilGpu => m.util_gpu = num().ok()?.map(pct),
        Field::UtilMem => m.util_mem = num().ok()?,
        Field::MemUsed => m.mem_used_bytes = num().ok()?.map(|x| (x * MIB) as u64),
        Field::MemTotal => m.mem_total_bytes = num().ok()?.map(|x| (x * MIB) as u64),
        Field::Power => m.power_w = num().ok()?,
        Field::PowerLimit => m.power_limit_w = num().ok()?,
        Field::SmClock => m.sm_clock_mhz = num().ok()?.map(|x| x as u32),
        Field::MemClock => m.mem_clock_mhz = num().ok()?.map(|x| x as u32),
        Field::Temp => m.temp_c = num().ok()?,
        Field::Fan => m.fan_pct = num().ok()?.map(|x| x as u32),
        Field::Pstate => m.pstate = v.trim().strip_prefix('P').and_then(|p| p.parse().ok()),
        Field::PcieGen => m.pcie_gen = num().ok()?.map(|x| x as u32),
        Field::PcieWidth => m.pcie_width = num().ok()?.map(|x| x as u32),
        Field::PcieRx => m.pcie_rx_bytes_per_s = num().ok()?,
        Field::PcieTx => m.pcie_tx_bytes_per_s = num().ok()?,
        Field::Ratio(p) => {
            let v = num().ok()?.map(|x| pct(x * 100.0));
            match p {
                Percent::Util => m.util_gpu = v,
                Percent::SmActive => m.sm_active = v,
                Percent::SmOccupancy => m.sm_occupancy = v,
                Percent::TensorActive => m.tensor_active = v,
                Percent::DramActive => m.dram_active = v,
            }
        }
        _ => {}
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::csv_cells;

    #[test]
    fn csv_cells_split_as_split_does() {
        for line in ["", ",", "a", "a,b", " 1 %, 2 W,", ",,x,,", "é,ü ,ö"] {
            let got: Vec<&str> = csv_cells(line).collect();
            let want: Vec<&str> = line.split(',').collect();
            assert_eq!(got, want, "{line:?}");
        }
    }
}
