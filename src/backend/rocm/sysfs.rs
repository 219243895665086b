//! The fast source: the amdgpu driver's sysfs files, read directly every tick (a few small reads).
//!
//! Files under `<root>/class/drm/cardN/device/` (the root is `/sys` normally and a fixture tree in
//! tests): `gpu_busy_percent`, `mem_busy_percent`, `mem_info_vram_used`/`_total`, `pp_dpm_sclk`/
//! `pp_dpm_mclk` (the current level is marked `*`), the PCIe link files, `uevent` (`PCI_SLOT_NAME`),
//! and the hwmon directory: `power1_average` or `power1_input` and `power1_cap` (µW), `temp1_input`
//! (edge) / `temp2_input` (junction) / `temp3_input` (memory) in m°C, labelled by `tempN_label`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::smi_parse::{normalize_bus_id, pcie_gen_from_gts};

/// AMD's PCI vendor id.
pub const AMD_VENDOR: &str = "0x1002";

/// One AMD GPU found in sysfs.
#[derive(Debug, Clone, PartialEq)]
pub struct SysfsCard {
    /// The DRM card number (`card1` → 1).
    pub card: u32,
    /// `<root>/class/drm/cardN/device`.
    pub device_dir: PathBuf,
    /// `<device_dir>/hwmon/hwmonM`, if the driver exposes one.
    pub hwmon_dir: Option<PathBuf>,
    /// Normalised PCI bus id (`0000:03:00.0`).
    pub bus_id: Option<String>,
    /// The edge, junction and memory temperature inputs, resolved once from their labels.
    pub temp_inputs: [Option<PathBuf>; 3],
}

/// Facts read once.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SysfsStatic {
    pub name: Option<String>,
    pub device_id: Option<String>,
    pub vram_total_bytes: Option<u64>,
    pub power_cap_w: Option<f64>,
    pub power_cap_default_w: Option<f64>,
    pub power_cap_max_w: Option<f64>,
    pub sclk_max_mhz: Option<u32>,
    pub mclk_max_mhz: Option<u32>,
    pub pcie_gen_max: Option<u32>,
    pub pcie_width_max: Option<u32>,
    pub has_fan: Option<bool>,
}

/// Readings of one tick; every one optional.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SysfsReading {
    pub util_gpu: Option<f64>,
    pub util_mem: Option<f64>,
    pub vram_used_bytes: Option<u64>,
    pub vram_total_bytes: Option<u64>,
    pub power_w: Option<f64>,
    pub power_cap_w: Option<f64>,
    pub temp_edge_c: Option<f64>,
    pub temp_junction_c: Option<f64>,
    pub temp_mem_c: Option<f64>,
    pub sclk_mhz: Option<u32>,
    pub mclk_mhz: Option<u32>,
    pub pcie_gen: Option<u32>,
    pub pcie_width: Option<u32>,
    pub fan_pct: Option<u32>,
    /// hwmon `energy1_input` (µJ, a counter), where the driver exposes it, in joules.
    pub energy_j: Option<f64>,
}

