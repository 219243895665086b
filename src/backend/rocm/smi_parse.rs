//! Parsers for `rocm-smi --json` and `amd-smi metric|static --json`.
//!
//! Both tools print every value as a string in some release and as a number or a
//! `{"value": .., "unit": ..}` pair in another, and renamed their keys between ROCm releases. The
//! parsers take any JSON, never panic, ignore keys they do not know and leave a reading absent when
//! its key is missing or says "N/A" (including "N/A (Secondary die)" on the second die of an MI250X).

use serde_json::{Map, Value};

/// What one of the SMI tools said about one GPU. Every reading is optional.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SmiGpu {
    /// The tool's own index (`card3` → 3, amd-smi `"gpu": 3`): not the DRM card number.
    pub tool_index: Option<u32>,
    /// Normalised PCI bus id (`0000:03:00.0`), the key used to match sysfs.
    pub bus_id: Option<String>,
    pub name: Option<String>,
    pub util_gpu: Option<f64>,
    /// Memory-controller busy percent (rocm-smi "GPU memory use (%)" before ROCm 6.1, "GPU Memory
    /// Read/Write Activity (%)" after; amd-smi `umc_activity`).
    pub util_mem: Option<f64>,
    /// Share of VRAM allocated, percent (rocm-smi 6.1+ "GPU Memory Allocated (VRAM%)").
    pub vram_allocated_pct: Option<f64>,
    pub vram_used_bytes: Option<u64>,
    pub vram_total_bytes: Option<u64>,
    pub power_w: Option<f64>,
    pub power_cap_w: Option<f64>,
    pub temp_edge_c: Option<f64>,
    pub temp_junction_c: Option<f64>,
    pub temp_mem_c: Option<f64>,
    pub sclk_mhz: Option<u32>,
    pub mclk_mhz: Option<u32>,
    pub sclk_max_mhz: Option<u32>,
    pub mclk_max_mhz: Option<u32>,
    pub pcie_gen: Option<u32>,
    pub pcie_width: Option<u32>,
}

impl SmiGpu {
    /// VRAM used in bytes, from the byte count or else from the allocated share of the total.
    pub fn vram_used(&self) -> Option<u64> {
        self.vram_used_bytes.or_else(|| {
            let total = self.vram_total_bytes? as f64;
            let pct = self.vram_allocated_pct?;
            Some((total * pct / 100.0).round() as u64)
        })
    }
}

/// Why an SMI tool's output could not be read at all.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SmiParseError {
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("output is JSON but not the expected shape: {0}")]
    Shape(String),
}

fn parse_json(text: &str) -> Result<Value, SmiParseError> {
    // Some releases print warning lines before the JSON: try from each line that opens an object
    // or a list, and report the first attempt's error if none parses.
    let mut first_err = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with(['{', '[']) {
            let start = offset + (line.len() - trimmed.len());
            match serde_json::from_str::<Value>(text[start..].trim()) {
                Ok(v) => return Ok(v),
                Err(e) => {
                    first_err.get_or_insert_with(|| e.to_string());
                }
            }
        }
        offset += line.len();
    }
    Err(SmiParseError::NotJson(first_err.unwrap_or_else(|| {
        if text.trim().is_empty() {
            "it printed nothing".to_string()
        } else {
            "no line starts a JSON object or list".to_string()
        }
    })))
}

/// Normalise a PCI bus id to `dddd:bb:dd.f`, lower case; a missing domain becomes `0000`.
/// Accepts the amd-smi/rocm-smi spellings (`0000:C4:00.0`, `03:00.0`, `00000000:03:00.0`).
pub fn normalize_bus_id(raw: &str) -> Option<String> {
    let s = raw.trim().to_ascii_lowercase();
    let mut parts: Vec<&str> = s.split(':').collect();
    if parts.len() == 2 {
        parts.insert(0, "0");
    }
    if parts.len() != 3 {
        return None;
    }
    let (dev, func) = parts[2].split_once('.')?;
    let domain = u32::from_str_radix(parts[0], 16).ok()?;
    let bus = u32::from_str_radix(parts[1], 16).ok()?;
    let dev = u32::from_str_radix(dev, 16).ok()?;
    let func = u32::from_str_radix(func, 16).ok()?;
    if domain > 0xffff || bus > 0xff || dev > 0x1f || func > 7 {
        return None;
    }
    Some(format!("{domain:04x}:{bus:02x}:{dev:02x}.{func}"))
}

