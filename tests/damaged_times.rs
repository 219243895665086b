//! Damaged files through the readers, the engine and the detector: real recordings and
//! nvidia-smi logs from `tests/data` with times overwritten (one digit changed, `1e308`), lines
//! swapped, cut, doubled or mangled. Every file ends in a report or an error, never a panic or an
//! abort; what was dropped is told in a bounded number of warnings; memory stays bounded (an
//! allocator here counts the peak) and so does time.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use gpulse::analyze::{analyze_path, Report};
use gpulse::detector::signal::analyse;
use gpulse::detector::DetectorConfig;
use proptest::prelude::*;

/// The system allocator, counting the bytes held now and the most held since the last reset.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged to the system allocator.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = HELD.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The most memory one analysis of these files may take above what was held before it (a
/// damaged time once made one take 3.9 GB, another ask for 320 GB).
const MAX_PEAK: usize = 256 << 20;
/// The longest one analysis may take (they take well under a second).
const MAX_TIME: Duration = Duration::from_secs(30);
/// The most warnings one file may give, however damaged.
const MAX_WARNINGS: usize = 40;

/// One measurement at a time: the peak is the whole process's.
static SERIAL: Mutex<()> = Mutex::new(());

/// `f`'s result and the most memory it held above what was held before.
fn measured<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = HELD.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let out = f();
    (out, PEAK.load(Ordering::Relaxed).saturating_sub(before))
}

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

/// A recording of a loader-starved job with dips (the detector's period search runs on it).
const STARVED: &str = "h200/resnet50-batch-128-loader-3-workers-25ms-per-sample";

/// The lines of a job's recording, decompressed.
fn recording_lines(job: &str) -> Vec<String> {
    let file = std::fs::File::open(data(job).join("recording.ndjson.zst")).expect("recording");
    let mut text = String::new();
    zstd::Decoder::new(file)
        .expect("zstd")
        .read_to_string(&mut text)
        .expect("read");
    text.lines().map(str::to_string).collect()
}

fn starved_lines() -> &'static [String] {
    static LINES: OnceLock<Vec<String>> = OnceLock::new();
    LINES.get_or_init(|| recording_lines(STARVED))
}

fn starved_csv() -> &'static [u8] {
    static CSV: OnceLock<Vec<u8>> = OnceLock::new();
    CSV.get_or_init(|| std::fs::read(data(STARVED).join("nvidia-smi.csv")).expect("csv"))
}

/// Analyse `bytes` as a file named `name`, checking the bounds every analysis must keep.
fn analyse_bytes(name: &str, bytes: &[u8]) -> Result<Report, String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).expect("write");
    let started = Instant::now();
    let (report, peak) = measured(|| analyze_path(&path, None, &DetectorConfig::default()));
    let took = started.elapsed();
    assert!(
        peak < MAX_PEAK,
        "{name}: {} MiB held at the peak",
        peak >> 20
    );
    assert!(took < MAX_TIME, "{name}: took {took:?}");
    let report = report.map_err(|e| e.to_string())?;
    assert!(
        report.warnings.len() <= MAX_WARNINGS,
        "{name}: {} warnings",
        report.warnings.len()
    );
    for w in &report.warnings {
        assert!(!w.chars().any(char::is_control), "{w:?}");
    }
    Ok(report)
}

/// Line `line` (0-based, the header is 0) with the time of its `which`-th driver window (or,
/// with `None`, of the tick itself) replaced by `value`.
fn with_time(lines: &[String], line: usize, which: Option<usize>, value: &str) -> Vec<u8> {
    let mut out = lines.to_vec();
    let l = &out[line];
    let at = match which {
        None => l.find("{\"t\":").expect("a tick time") + 5,
        Some(k) => {
            let starts: Vec<usize> = l.match_indices("{\"t\":").map(|(i, _)| i + 5).collect();
            // The tick's own time is the first; its windows follow.
            starts[1..][k.min(starts.len() - 2)]
        }
    };
    let end = at + l[at..].find([',', '}']).expect("end of the number");
    out[line] = format!("{}{value}{}", &l[..at], &l[end..]);
    out.join("\n").into_bytes()
}

fn undamaged_samples() -> u64 {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    analyse_bytes("clean.ndjson", starved_lines().join("\n").as_bytes())
        .expect("the clean recording")
        .samples
}

