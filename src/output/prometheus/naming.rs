//! Which of dcgm-exporter's names the exporter writes.
//!
//! dcgm-exporter 4.9 (with DCGM 4.7) renamed its default fields to DCGM's new field names and
//! changed some units (clocks in Hz, energy in J, utilization as a 0–1 ratio, total memory in
//! bytes); 4.10 renamed the PCIe and NVLink profiling fields (`..._BYTES_PER_SECOND`). gpulse
//! writes the names dashboards built for dcgm-exporter up to 4.8 query (`legacy`, the default),
//! or the names of 4.10 and later (`current`). `gpulse fleet` reads both.

use serde::{Deserialize, Serialize};

/// The set of metric names the exporter writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum DcgmNames {
    /// dcgm-exporter's names up to 4.8 (`DCGM_FI_DEV_GPU_UTIL` in %, clocks in MHz, ...).
    #[default]
    Legacy,
    /// dcgm-exporter's names from 4.10 (`DCGM_FI_DEV_GPU_UTIL_RATIO`, `..._HERTZ`, ...).
    Current,
}

impl DcgmNames {
    pub fn as_str(self) -> &'static str {
        match self {
            DcgmNames::Legacy => "legacy",
            DcgmNames::Current => "current",
        }
    }
}