fn read_trim(p: &Path) -> Option<String> {
    fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

fn read_u64(p: &Path) -> Option<u64> {
    read_trim(p)?.parse().ok()
}

fn read_f64(p: &Path) -> Option<f64> {
    read_trim(p)?.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// `cardN` (not a connector such as `card0-DP-1`) → N.
fn card_number(name: &str) -> Option<u32> {
    name.strip_prefix("card")?.parse().ok()
}

/// Every AMD GPU under `<root>/class/drm`: vendor 0x1002 with a `gpu_busy_percent` file, by card
/// number. An unreadable or missing directory is no GPUs.
pub fn find_cards(root: &Path) -> Vec<SysfsCard> {
    let drm = root.join("class/drm");
    let Ok(entries) = fs::read_dir(&drm) else {
        return Vec::new();
    };
    let mut cards: Vec<SysfsCard> = entries
        .flatten()
        .filter_map(|e| {
            let card = card_number(&e.file_name().to_string_lossy())?;
            let device_dir = e.path().join("device");
            let vendor = read_trim(&device_dir.join("vendor"))?;
            if !vendor.eq_ignore_ascii_case(AMD_VENDOR)
                || !device_dir.join("gpu_busy_percent").exists()
            {
                return None;
            }
            // uevent's PCI_SLOT_NAME, else the name the `device` link points at (…/0000:03:00.0).
            let bus_id = read_trim(&device_dir.join("uevent"))
                .and_then(|u| {
                    u.lines()
                        .find_map(|l| l.strip_prefix("PCI_SLOT_NAME="))
                        .and_then(normalize_bus_id)
                })
                .or_else(|| {
                    fs::canonicalize(&device_dir)
                        .ok()?
                        .file_name()
                        .and_then(|n| normalize_bus_id(&n.to_string_lossy()))
                });
            let hwmon_dir = first_hwmon(&device_dir);
            let temp_inputs = hwmon_dir.as_deref().map_or([None, None, None], |h| {
                [
                    temperature_input(h, "edge", 1),
                    temperature_input(h, "junction", 2),
                    temperature_input(h, "mem", 3),
                ]
            });
            Some(SysfsCard {
                card,
                device_dir,
                hwmon_dir,
                bus_id,
                temp_inputs,
            })
        })
        .collect();
    cards.sort_by_key(|c| c.card);
    cards
}

fn first_hwmon(device_dir: &Path) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(device_dir.join("hwmon"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("hwmon"))
        })
        .collect();
    dirs.sort();
    dirs.into_iter().next()
}

/// A DPM table (`0: 500Mhz\n1: 2000Mhz *`): (current level's MHz, highest MHz).
pub fn parse_dpm(text: &str) -> (Option<u32>, Option<u32>) {
    let mut current = None;
    let mut max = None;
    for line in text.lines() {
        let Some((_, rest)) = line.split_once(':') else {
            continue;
        };
        let digits: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        let Ok(v) = digits.parse::<u32>() else {
            continue;
        };
        max = Some(max.map_or(v, |m: u32| m.max(v)));
        if rest.trim_end().ends_with('*') {
            current = Some(v);
        }
    }
    (current, max)
}

/// `16.0 GT/s PCIe` → PCIe generation 4.
pub fn parse_link_speed(text: &str) -> Option<u32> {
    let num: String = text
        .trim()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    pcie_gen_from_gts(num.parse().ok()?)
}

/// The input of the sensor labelled `label` (`edge`, `junction`, `mem`); without any labels, the
/// sensor at its usual index.
fn temperature_input(hwmon: &Path, label: &str, default_index: u32) -> Option<PathBuf> {
    let labelled = (1..=8)
        .find(|i| read_trim(&hwmon.join(format!("temp{i}_label"))).is_some_and(|l| l == label));
    let index = match labelled {
        Some(i) => i,
        None if hwmon.join("temp1_label").exists() => return None,
        None => default_index,
    };
    Some(hwmon.join(format!("temp{index}_input")))
}

fn micro_watts(p: &Path) -> Option<f64> {
    read_f64(p).filter(|v| *v >= 0.0).map(|v| v / 1e6)
}

fn milli_celsius(p: &Path) -> Option<f64> {
    read_f64(p).map(|v| v / 1000.0)
}

fn percent(p: &Path) -> Option<f64> {
    read_f64(p).filter(|v| (0.0..=100.0).contains(v))
}

impl SysfsCard {
    /// Whether the device directory still exists (a GPU that fell off the bus loses it).
    pub fn present(&self) -> bool {
        self.device_dir.join("gpu_busy_percent").exists()
    }

    fn hwmon(&self, file: &str) -> Option<PathBuf> {
        self.hwmon_dir.as_ref().map(|h| h.join(file))
    }

    fn temperature(&self, which: usize) -> Option<f64> {
        self.temp_inputs
            .get(which)?
            .as_deref()
            .and_then(milli_celsius)
    }

