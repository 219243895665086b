//! A stand-in `libnvidia-ml.so.1` (`tests/fixtures/nvml/fake_nvml.c`), built with the C compiler
//! Rust links with and loaded through the same dlopen as the real library.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Build the fake library as `DIR/libnvidia-ml.so.1`.
pub fn build(dir: &Path) -> PathBuf {
    let src = super::fixture("nvml/fake_nvml.c");
    let out = dir.join("libnvidia-ml.so.1");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let status = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .unwrap_or_else(|e| panic!("the C compiler '{cc}' is needed to build the fake NVML: {e}"));
    assert!(status.success(), "building {} failed", src.display());
    out
}