#[test]
fn a_damaged_window_time_is_dropped_with_a_warning_and_nothing_else_lost() {
    let all = undamaged_samples();
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lines = starved_lines();
    let with_windows: Vec<usize> = (1..lines.len())
        .filter(|i| lines[*i].matches("{\"t\":").count() > 1)
        .collect();
    let n = with_windows.len();
    for value in ["1e308", "1e20", "9796407939", "1896407939", "0", "-5"] {
        for line in [with_windows[1], with_windows[n / 2], with_windows[n - 2]] {
            let bytes = with_time(lines, line, Some(usize::MAX), value);
            let report = analyse_bytes("window.ndjson", &bytes).expect("a report");
            assert_eq!(report.samples, all, "{value} at line {}", line + 1);
            let w = report.warnings.join("\n");
            assert!(
                w.contains("dropped 1 utilization window(s)")
                    && w.contains(&format!("line {}", line + 1)),
                "{value} at line {}: {w}",
                line + 1
            );
        }
    }
}

#[test]
fn a_damaged_tick_time_loses_that_tick_only() {
    let all = undamaged_samples();
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lines = starved_lines();
    for value in ["1e308", "9796407939", "1896407939"] {
        for line in [1, 40, lines.len() - 2] {
            let bytes = with_time(lines, line, None, value);
            let report = analyse_bytes("tick.ndjson", &bytes).expect("a report");
            assert_eq!(report.samples, all - 1, "{value} at line {}", line + 1);
            let w = report.warnings.join("\n");
            assert!(
                w.contains("dropped 1 tick(s) whose time jumped"),
                "{value} at line {}: {w}",
                line + 1
            );
        }
    }
}

#[test]
fn a_damaged_timestamp_in_an_nvidia_smi_log_loses_that_row_only() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let text = String::from_utf8(starved_csv().to_vec()).expect("utf-8");
    let all = analyse_bytes("clean.csv", text.as_bytes())
        .expect("the clean log")
        .samples;
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    // The year of one row's timestamp set 110 years ahead.
    let row = lines.len() / 2;
    lines[row] = lines[row].replacen("2026/", "2136/", 1);
    let report = analyse_bytes("damaged.csv", lines.join("\n").as_bytes()).expect("a report");
    assert_eq!(report.samples, all - 1);
    let w = report.warnings.join("\n");
    assert!(w.contains("dropped 1 tick(s) whose time jumped"), "{w}");
}

/// The utilization windows `(t, percent)` of a stretch of the starved job: dips, so the
/// detector's period search runs.
fn starved_windows() -> (Vec<f64>, Vec<f32>) {
    let (mut ts, mut us) = (Vec::new(), Vec::new());
    for line in &starved_lines()[1..] {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        for w in v["gpus"][0]["util_windows"]
            .as_array()
            .into_iter()
            .flatten()
        {
            ts.push(w["t"].as_f64().expect("t"));
            us.push(w["util"].as_f64().expect("util") as f32);
        }
    }
    (ts, us)
}

#[test]
fn the_detector_sizes_nothing_from_a_window_span() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (ts, us) = starved_windows();
    let cfg = DetectorConfig::default();
    let clean = analyse(&ts, &us, &cfg);
    assert!(clean.spacing_s.is_some(), "the stretch has dips to search");
    for far in [1e308, 1e20, 9_796_407_939.0, 1_896_407_939.0] {
        let mut damaged = ts.clone();
        *damaged.last_mut().expect("windows") = far;
        let (a, peak) = measured(|| analyse(&damaged, &us, &cfg));
        assert!(peak < MAX_PEAK, "{far}: {} MiB", peak >> 20);
        assert_eq!(a.n, ts.len());
    }
}

/// One change to a file's bytes.
#[derive(Debug, Clone)]
enum Mutation {
    /// The `k`-th number of the file replaced by this text.
    Number(usize, &'static str),
    /// One digit of the `k`-th number changed.
    Digit(usize, u8),
    /// Lines `a` and `b` swapped.
    Swap(usize, usize),
    /// Line `a` written twice.
    Double(usize),
    /// Line `a` left out.
    Drop(usize),
    /// The byte at `a` set to `b`.
    Byte(usize, u8),
    /// The file cut at `a`.
    Cut(usize),
}

const NUMBERS: [&str; 10] = [
    "1e308",
    "-1e308",
    "1e20",
    "9796407939",
    "1896407939",
    "0",
    "-5",
    "4294967296",
    "18446744073709551615",
    "0.0000001",
];

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), prop::sample::select(&NUMBERS[..])).prop_map(|(k, n)| Mutation::Number(k, n)),
        3 => (any::<usize>(), b'0'..=b'9').prop_map(|(k, d)| Mutation::Digit(k, d)),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::Swap(a, b)),
        1 => any::<usize>().prop_map(Mutation::Double),
        1 => any::<usize>().prop_map(Mutation::Drop),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(a, b)| Mutation::Byte(a, b)),
        1 => any::<usize>().prop_map(Mutation::Cut),
    ]
}

