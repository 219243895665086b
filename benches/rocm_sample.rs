//! What the AMD backend costs: one sysfs tick per GPU, one rocm-smi answer parsed, one subprocess
//! round trip to a stand-in rocm-smi. Prints numbers; run with `cargo bench --bench rocm_sample`.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use gpulse::backend::rocm::smi_parse::{parse_amd_smi_metric, parse_rocm_smi};
use gpulse::backend::rocm::smi_runner;
use gpulse::backend::rocm::{RocmBackend, RocmOptions};
use gpulse::backend::Backend;

fn per_call(label: &str, n: u32, mut f: impl FnMut()) {
    for _ in 0..n.min(100) {
        f();
    }
    let start = Instant::now();
    for _ in 0..n {
        f();
    }
    let each = start.elapsed() / n;
    println!(
        "{label:<52} {:>10.1} µs/call  ({n} calls)",
        each.as_secs_f64() * 1e6
    );
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let fixtures = root.join("tests/fixtures/rocm");
    let mut backend = RocmBackend::open(RocmOptions {
        sysfs_root: root.join("tests/fixtures/sysfs/two-mi100"),
        path: fixtures.join("bin/ok").into_os_string(),
        smi_period: Duration::from_secs(3600),
        smi_timeout: Duration::from_secs(5),
        stale_after: Duration::from_secs(3600),
    })
    .expect("fixture backend");
    let mut devs = backend.take_devices();
    per_call("sysfs + merge, one GPU, one tick", 20_000, || {
        black_box(devs[0].sample(1.0).ok());
    });

    let rocm =
        std::fs::read_to_string(fixtures.join("rocm-smi-6.0.2-mi100.json")).expect("fixture");
    per_call("parse rocm-smi 6.0.2 answer (2 GPUs)", 20_000, || {
        black_box(parse_rocm_smi(&rocm).ok());
    });
    let amd = std::fs::read_to_string(fixtures.join("amd-smi-6.4-metric-gpu_data.json"))
        .expect("fixture");
    per_call("parse amd-smi 6.4 metric answer (2 GPUs)", 20_000, || {
        black_box(parse_amd_smi_metric(&amd).ok());
    });

    let path = fixtures.join("bin/ok").into_os_string();
    let tool = smi_runner::find_tool(&path).expect("stand-in");
    per_call("spawn stand-in rocm-smi + read + parse", 50, || {
        black_box(smi_runner::query(&tool, &path, Duration::from_secs(5)).ok());
    });
}
