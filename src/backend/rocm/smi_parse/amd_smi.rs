//! `amd-smi metric --json` and `amd-smi static --json`: a bare list or `{"gpu_data": [...]}`, values
//! as numbers, strings or `{"value", "unit"}` pairs.

use serde_json::{Map, Value};

use super::*;

/// The per-GPU entries of an amd-smi JSON document: a bare list, or `{"gpu_data": [...]}`.
fn amd_smi_entries(root: &Value) -> Result<Vec<&Map<String, Value>>, SmiParseError> {
    let list = match root {
        Value::Array(a) => a,
        Value::Object(m) => match m.get("gpu_data") {
            Some(Value::Array(a)) => a,
            _ => {
                return Err(SmiParseError::Shape(
                    "expected a list of GPUs or {\"gpu_data\": [...]}".to_string(),
                ))
            }
        },
        _ => {
            return Err(SmiParseError::Shape(
                "expected a list of GPUs or {\"gpu_data\": [...]}".to_string(),
            ))
        }
    };
    Ok(list.iter().filter_map(Value::as_object).collect())
}

fn path<'a>(m: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a Value> {
    let (head, rest) = keys.split_first()?;
    let v = m.get(*head)?;
    if rest.is_empty() {
        return match v {
            Value::String(s) if is_absent(s) => None,
            Value::Null => None,
            _ => Some(v),
        };
    }
    path(v.as_object()?, rest)
}

fn gpu_index(m: &Map<String, Value>) -> Option<u32> {
    to_u32(m.get("gpu").and_then(number))
}

/// Parse `amd-smi metric --json`.
pub fn parse_amd_smi_metric(text: &str) -> Result<Vec<SmiGpu>, SmiParseError> {
    let root = parse_json(text)?;
    let mut gpus: Vec<SmiGpu> = amd_smi_entries(&root)?
        .into_iter()
        .map(|m| {
            let width = to_u32(path(m, &["pcie", "width"]).and_then(number));
            let gen = to_u32(path(m, &["pcie", "gen"]).and_then(number)).or_else(|| {
                path(m, &["pcie", "speed"])
                    .and_then(number_unit)
                    .and_then(|(n, unit)| {
                        // amd-smi reports the link speed in GT/s (some builds in MT/s).
                        let gts = if unit.contains("MT") { n / 1000.0 } else { n };
                        pcie_gen_from_gts(gts)
                    })
            });
            SmiGpu {
                tool_index: gpu_index(m),
                bus_id: path(m, &["bdf"])
                    .or_else(|| path(m, &["bus", "bdf"]))
                    .and_then(Value::as_str)
                    .and_then(normalize_bus_id),
                name: None,
                util_gpu: path(m, &["usage", "gfx_activity"]).and_then(percent),
                util_mem: path(m, &["usage", "umc_activity"]).and_then(percent),
                vram_allocated_pct: None,
                vram_used_bytes: path(m, &["mem_usage", "used_vram"]).and_then(mb_default),
                vram_total_bytes: path(m, &["mem_usage", "total_vram"]).and_then(mb_default),
                power_w: path(m, &["power", "socket_power"])
                    .or_else(|| path(m, &["power", "current_socket_power"]))
                    .or_else(|| path(m, &["power", "average_socket_power"]))
                    .and_then(watts),
                power_cap_w: None,
                temp_edge_c: path(m, &["temperature", "edge"]).and_then(number),
                temp_junction_c: path(m, &["temperature", "hotspot"])
                    .or_else(|| path(m, &["temperature", "junction"]))
                    .and_then(number),
                temp_mem_c: path(m, &["temperature", "mem"]).and_then(number),
                sclk_mhz: path(m, &["clock", "gfx_0", "clk"]).and_then(mhz),
                mclk_mhz: path(m, &["clock", "mem_0", "clk"]).and_then(mhz),
                sclk_max_mhz: path(m, &["clock", "gfx_0", "max_clk"]).and_then(mhz),
                mclk_max_mhz: path(m, &["clock", "mem_0", "max_clk"]).and_then(mhz),
                pcie_gen: gen,
                pcie_width: width,
            }
        })
        .collect();
    gpus.sort_by_key(|g| g.tool_index);
    Ok(gpus)
}

/// amd-smi prints VRAM in MB; a bare number without a unit is MB too.
fn mb_default(v: &Value) -> Option<u64> {
    match number_unit(v)? {
        (n, unit) if unit.trim().is_empty() => bytes(&Value::String(format!("{n} MB"))),
        _ => bytes(v),
    }
}

/// What `amd-smi static --json` adds: bus id, name, power cap, VRAM size, keyed by amd-smi index.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AmdStatic {
    pub tool_index: Option<u32>,
    pub bus_id: Option<String>,
    pub name: Option<String>,
    pub vram_total_bytes: Option<u64>,
    pub power_cap_w: Option<f64>,
    pub pcie_gen_max: Option<u32>,
    pub pcie_width_max: Option<u32>,
}

/// Parse `amd-smi static --json`.
pub fn parse_amd_smi_static(text: &str) -> Result<Vec<AmdStatic>, SmiParseError> {
    let root = parse_json(text)?;
    Ok(amd_smi_entries(&root)?
        .into_iter()
        .map(|m| AmdStatic {
            tool_index: gpu_index(m),
            bus_id: path(m, &["bus", "bdf"])
                .or_else(|| path(m, &["bdf"]))
                .and_then(Value::as_str)
                .and_then(normalize_bus_id),
            name: path(m, &["asic", "market_name"])
                .or_else(|| path(m, &["board", "product_name"]))
                .and_then(real_name),
            vram_total_bytes: path(m, &["vram", "size"]).and_then(mb_default),
            power_cap_w: path(m, &["limit", "max_power"])
                .or_else(|| path(m, &["limit", "ppt0", "max_power_limit"]))
                .and_then(watts),
            pcie_gen_max: path(m, &["bus", "max_pcie_speed"])
                .and_then(number)
                .and_then(pcie_gen_from_gts),
            pcie_width_max: to_u32(
                path(m, &["bus", "max_pcie_width"])
                    .or_else(|| path(m, &["bus", "max_pcie_lanes"]))
                    .and_then(number),
            ),
        })
        .collect())
}

/// Fill bus ids, names and static facts into metric entries, matched by amd-smi's own index.
pub fn merge_amd_static(metric: &mut [SmiGpu], statics: &[AmdStatic]) {
    for g in metric.iter_mut() {
        let Some(s) = statics
            .iter()
            .find(|s| s.tool_index.is_some() && s.tool_index == g.tool_index)
        else {
            continue;
        };
        g.bus_id = g.bus_id.take().or_else(|| s.bus_id.clone());
        g.name = g.name.take().or_else(|| s.name.clone());
        g.vram_total_bytes = g.vram_total_bytes.or(s.vram_total_bytes);
        g.power_cap_w = g.power_cap_w.or(s.power_cap_w);
    }
}