/// Where the numbers of `text` are: (start, end) byte ranges of digit runs with their sign,
/// point and exponent.
fn numbers(text: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        if text[i].is_ascii_digit() {
            let start = if i > 0 && text[i - 1] == b'-' {
                i - 1
            } else {
                i
            };
            let mut end = i;
            while end < text.len() && (text[end].is_ascii_digit() || b".eE+-".contains(&text[end]))
            {
                end += 1;
            }
            out.push((start, end));
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

/// `bytes` with its `k`-th number (counted round) replaced by `new` of it.
fn with_number(mut bytes: Vec<u8>, k: usize, new: impl Fn(&[u8]) -> Vec<u8>) -> Vec<u8> {
    let nums = numbers(&bytes);
    if nums.is_empty() {
        return bytes;
    }
    let (start, end) = nums[k % nums.len()];
    let replacement = new(&bytes[start..end]);
    bytes.splice(start..end, replacement);
    bytes
}

fn apply(mut bytes: Vec<u8>, m: &Mutation) -> Vec<u8> {
    let lines =
        |b: &[u8]| -> Vec<Vec<u8>> { b.split(|c| *c == b'\n').map(<[u8]>::to_vec).collect() };
    match *m {
        Mutation::Number(k, text) => with_number(bytes, k, |_| text.as_bytes().to_vec()),
        Mutation::Digit(k, d) => with_number(bytes, k, |old| {
            let mut n = old.to_vec();
            let digits: Vec<usize> = (0..n.len()).filter(|i| n[*i].is_ascii_digit()).collect();
            n[digits[k % digits.len()]] = d;
            n
        }),
        Mutation::Swap(a, b) => {
            let mut l = lines(&bytes);
            let n = l.len();
            l.swap(a % n, b % n);
            l.join(&b'\n')
        }
        Mutation::Double(a) => {
            let mut l = lines(&bytes);
            let i = a % l.len();
            l.insert(i, l[i].clone());
            l.join(&b'\n')
        }
        Mutation::Drop(a) => {
            let mut l = lines(&bytes);
            if l.len() > 2 {
                // Not the header: a file without one is refused, which other tests cover.
                l.remove(1 + a % (l.len() - 1));
            }
            l.join(&b'\n')
        }
        Mutation::Byte(a, b) if !bytes.is_empty() => {
            let n = bytes.len();
            bytes[a % n] = b;
            bytes
        }
        Mutation::Cut(a) if !bytes.is_empty() => {
            let n = bytes.len();
            bytes.truncate(a % n);
            bytes
        }
        _ => bytes,
    }
}

proptest! {
    // Each case reads a whole real file through the engine: a few dozen keep the suite fast.
    #![proptest_config(ProptestConfig { cases: 40, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mutated_recordings_and_logs_end_in_a_report_or_an_error(
        csv in any::<bool>(),
        mutations in prop::collection::vec(mutation(), 1..5),
    ) {
        let (name, clean) = if csv {
            ("log.csv", starved_csv().to_vec())
        } else {
            ("rec.ndjson", starved_lines().join("\n").into_bytes())
        };
        let bytes = mutations.iter().fold(clean, apply);
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        // Either outcome is fine; what matters is reaching it within the bounds checked inside.
        let _ = analyse_bytes(name, &bytes);
    }

    #[test]
    fn mutated_window_times_keep_the_detector_bounded(
        at in prop::collection::vec((any::<usize>(), -1e12f64..1e12), 1..4),
        far in prop::sample::select(vec![1e308, -1e308, 1e20, 9_796_407_939.0]),
        last in any::<bool>(),
    ) {
        let (mut ts, us) = starved_windows();
        let n = ts.len();
        for (i, v) in &at {
            ts[i % n] = *v;
        }
        // The window's span runs from its first time to its last: one of them is far off.
        if last {
            ts[n - 1] = far;
        } else {
            ts[0] = -far;
        }
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let (a, peak) = measured(|| analyse(&ts, &us, &DetectorConfig::default()));
        prop_assert!(peak < MAX_PEAK, "{} MiB", peak >> 20);
        prop_assert_eq!(a.n, n);
    }
}
