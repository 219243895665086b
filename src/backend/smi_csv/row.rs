//! One data row: its cells read into a GPU's reading, its time and its GPU's identity.

use super::cell::{cell, hex, text};
use super::field::Field;
use super::{SmiCsvSource, MIB};
use crate::model::{DeviceInfo, GpuReading, Metrics, UnixTime, UtilSampling};

/// Where and when one parsed row belongs (its readings are parsed in place into the sample).
pub(super) struct RowMeta {
    pub(super) t: UnixTime,
    pub(super) key: RowKey,
}

/// Which GPU a row is of: its `index`, else its uuid or bus id, else nothing to tell.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum RowKey {
    Index(u32),
    Id(String),
    None,
}

/// What a row says besides its metrics, gathered cell by cell.
#[derive(Default)]
struct RowFacts {
    t: Option<UnixTime>,
    index: Option<u32>,
    /// The first uuid or bus id, read only when the log has no `index`.
    id: Option<String>,
    /// Throttle reasons: the mask, or the bits of the reason columns read.
    bits: Option<u64>,
}

impl SmiCsvSource {
    /// Parse one data line into `out` (and, when learning the GPUs, `info`); `None` when it does
    /// not match the fields (`out` then holds part of the line).
    pub(super) fn parse_row(
        &mut self,
        line: &str,
        out: &mut GpuReading,
        mut info: Option<&mut DeviceInfo>,
    ) -> Option<RowMeta> {
        let mut facts = RowFacts::default();
        let mut cols = 0;
        // Split at each ',' (one byte, so the pieces stay valid text).
        for v in line.split(',') {
            let f = *self.fields.get(cols)?;
            cols += 1;
            self.read_cell(f, v, &mut facts, &mut out.metrics, info.as_deref_mut())?;
        }
        if cols != self.fields.len() {
            return None;
        }
        out.metrics.throttle = facts.bits;
        if let Some(info) = info {
            info.util_sampling = UtilSampling::Polled;
            info.memory_total_bytes = out.metrics.mem_total_bytes;
            info.power_limit_watts = out.metrics.power_limit_w;
        }
        let key = match (facts.index, facts.id) {
            (Some(i), _) => RowKey::Index(i),
            (None, Some(id)) => RowKey::Id(id),
            (None, None) => RowKey::None,
        };
        Some(RowMeta { t: facts.t?, key })
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
            Field::Index => facts.index = Some(cell(v).ok()?? as u32),
            Field::Uuid | Field::BusId | Field::Name => {
                read_identity(f, v, !self.has_index, facts, info)
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
            Field::UtilGpu
            | Field::UtilMem
            | Field::MemUsed
            | Field::MemTotal
            | Field::Power
            | Field::PowerLimit
            | Field::SmClock
            | Field::MemClock
            | Field::Temp
            | Field::Fan
            | Field::Pstate
            | Field::PcieGen
            | Field::PcieWidth => read_metric(f, v, m)?,
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
    match f {
        Field::UtilGpu => m.util_gpu = num().ok()?.map(|x| x.clamp(0.0, 100.0)),
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
        _ => {}
    }
    Some(())
}
