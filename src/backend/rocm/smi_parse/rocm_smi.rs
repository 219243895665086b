//! `rocm-smi ... --json`: `{"card0": {...}, "card1": {...}, "system": {...}}`, every value a string,
//! key names varying by release.

use serde_json::{Map, Value};

use super::*;

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