    pub fn read_static(&self) -> SysfsStatic {
        let d = &self.device_dir;
        let (_, sclk_max) = read_trim(&d.join("pp_dpm_sclk"))
            .map(|t| parse_dpm(&t))
            .unwrap_or((None, None));
        let (_, mclk_max) = read_trim(&d.join("pp_dpm_mclk"))
            .map(|t| parse_dpm(&t))
            .unwrap_or((None, None));
        SysfsStatic {
            name: read_trim(&d.join("product_name")).filter(|s| !s.is_empty()),
            device_id: read_trim(&d.join("device")),
            vram_total_bytes: read_u64(&d.join("mem_info_vram_total")),
            power_cap_w: self.hwmon("power1_cap").and_then(|p| micro_watts(&p)),
            power_cap_default_w: self
                .hwmon("power1_cap_default")
                .and_then(|p| micro_watts(&p)),
            power_cap_max_w: self.hwmon("power1_cap_max").and_then(|p| micro_watts(&p)),
            sclk_max_mhz: sclk_max,
            mclk_max_mhz: mclk_max,
            pcie_gen_max: read_trim(&d.join("max_link_speed")).and_then(|s| parse_link_speed(&s)),
            pcie_width_max: read_trim(&d.join("max_link_width")).and_then(|s| s.parse().ok()),
            has_fan: self
                .hwmon_dir
                .as_ref()
                .map(|h| h.join("fan1_input").exists()),
        }
    }

    /// Read every fast metric now. `Err` only when the device directory itself is gone.
    pub fn read(&self) -> io::Result<SysfsReading> {
        let d = &self.device_dir;
        // The one read that tells a vanished GPU from a missing metric.
        let busy = fs::read_to_string(d.join("gpu_busy_percent"));
        let util_gpu = match busy {
            Ok(s) => s
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|v| (0.0..=100.0).contains(v)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(e),
            Err(_) => None,
        };
        let (sclk, _) = read_trim(&d.join("pp_dpm_sclk"))
            .map(|t| parse_dpm(&t))
            .unwrap_or((None, None));
        let (mclk, _) = read_trim(&d.join("pp_dpm_mclk"))
            .map(|t| parse_dpm(&t))
            .unwrap_or((None, None));
        let power_w = self
            .hwmon("power1_average")
            .and_then(|p| micro_watts(&p))
            .or_else(|| self.hwmon("power1_input").and_then(|p| micro_watts(&p)));
        let fan_pct = match (
            self.hwmon("pwm1").and_then(|p| read_f64(&p)),
            self.hwmon("pwm1_max").and_then(|p| read_f64(&p)),
        ) {
            (Some(v), Some(max)) if max > 0.0 && v >= 0.0 => {
                Some((v / max * 100.0).round().min(100.0) as u32)
            }
            _ => None,
        };
        Ok(SysfsReading {
            util_gpu,
            util_mem: percent(&d.join("mem_busy_percent")),
            vram_used_bytes: read_u64(&d.join("mem_info_vram_used")),
            vram_total_bytes: read_u64(&d.join("mem_info_vram_total")),
            power_w,
            power_cap_w: self.hwmon("power1_cap").and_then(|p| micro_watts(&p)),
            temp_edge_c: self.temperature(0),
            temp_junction_c: self.temperature(1),
            temp_mem_c: self.temperature(2),
            sclk_mhz: sclk,
            mclk_mhz: mclk,
            pcie_gen: read_trim(&d.join("current_link_speed")).and_then(|s| parse_link_speed(&s)),
            pcie_width: read_trim(&d.join("current_link_width")).and_then(|s| s.parse().ok()),
            fan_pct,
            energy_j: self
                .hwmon("energy1_input")
                .and_then(|p| read_f64(&p))
                .filter(|v| *v >= 0.0)
                .map(|uj| uj / 1e6),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dpm_tables() {
        assert_eq!(
            parse_dpm("0: 500Mhz\n1: 1200Mhz *\n2: 2100Mhz\n"),
            (Some(1200), Some(2100))
        );
        assert_eq!(parse_dpm("0: 96Mhz\n"), (None, Some(96)));
        assert_eq!(parse_dpm(""), (None, None));
    }

    #[test]
    fn link_speeds() {
        assert_eq!(parse_link_speed("16.0 GT/s PCIe"), Some(4));
        assert_eq!(parse_link_speed("2.5 GT/s PCIe"), Some(1));
        assert_eq!(parse_link_speed("32.0 GT/s PCIe"), Some(5));
        assert_eq!(parse_link_speed("Unknown"), None);
    }
}