/// A value that means "not available": "N/A", "N/A (Secondary die)", "unknown", empty.
fn is_absent(s: &str) -> bool {
    let t = s.trim();
    t.is_empty()
        || t.starts_with("N/A")
        || t.eq_ignore_ascii_case("na")
        || t.eq_ignore_ascii_case("unknown")
        || t.eq_ignore_ascii_case("unsupported")
}

/// The first decimal number in a string ("(1800Mhz)" → 1800, "16.0GT/s x16" → 16, "20 W" → 20).
fn leading_number(s: &str) -> Option<f64> {
    if is_absent(s) {
        return None;
    }
    let bytes = s.as_bytes();
    let start = bytes
        .iter()
        .position(|b| b.is_ascii_digit() || *b == b'-' || *b == b'.')?;
    let rest = &s[start..];
    let end = rest
        .char_indices()
        .skip(1)
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.'))
        .map(|(i, _)| i)
        .unwrap_or(rest.len());
    rest[..end].parse::<f64>().ok().filter(|v| v.is_finite())
}

/// A number with its unit, from a number, a string ("20 W") or a `{"value", "unit"}` pair.
fn number_unit(v: &Value) -> Option<(f64, String)> {
    match v {
        Value::Number(n) => n
            .as_f64()
            .filter(|x| x.is_finite())
            .map(|x| (x, String::new())),
        Value::String(s) => {
            let n = leading_number(s)?;
            let unit = s
                .trim()
                .trim_start_matches(|c: char| {
                    c.is_ascii_digit() || c == '.' || c == '-' || c == '('
                })
                .trim()
                .trim_end_matches(')')
                .to_string();
            Some((n, unit))
        }
        Value::Object(m) => {
            let (n, inner_unit) = number_unit(m.get("value")?)?;
            let unit = m
                .get("unit")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or(inner_unit);
            Some((n, unit))
        }
        _ => None,
    }
}

fn number(v: &Value) -> Option<f64> {
    number_unit(v).map(|(n, _)| n)
}

fn percent(v: &Value) -> Option<f64> {
    number(v).filter(|p| (0.0..=100.0).contains(p))
}

fn non_negative(v: Option<f64>) -> Option<f64> {
    v.filter(|x| *x >= 0.0)
}

fn to_u32(v: Option<f64>) -> Option<u32> {
    v.filter(|x| *x >= 0.0 && *x <= u32::MAX as f64)
        .map(|x| x.round() as u32)
}

/// Bytes from a value whose unit is one of B, KB, MB, GB (binary multiples, as the tools use).
fn bytes(v: &Value) -> Option<u64> {
    let (n, unit) = number_unit(v)?;
    if n < 0.0 {
        return None;
    }
    let scale = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1.0,
        "KB" | "KIB" => 1024.0,
        "MB" | "MIB" => 1024.0 * 1024.0,
        "GB" | "GIB" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let b = n * scale;
    (b <= u64::MAX as f64).then_some(b.round() as u64)
}

/// Watts from W, mW or µW.
fn watts(v: &Value) -> Option<f64> {
    let (n, unit) = number_unit(v)?;
    let scale = match unit.trim() {
        "" | "W" => 1.0,
        "mW" => 1e-3,
        "uW" | "µW" => 1e-6,
        _ => return None,
    };
    non_negative(Some(n * scale))
}

/// MHz from MHz/Mhz or GHz.
fn mhz(v: &Value) -> Option<u32> {
    let (n, unit) = number_unit(v)?;
    let scale = if unit.to_ascii_lowercase().starts_with("ghz") {
        1000.0
    } else {
        1.0
    };
    to_u32(Some(n * scale))
}

/// PCIe generation from a transfer rate in GT/s.
pub fn pcie_gen_from_gts(gts: f64) -> Option<u32> {
    const GENS: [(f64, u32); 7] = [
        (2.5, 1),
        (5.0, 2),
        (8.0, 3),
        (16.0, 4),
        (32.0, 5),
        (64.0, 6),
        (128.0, 7),
    ];
    GENS.iter()
        .find(|(rate, _)| (gts - rate).abs() < 0.3)
        .map(|(_, g)| *g)
}

