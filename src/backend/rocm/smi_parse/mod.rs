//! Parsers for `rocm-smi --json` and `amd-smi metric|static --json`.
//!
//! Both tools print every value as a string in some release and as a number or a
//! `{"value": .., "unit": ..}` pair in another, and renamed their keys between ROCm releases. The
//! parsers take any JSON, never panic, ignore keys they do not know and leave a reading absent when
//! its key is missing or says "N/A" (including "N/A (Secondary die)" on the second die of an MI250X).

use serde_json::Value;

mod amd_smi;
mod rocm_smi;

pub use amd_smi::{merge_amd_static, parse_amd_smi_metric, parse_amd_smi_static, AmdStatic};
pub use rocm_smi::{parse_rocm_smi, rocm_smi_driver_version};

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
