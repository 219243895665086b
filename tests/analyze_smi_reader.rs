//! The nvidia-smi CSV reader in-process: grouping, windows, values, and arbitrary input.

mod support;

use std::io::Cursor;
use std::path::Path;

use proptest::prelude::*;
use support::api::{throttle, Sample, SampleSource, SmiCsvSource};

fn read(text: &[u8], fields: Option<&[String]>) -> Result<(SmiCsvSource, Vec<Sample>), String> {
    let mut src = SmiCsvSource::from_reader(
        Path::new("mem.csv"),
        Box::new(Cursor::new(text.to_vec())),
        fields,
    )
    .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    while let Some(s) = src.next_sample() {
        out.push(s);
    }
    Ok((src, out))
}

#[test]
fn rows_of_one_loop_become_one_sample_and_values_keep_their_units() {
    std::env::set_var("TZ", "UTC");
    let text = b"timestamp, index, utilization.gpu [%], memory.used [MiB], power.draw [W], clocks_throttle_reasons.active, clocks_event_reasons.hw_slowdown, pstate\n\
2026/12/02 13:00:00.000, 0, 50 %, 1024 MiB, 100.5 W, 0x0000000000000004, Not Active, P0\n\
2026/12/02 13:00:00.001, 1, [N/A], [Not Supported], N/A, 0x0000000000000000, Active, P8\n\
2026/12/02 13:00:00.100, 0, 60 %, 1024 MiB, 101.0 W, 0x0000000000000004, Not Active, P0\n\
2026/12/02 13:00:00.101, 1, 10 %, 2048 MiB, 90.0 W, 0x0000000000000000, Not Active, P8\n\
2026/12/02 13:00:00.250, 0, 70 %, 1024 MiB, 101.0 W, 0x0000000000000004, Not Active, P0\n\
2026/12/02 13:00:00.251, 1, 20 %, 2048 MiB, 90.0 W, 0x0000000000000000, Not Active, P8\n";
    let (src, samples) = read(text, None).expect("reads");
    assert_eq!(src.system().devices.len(), 2);
    assert_eq!(samples.len(), 3);
    let s0 = &samples[0];
    assert!((s0.t - 1_796_216_400.0).abs() < 1e-6, "{}", s0.t);
    assert_eq!(s0.gpus.len(), 2);
    let (g0, g1) = (&s0.gpus[0].metrics, &s0.gpus[1].metrics);
    assert_eq!(g0.util_gpu, Some(50.0));
    assert_eq!(g0.mem_used_bytes, Some(1024 * 1048576));
    assert_eq!(g0.power_w, Some(100.5));
    assert_eq!(g0.throttle, Some(throttle::SW_POWER_CAP));
    assert_eq!(g0.pstate, Some(0));
    // Not available is absent, never zero.
    assert_eq!(g1.util_gpu, None);
    assert_eq!(g1.mem_used_bytes, None);
    assert_eq!(g1.power_w, None);
    assert_eq!(g1.throttle, Some(throttle::HW_SLOWDOWN));
    assert!(s0.gpus[1].util_windows.is_empty());
    // 100 ms later re-reads the same 200 ms driver window: no new window; 250 ms later a new one.
    assert_eq!(samples[1].gpus[0].util_windows.len(), 0);
    assert_eq!(samples[1].gpus[0].metrics.util_gpu, Some(60.0));
    assert_eq!(samples[2].gpus[0].util_windows.len(), 1);
    assert_eq!(samples[1].gpus[1].util_windows.len(), 1);
    assert!(src.warnings().is_empty());
}

#[test]
fn without_index_rows_group_by_timestamp_and_a_repeated_header_is_skipped() {
    std::env::set_var("TZ", "UTC");
    let text = b"timestamp, utilization.gpu [%]\n\
2026/12/02 13:00:00.000, 10 %\n\
2026/12/02 13:00:00.000, 20 %\n\
\n\
timestamp, utilization.gpu [%]\n\
2026/12/02 13:00:01.000, 30 %\n\
2026/12/02 13:00:01.000, 40 %\n\
2026/12/02 13:00:0x.000, 40 %\n\
2026/12/02 13:00:02.000, 50 %, 7\n";
    let (src, samples) = read(text, None).expect("reads");
    assert_eq!(samples.len(), 2);
    assert_eq!(samples[1].gpus[1].metrics.util_gpu, Some(40.0));
    assert_eq!(samples[1].gpus[1].index, 1);
    let w = src.warnings();
    assert!(
        w[0].contains("skipped 2") && w[0].contains("line 8"),
        "{w:?}"
    );
}

#[test]
fn headerless_needs_fields_and_reads_with_them() {
    let text = b"2026/12/02 13:00:00.000, 0, 15 %\n2026/12/02 13:00:00.250, 0, 16 %\n";
    let e = read(text, None).expect_err("needs fields");
    assert!(e.contains("--fields") && e.contains("mem.csv"), "{e}");
    let fields: Vec<String> = ["timestamp", "index", "utilization.gpu"]
        .map(String::from)
        .to_vec();
    let (_, samples) = read(text, Some(&fields)).expect("reads");
    assert_eq!(samples.len(), 2);
    let missing: Vec<String> = ["timestamp", "index"].map(String::from).to_vec();
    let e = read(text, Some(&missing)).expect_err("no util");
    assert!(e.contains("utilization.gpu"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = read(&bytes, None);
    }

    #[test]
    fn garbled_lines_after_a_good_header_never_panic(
        lines in proptest::collection::vec(
            prop_oneof![
                "[0-9/ :.,%A-Za-z\\[\\]-]{0,80}",
                Just("2026/12/02 13:00:00.000, 0, 50 %".to_string()),
                Just("2026/12/02 25:61:99.9, 0, 50 %".to_string()),
                Just("9999/99/99 13:00:00.000, 0, [N/A]".to_string()),
                Just("2026/02/30 13:00:00.000, 4294967296, 1e309 %".to_string()),
            ],
            0..40,
        )
    ) {
        let mut text = String::from("timestamp, index, utilization.gpu [%]\n");
        for l in &lines {
            text.push_str(l);
            text.push('\n');
        }
        if let Ok((src, samples)) = read(text.as_bytes(), None) {
            for s in &samples {
                for g in &s.gpus {
                    if let Some(u) = g.metrics.util_gpu {
                        prop_assert!((0.0..=100.0).contains(&u));
                    }
                }
            }
            let _ = src.warnings();
        }
    }
}