/// "16.0GT/s x16" (optionally inside a "1 (...)" level string) → (gen, width).
fn pcie_level(s: &str) -> (Option<u32>, Option<u32>) {
    let inner = s.split_once('(').map(|(_, r)| r).unwrap_or(s);
    let gen = leading_number(inner).and_then(pcie_gen_from_gts);
    let width = inner
        .split_whitespace()
        .find_map(|w| w.strip_prefix('x'))
        .and_then(|w| w.trim_end_matches([')', '*']).parse::<u32>().ok());
    (gen, width)
}

/// A product name that is really a name (old releases print "0x1002" placeholders).
fn real_name(v: &Value) -> Option<String> {
    let s = v.as_str()?.trim();
    if is_absent(s) || s.starts_with("0x") {
        return None;
    }
    Some(s.to_string())
}

fn first<'a>(m: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a Value> {
    keys.iter().find_map(|k| m.get(*k)).filter(|v| match v {
        Value::String(s) => !is_absent(s),
        Value::Null => false,
        _ => true,
    })
}

/// Parse `rocm-smi ... --json`: `{"card0": {...}, "card1": {...}, "system": {...}}`.
pub fn parse_rocm_smi(text: &str) -> Result<Vec<SmiGpu>, SmiParseError> {
    let root = parse_json(text)?;
    let Value::Object(top) = root else {
        return Err(SmiParseError::Shape(
            "expected an object keyed by \"card0\", \"card1\", ...".to_string(),
        ));
    };
    let mut gpus = Vec::new();
    for (key, card) in &top {
        let Some(idx) = key.strip_prefix("card").and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Value::Object(m) = card else { continue };
        gpus.push(rocm_smi_card(idx, m));
    }
    gpus.sort_by_key(|g| g.tool_index);
    Ok(gpus)
}

/// The driver version rocm-smi reports under `"system"`, if any.
pub fn rocm_smi_driver_version(text: &str) -> Option<String> {
    let root = parse_json(text).ok()?;
    let v = root.get("system")?.get("Driver version")?;
    real_name(v)
}

fn rocm_smi_card(idx: u32, m: &Map<String, Value>) -> SmiGpu {
    let f = |keys: &[&str]| first(m, keys);
    let (link_gen, link_width) = f(&["pcie clock level"])
        .and_then(Value::as_str)
        .map(pcie_level)
        .unwrap_or((None, None));
    SmiGpu {
        tool_index: Some(idx),
        bus_id: f(&["PCI Bus"])
            .and_then(Value::as_str)
            .and_then(normalize_bus_id),
        name: [
            "Card series",
            "Card Series",
            "Device Name",
            "Card SKU",
            "Card model",
            "Card Model",
        ]
        .iter()
        .find_map(|k| m.get(*k).and_then(real_name)),
        util_gpu: f(&["GPU use (%)"]).and_then(percent),
        util_mem: f(&["GPU Memory Read/Write Activity (%)", "GPU memory use (%)"])
            .and_then(percent),
        vram_allocated_pct: f(&["GPU Memory Allocated (VRAM%)"]).and_then(percent),
        vram_used_bytes: f(&["VRAM Total Used Memory (B)"]).and_then(bytes),
        vram_total_bytes: f(&["VRAM Total Memory (B)"]).and_then(bytes),
        power_w: f(&[
            "Current Socket Graphics Package Power (W)",
            "Average Graphics Package Power (W)",
        ])
        .and_then(watts),
        power_cap_w: f(&["Max Graphics Package Power (W)"]).and_then(watts),
        temp_edge_c: f(&[
            "Temperature (Sensor edge) (C)",
            "Temperature (Sensor edge) (c)",
        ])
        .and_then(number),
        temp_junction_c: f(&[
            "Temperature (Sensor junction) (C)",
            "Temperature (Sensor junction) (c)",
        ])
        .and_then(number),
        temp_mem_c: f(&[
            "Temperature (Sensor memory) (C)",
            "Temperature (Sensor mem) (c)",
        ])
        .and_then(number),
        sclk_mhz: f(&["sclk clock speed:"]).and_then(mhz),
        mclk_mhz: f(&["mclk clock speed:"]).and_then(mhz),
        sclk_max_mhz: None,
        mclk_max_mhz: None,
        pcie_gen: link_gen,
        pcie_width: link_width,
    }
}

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
