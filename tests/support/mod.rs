//! What the integration tests share: the library items they use ([`api`]), the labelled H200
//! recordings under `tests/data` ([`labels`], [`traces`], [`detector`]), the real binary
//! ([`cli`]), servers and HTTP on loopback ([`net`]), JSON Schema checks ([`schema`]), screens
//! drawn to text ([`screen`]), a tmux server per test ([`tmux`]) and the stand-in NVML library
//! ([`fake_nvml`]). Each test binary uses only part of it.
#![allow(dead_code, unused_imports)]

pub mod api;
pub mod cli;
pub mod detector;
pub mod fake_nvml;
pub mod labels;
pub mod net;
pub mod schema;
pub mod screen;
pub mod tmux;
pub mod traces;

use std::path::{Path, PathBuf};

/// A path inside the repository.
pub fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// A file under `tests/fixtures`.
pub fn fixture(rel: &str) -> PathBuf {
    repo("tests/fixtures").join(rel)
}
