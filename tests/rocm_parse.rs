//! rocm-smi and amd-smi outputs of several ROCm releases through the parsers
//! (fixtures and their sources: tests/fixtures/rocm/README.md).

mod support;

use support::api::{
    merge_amd_static, normalize_bus_id, parse_amd_smi_metric, parse_amd_smi_static, parse_rocm_smi,
    rocm_smi_driver_version, SmiGpu, SmiParseError,
};

fn fixture(name: &str) -> String {
    let p = support::fixture("rocm").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn rocm(name: &str) -> Vec<SmiGpu> {
    parse_rocm_smi(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn rocm_smi_4_3_uses_old_keys_and_skips_hex_placeholder_names() {
    let g = rocm("rocm-smi-4.3.0-rx6700xt.json");
    assert_eq!(g.len(), 1);
    let g = &g[0];
    assert_eq!(g.tool_index, Some(0));
    assert_eq!(g.bus_id.as_deref(), Some("0000:07:00.0"));
    // "Card series": "0x1002" is a placeholder; the SKU is the best name this release gives.
    assert_eq!(g.name.as_deref(), Some("67XA6S"));
    assert_eq!(g.util_gpu, Some(0.0));
    assert_eq!(g.util_mem, Some(0.0));
    assert_eq!(g.power_w, Some(6.0));
    assert_eq!(g.power_cap_w, Some(211.0));
    assert_eq!(g.temp_edge_c, Some(45.0));
    assert_eq!(g.temp_junction_c, Some(47.0));
    assert_eq!(g.temp_mem_c, Some(46.0));
    assert_eq!(g.sclk_mhz, Some(500));
    assert_eq!(g.mclk_mhz, Some(96));
    assert_eq!((g.pcie_gen, g.pcie_width), (Some(4), Some(16)));
    assert_eq!(g.vram_total_bytes, Some(12_868_124_672));
    assert_eq!(g.vram_used(), Some(1_622_728_704));
}

#[test]
fn rocm_smi_6_0_2_two_cards_keep_their_bus_ids() {
    let g = rocm("rocm-smi-6.0.2-mi100.json");
    assert_eq!(g.len(), 2, "the \"system\" entry is not a GPU");
    assert_eq!(g[0].bus_id.as_deref(), Some("0000:83:00.0"));
    // Upper-case hex in "PCI Bus" is normalised.
    assert_eq!(g[1].bus_id.as_deref(), Some("0000:a3:00.0"));
    assert_eq!(
        g[0].name.as_deref(),
        Some("Arcturus GL-XL [Instinct MI100]")
    );
    assert_eq!(g[0].power_w, Some(36.0));
    assert_eq!(g[1].power_w, Some(44.0));
    assert_eq!(g[1].temp_junction_c, Some(58.0));
    assert_eq!(g[0].sclk_mhz, Some(300));
    assert_eq!(
        rocm_smi_driver_version(&fixture("rocm-smi-6.0.2-mi100.json")).as_deref(),
        Some("6.3.6")
    );
}

#[test]
fn rocm_smi_6_1_renamed_memory_keys() {
    let g = &rocm("rocm-smi-6.1.2-rx6700xt.json")[0];
    assert_eq!(
        g.name.as_deref(),
        Some("Navi 22 [Radeon RX 6700/6700 XT / 6800M]")
    );
    // "GPU Memory Read/Write Activity (%)" is the busy share; "Allocated (VRAM%)" the fill level.
    assert_eq!(g.util_mem, Some(0.0));
    assert_eq!(g.vram_allocated_pct, Some(12.0));
    assert_eq!(g.vram_used(), Some(1_572_745_216));
    assert_eq!(g.sclk_mhz, Some(0));
}

#[test]
fn rocm_smi_6_2_apu_reports_current_socket_power_and_allocated_share_only() {
    let g = &rocm("rocm-smi-6.2.4-phoenix-apu.json")[0];
    assert_eq!(g.power_w, Some(7.222));
    assert_eq!(g.util_gpu, Some(19.0));
    assert_eq!(g.bus_id.as_deref(), Some("0000:c4:00.0"));
    assert_eq!(g.name.as_deref(), Some("Phoenix3"));
    assert_eq!(g.vram_allocated_pct, Some(87.0));
    // No byte counts and no total: used memory cannot be known, so it is absent.
    assert_eq!(g.vram_total_bytes, None);
    assert_eq!(g.vram_used(), None);
    assert_eq!(g.util_mem, None, "\"Memory Activity\": \"N/A\" is absent");
    assert_eq!(g.temp_junction_c, None);
}

#[test]
fn mi250x_secondary_die_power_is_absent_not_zero() {
    let g = rocm("rocm-smi-6.0-mi250x-secondary-die.json");
    assert_eq!(g[0].power_w, Some(237.0));
    assert_eq!(g[1].power_w, None);
    assert_eq!(g[1].power_cap_w, None);
    assert_eq!(g[1].temp_edge_c, None);
    assert_eq!(g[1].temp_junction_c, Some(44.0));
    assert_eq!(g[1].util_gpu, Some(99.0));
}

#[test]
fn partial_and_old_outputs_leave_missing_keys_absent() {
    let g = &rocm("rocm-smi-7900xtx-ubuntu2404.json")[0];
    assert_eq!(g.power_w, Some(19.0));
    assert_eq!(g.vram_used(), Some(794_341_376));
    assert_eq!(g.bus_id, None);
    assert_eq!(g.sclk_mhz, None);
    let g = &rocm("rocm-smi-2.x-lowercase-units.json")[0];
    assert_eq!(g.temp_edge_c, Some(77.0));
    assert_eq!(g.temp_junction_c, Some(103.0));
    assert_eq!(g.temp_mem_c, Some(79.0));
    assert_eq!(g.util_gpu, None);
}

#[test]
fn amd_smi_bare_list_with_value_unit_pairs() {
    let mut g = parse_amd_smi_metric(&fixture("amd-smi-6.2-metric-list.json")).unwrap();
    assert_eq!(g.len(), 1);
    assert_eq!(g[0].bus_id, None, "metric has no bus id; static adds it");
    let st = parse_amd_smi_static(&fixture("amd-smi-6.2-static-list.json")).unwrap();
    merge_amd_static(&mut g, &st);
    let g = &g[0];
    assert_eq!(g.bus_id.as_deref(), Some("0000:03:00.0"));
    assert_eq!(g.name.as_deref(), Some("AMD Radeon PRO W7700"));
    assert_eq!(g.util_gpu, Some(42.0));
    assert_eq!(g.util_mem, Some(1.0));
    assert_eq!(g.power_w, Some(20.0));
    assert_eq!(g.sclk_mhz, Some(14));
    assert_eq!(g.sclk_max_mhz, Some(2482));
    assert_eq!(g.mclk_mhz, Some(96));
    assert_eq!(g.temp_edge_c, Some(36.0));
    assert_eq!(g.temp_junction_c, Some(42.0));
    assert_eq!((g.pcie_gen, g.pcie_width), (Some(4), Some(16)));
    assert_eq!(g.vram_total_bytes, Some(16_368 * 1024 * 1024));
    assert_eq!(g.vram_used(), Some(412 * 1024 * 1024));
}

#[test]
fn amd_smi_gpu_data_envelope_with_na_sections() {
    let mut g = parse_amd_smi_metric(&fixture("amd-smi-6.4-metric-gpu_data.json")).unwrap();
    let st = parse_amd_smi_static(&fixture("amd-smi-6.4-static-gpu_data.json")).unwrap();
    assert_eq!(st[0].power_cap_w, Some(750.0));
    assert_eq!(st[0].pcie_gen_max, Some(5));
    merge_amd_static(&mut g, &st);
    assert_eq!(g.len(), 2);
    assert_eq!(g[0].bus_id.as_deref(), Some("0000:1b:00.0"));
    assert_eq!(g[0].name.as_deref(), Some("AMD Instinct MI300X"));
    assert_eq!(g[0].util_gpu, Some(97.0));
    assert_eq!(g[0].power_w, Some(618.0));
    assert_eq!(g[0].power_cap_w, Some(750.0));
    assert_eq!(g[0].temp_edge_c, None, "MI300X has no edge sensor");
    assert_eq!(g[0].temp_junction_c, Some(71.0));
    assert_eq!(g[0].pcie_gen, Some(5));
    // Second GPU: whole sections are "N/A"; everything but identity is absent.
    let b = &g[1];
    assert_eq!(b.bus_id.as_deref(), Some("0000:3d:00.0"));
    assert_eq!(
        (b.util_gpu, b.power_w, b.temp_junction_c, b.sclk_mhz),
        (None, None, None, None)
    );
    assert_eq!(b.vram_used(), None);
    assert_eq!(
        b.vram_total_bytes,
        Some(196_592 * 1024 * 1024),
        "from static"
    );
}

#[test]
fn warnings_before_the_json_are_skipped_and_non_json_is_an_error() {
    let text = format!(
        "WARNING: AMD GPU device(s) is/are in a low-power state.\n{}",
        fixture("rocm-smi-6.1.2-rx6700xt.json")
    );
    assert_eq!(parse_rocm_smi(&text).unwrap().len(), 1);
    let text = format!(
        "WARNING: [card0] is in a low-power state {{see docs}}\n{}",
        fixture("rocm-smi-6.1.2-rx6700xt.json")
    );
    assert_eq!(
        parse_rocm_smi(&text).unwrap().len(),
        1,
        "brackets inside a warning line"
    );
    assert!(matches!(parse_rocm_smi(""), Err(SmiParseError::NotJson(_))));
    assert!(matches!(
        parse_rocm_smi("ERROR:root:Driver not initialized (amdgpu not found in modules)"),
        Err(SmiParseError::NotJson(_))
    ));
    let cut = &fixture("rocm-smi-6.0.2-mi100.json")[..700];
    assert!(matches!(
        parse_rocm_smi(cut),
        Err(SmiParseError::NotJson(_))
    ));
    assert!(matches!(
        parse_rocm_smi("[1, 2]"),
        Err(SmiParseError::Shape(_))
    ));
    assert!(matches!(
        parse_amd_smi_metric("{\"cards\": 1}"),
        Err(SmiParseError::Shape(_))
    ));
    assert_eq!(parse_rocm_smi("{}").unwrap(), Vec::new());
}

#[test]
fn bus_ids_are_normalised() {
    assert_eq!(
        normalize_bus_id("0000:C4:00.0").as_deref(),
        Some("0000:c4:00.0")
    );
    assert_eq!(normalize_bus_id("03:00.0").as_deref(), Some("0000:03:00.0"));
    assert_eq!(
        normalize_bus_id("00000000:03:00.0").as_deref(),
        Some("0000:03:00.0")
    );
    assert_eq!(normalize_bus_id("N/A"), None);
    assert_eq!(normalize_bus_id("0000:03:00"), None);
    assert_eq!(normalize_bus_id("0000:300:00.0"), None);
}

mod no_input_panics {
    use super::*;
    use crate::support::api::sysfs::{parse_dpm, parse_link_speed};
    use proptest::prelude::*;
    use serde_json::Value;

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(|f| serde_json::Number::from_f64(f)
                .map(Value::Number)
                .unwrap_or(Value::Null)),
            "[ -~]{0,12}".prop_map(Value::String),
            prop_oneof![
                Just("N/A"),
                Just("N/A (Secondary die)"),
                Just("(1800Mhz)"),
                Just("1 (16.0GT/s x16)"),
                Just("-"),
                Just("."),
                Just("0x1002"),
                Just("9999999999999999999999 GB"),
                Just("0000:C4:00.0"),
            ]
            .prop_map(|s| Value::String(s.to_string())),
        ];
        let keys = prop_oneof![
            Just("gpu".to_string()),
            Just("usage".to_string()),
            Just("gfx_activity".to_string()),
            Just("value".to_string()),
            Just("unit".to_string()),
            Just("mem_usage".to_string()),
            Just("used_vram".to_string()),
            Just("total_vram".to_string()),
            Just("bus".to_string()),
            Just("bdf".to_string()),
            Just("pcie".to_string()),
            Just("speed".to_string()),
            Just("clock".to_string()),
            Just("gfx_0".to_string()),
            Just("clk".to_string()),
            Just("gpu_data".to_string()),
            Just("card0".to_string()),
            Just("PCI Bus".to_string()),
            Just("GPU use (%)".to_string()),
            Just("VRAM Total Memory (B)".to_string()),
            Just("pcie clock level".to_string()),
            "[ -~]{0,8}",
        ];
        leaf.prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((keys.clone(), inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    fn all_parsers(text: &str) {
        let _ = parse_rocm_smi(text);
        let _ = rocm_smi_driver_version(text);
        let _ = parse_amd_smi_metric(text);
        if let (Ok(mut m), Ok(s)) = (parse_amd_smi_metric(text), parse_amd_smi_static(text)) {
            merge_amd_static(&mut m, &s);
            for g in &m {
                let _ = g.vram_used();
            }
        }
        let _ = normalize_bus_id(text);
        let _ = parse_dpm(text);
        let _ = parse_link_speed(text);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn arbitrary_text(text in "\\PC{0,200}") {
            all_parsers(&text);
        }

        #[test]
        fn arbitrary_json(v in json_value()) {
            let text = v.to_string();
            all_parsers(&text);
            // The same value wrapped the ways the tools wrap it.
            all_parsers(&format!("{{\"card0\": {text}}}"));
            all_parsers(&format!("{{\"gpu_data\": [{text}]}}"));
            all_parsers(&format!("[{{\"gpu\": 0, \"usage\": {text}, \"mem_usage\": {text}}}]"));
        }

        #[test]
        fn real_outputs_cut_anywhere(cut in 0usize..4000, which in 0usize..4) {
            let name = ["rocm-smi-6.0.2-mi100.json", "rocm-smi-6.1.2-rx6700xt.json",
                        "amd-smi-6.4-metric-gpu_data.json", "amd-smi-6.2-metric-list.json"][which];
            let text = fixture(name);
            let mut end = cut.min(text.len());
            while !text.is_char_boundary(end) { end -= 1; }
            all_parsers(&text[..end]);
        }
    }
}
