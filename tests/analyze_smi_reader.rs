//! The nvidia-smi CSV reader in-process: grouping, windows, values, and arbitrary input.

mod support;

use std::io::Cursor;
use std::path::Path;

use proptest::prelude::*;
use support::api::{read_log, throttle, LogOptions, Sample, SampleSource, SmiCsvSource};

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

/// Rows without a GPU identity whose times show no poll (long gaps at no fixed count of rows)
/// are refused with the query that logs an index, never read as one GPU.
#[test]
fn rows_without_identity_whose_polls_cannot_be_told_apart_are_refused() {
    std::env::set_var("TZ", "UTC");
    let mut text = String::from("timestamp, utilization.gpu [%]\n");
    let mut ms = 0u64;
    for i in 0..300u64 {
        ms += if i % 5 == 0 || i % 7 == 0 { 250 } else { 2 };
        text.push_str(&format!(
            "2026/12/02 13:{:02}:{:02}.{:03}, 50 %\n",
            ms / 60_000,
            ms / 1000 % 60,
            ms % 1000
        ));
    }
    let e = read(text.as_bytes(), None).expect_err("ambiguous");
    assert!(e.contains("no GPU identity"), "{e}");
    assert!(e.contains("--query-gpu=timestamp,index,"), "{e}");
}

/// Any input under the first line of each format is read or refused, never a panic.
fn read_any(text: &[u8]) {
    let reader = Box::new(Cursor::new(text.to_vec()));
    if let Ok(mut src) = read_log(
        std::path::Path::new("mem.log"),
        reader,
        &LogOptions::default(),
    ) {
        while let Some(s) = src.next_sample() {
            for g in &s.gpus {
                assert!(g
                    .metrics
                    .util_gpu
                    .is_none_or(|u| (0.0..=100.0).contains(&u)));
            }
        }
        let _ = src.warnings();
    }
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

    #[test]
    fn garbled_lines_under_each_format_never_panic(
        first in prop_oneof![
            Just("# gpu   pwr gtemp mtemp    sm   mem   enc   dec  mclk  pclk"),
            Just("#Date       Time        gpu   pwr    sm"),
            Just("#Time        gpu    sm"),
            Just("#Entity   GPUTL     SMACT"),
            Just("Tue Oct 29 19:00:23 2024"),
            Just("timestamp, utilization.gpu [%]"),
        ],
        lines in proptest::collection::vec(
            prop_oneof![
                "[0-9 :.,%|/A-Za-z#\\[\\]-]{0,90}",
                Just("    0   250    45     -    92     1     0     0  2619  1980".to_string()),
                Just(" 20261202   23:59:59      0   250    92".to_string()),
                Just(" 23:59:59      1    92".to_string()),
                Just("GPU 0     95        0.5".to_string()),
                Just("|   0  NVIDIA H200                    On  |   00000000:4A:00.0 Off |      0 |".to_string()),
                Just("| N/A   53C    P0            305W /  700W |   11948MiB / 143771MiB |     93%      Default |".to_string()),
                Just("Tue Oct 29 19:00:24 2024".to_string()),
                Just("2026/12/02 13:00:00.000, 50 %".to_string()),
            ],
            0..60,
        )
    ) {
        let mut text = format!("{first}\n");
        for l in &lines {
            text.push_str(l);
            text.push('\n');
        }
        read_any(text.as_bytes());
    }
}
