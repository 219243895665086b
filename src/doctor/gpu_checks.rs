//! Per-GPU checks: modes, limits, link, errors, temperature, other users.

use super::facts::GpuFacts;
use super::{Check, GpuObservation, Status};
use crate::model::throttle;

/// A GPU counts as busy (link at full speed, throttling meaningful) above this utilization.
const BUSY_UTIL: f64 = 50.0;

/// Every check of the busiest GPU, in the order the report lists them.
pub fn gpu_checks(o: &GpuObservation, simulated: bool) -> Vec<Check> {
    let g = &o.busiest;
    let n = |what: &str| format!("GPU {} {what}", g.index);
    let sim = if simulated { " (simulated)" } else { "" };
    vec![
        persistence_check(g, &n("persistence mode"), sim),
        power_check(g, &n("power limit")),
        throttle_check(o, &n("throttling")),
        pcie_check(o, &n("PCIe link")),
        compute_mode_check(g, &n("compute mode"), sim),
        tensor_formats_check(g, &n("bf16")),
        mig_check(g, &n("MIG"), sim),
        memory_errors_check(g, &n("memory errors"), sim),
        temperature_check(g, &n("temperature")),
        other_users_check(g, &n("other users")),
    ]
}

/// Persistence mode: off means every CUDA program pays the driver's start-up when no other holds
/// the GPU.
fn persistence_check(g: &GpuFacts, name: &str, sim: &str) -> Check {
    match g.persistence {
        Some(true) => Check::new(name, Status::Ok, format!("on{sim}")),
        Some(false) => Check::new(name, Status::Warn, "off: every CUDA program pays the driver's start-up (seconds) when no other holds the GPU")
            .advise("an administrator enables it: `sudo nvidia-smi -pm 1`, or better the nvidia-persistenced service (`sudo systemctl enable --now nvidia-persistenced`)"),
        None => Check::new(name, Status::Unknown, "could not be read"),
    }
}

/// Compute mode: Prohibited lets no program in, an exclusive mode only one process.
fn compute_mode_check(g: &GpuFacts, name: &str, sim: &str) -> Check {
    match g.compute_mode.as_deref() {
        Some("Default") => Check::new(name, Status::Ok, format!("Default (shared){sim}")),
        Some("Prohibited") => Check::new(name, Status::Fail, "Prohibited: no CUDA program can use this GPU")
            .advise("an administrator sets it back: `sudo nvidia-smi -i N -c DEFAULT`"),
        Some(m) => Check::new(name, Status::Warn, format!("{m}: only one process may hold a context"))
            .advise("intended on shared clusters; a second process (e.g. a second job or DDP rank on the same GPU) will fail to start"),
        None => Check::new(name, Status::Unknown, "could not be read"),
    }
}

/// MIG mode, now and after the next reset: on means a job sees only its slice of the GPU.
fn mig_check(g: &GpuFacts, name: &str, sim: &str) -> Check {
    match g.mig {
        None => Check::new(name, Status::NotApplicable, "this GPU has no MIG mode"),
        Some((false, false)) => Check::new(name, Status::Ok, format!("off{sim}")),
        Some((true, _)) => Check::new(name, Status::Warn, "on: the GPU is split into instances; a job sees only its slice")
            .advise("intended? gpulse and most tools report the whole GPU; list instances with `nvidia-smi mig -lgi`"),
        Some((false, true)) => Check::new(name, Status::Warn, "off now, on after the next GPU reset")
            .advise("a pending MIG change takes effect at reset"),
    }
}

/// Temperature against the slowdown threshold: at or above it fails, within 10 °C warns.
fn temperature_check(g: &GpuFacts, name: &str) -> Check {
    match (g.temp_c, g.temp_slowdown_c) {
        (Some(t), Some(s)) if t >= s => Check::new(
            name,
            Status::Fail,
            format!("{t:.0} °C, at or above the slowdown threshold {s:.0} °C"),
        )
        .advise("the GPU slows itself down: check airflow, fans, the room's cooling"),
        (Some(t), Some(s)) if t >= s - 10.0 => Check::new(
            name,
            Status::Warn,
            format!("{t:.0} °C, within 10 °C of the slowdown threshold {s:.0} °C"),
        )
        .advise("check airflow and cooling before long runs"),
        (Some(t), Some(s)) => Check::new(
            name,
            Status::Ok,
            format!("{t:.0} °C (slowdown at {s:.0} °C)"),
        ),
        (Some(t), None) => Check::new(
            name,
            Status::Ok,
            format!("{t:.0} °C (slowdown threshold unknown)"),
        ),
        (None, _) => Check::new(name, Status::Unknown, "could not be read"),
    }
}

/// Processes of other users holding memory on the GPU (they share its memory and SMs).
fn other_users_check(g: &GpuFacts, name: &str) -> Check {
    let others: Vec<_> = g
        .processes
        .iter()
        .filter(|p| p.other_user == Some(true))
        .collect();
    if others.is_empty() {
        let unknown = g
            .processes
            .iter()
            .filter(|p| p.other_user.is_none())
            .count();
        if unknown > 0 {
            Check::new(
                name,
                Status::Unknown,
                format!("{unknown} process(es) whose owner could not be read (another container?)"),
            )
        } else {
            Check::new(
                name,
                Status::Ok,
                format!(
                    "no other user's process holds memory ({} process(es) in all)",
                    g.processes.len()
                ),
            )
        }
    } else {
        let mem: u64 = others.iter().filter_map(|p| p.memory_bytes).sum();
        let list: Vec<String> = others
            .iter()
            .map(|p| format!("PID {} (uid {})", p.pid, p.user.as_deref().unwrap_or("?")))
            .collect();
        Check::new(name, Status::Warn, format!("{} holds {:.1} GiB: {}", if others.len() == 1 { "another user's process" } else { "other users' processes" }, mem as f64 / (1u64 << 30) as f64, list.join(", ")))
            .advise("your job gets less memory and shares the SMs; ask them or pick another GPU (CUDA_VISIBLE_DEVICES)")
    }
}

/// Which precisions the GPU's tensor cores take: bf16 and TF32 from compute capability 8.0
/// (Ampere), fp16 from 7.0. A fact of the GPU, not of any job's precision.
fn tensor_formats_check(g: &GpuFacts, name: &str) -> Check {
    match g.compute_capability {
        Some((major, minor)) if major >= 8 => Check::new(
            name,
            Status::Ok,
            format!("supported (compute capability {major}.{minor}): tensor cores take bf16 and TF32"),
        ),
        Some((major, minor)) if major >= 7 => Check::new(
            name,
            Status::NotApplicable,
            format!("not supported (compute capability {major}.{minor}): tensor cores take fp16 only"),
        )
        .advise("mixed precision here is fp16 with a loss scaler (torch.autocast(device_type=\"cuda\", dtype=torch.float16) and torch.amp.GradScaler)"),
        Some((major, minor)) => Check::new(
            name,
            Status::NotApplicable,
            format!("not supported (compute capability {major}.{minor}): no tensor cores"),
        ),
        None => Check::new(name, Status::Unknown, "compute capability could not be read"),
    }
}

fn power_check(g: &GpuFacts, name: &str) -> Check {
    let Some(limit) = g.power_limit_w else {
        return Check::new(name, Status::Unknown, "could not be read");
    };
    let default = g.power_default_w;
    let max = g
        .power_max_w
        .map_or(String::new(), |m| format!(", max {m:.0} W"));
    match default {
        Some(d) if limit < d - 1.0 => Check::new(name, Status::Warn, format!("{limit:.0} W, below the default {d:.0} W{max}"))
            .advise("someone lowered it: the GPU will cap its clocks under load; an administrator restores it with `sudo nvidia-smi -i N -pl DEFAULT_WATTS`"),
        Some(d) => Check::new(name, Status::Ok, format!("{limit:.0} W (default {d:.0} W{max})")),
        None => Check::new(name, Status::Ok, format!("{limit:.0} W (default unknown{max})")),
    }
}

fn throttle_check(o: &GpuObservation, name: &str) -> Check {
    let Some(bits) = o.throttle_seen else {
        return Check::new(
            name,
            Status::Unknown,
            "clock event reasons could not be read",
        );
    };
    let when = match o.window_s {
        Some(s) => format!("during {s:.0} s under load"),
        None => "now".to_string(),
    };
    let words = throttle::words(bits);
    if bits & throttle::SERIOUS != 0 {
        Check::new(name, Status::Fail, format!("{when}: {}", words.join(", ")))
            .advise("the hardware is slowing the GPU (heat or power delivery): check cooling, power cables and `nvidia-smi -q -d PERFORMANCE`")
    } else if bits & throttle::SW_POWER_CAP != 0 {
        Check::new(name, Status::Warn, format!("{when}: {}", words.join(", ")))
            .advise("running at its power limit: normal under heavy load; if the limit was lowered, see the power limit check")
    } else if words.is_empty() {
        Check::new(name, Status::Ok, format!("{when}: none"))
    } else {
        Check::new(name, Status::Ok, format!("{when}: {}", words.join(", ")))
    }
}

fn pcie_check(o: &GpuObservation, name: &str) -> Check {
    let g = &o.busiest;
    let (Some(gen), Some(width)) = (g.pcie_gen, g.pcie_width) else {
        return Check::new(
            name,
            Status::Unknown,
            "link generation and width could not be read",
        );
    };
    let (Some(gmax), Some(wmax)) = (g.pcie_gen_max, g.pcie_width_max) else {
        return Check::new(
            name,
            Status::Ok,
            format!("Gen{gen} x{width} (maximum unknown)"),
        );
    };
    let found = format!("Gen{gen} x{width} of Gen{gmax} x{wmax}");
    if gen >= gmax && width >= wmax {
        return Check::new(name, Status::Ok, found);
    }
    let busy = g.util.is_some_and(|u| u >= BUSY_UTIL);
    if !busy {
        let util = g.util.map_or("unknown".to_string(), |u| format!("{u:.0}%"));
        return Check::new(
            name,
            Status::NotApplicable,
            format!("{found} while idle (utilization {util}): links train down at idle"),
        )
        .advise(
            "run `gpulse doctor --under-load 30` while your job runs to judge the link under load",
        );
    }
    let status = if width < wmax {
        Status::Fail
    } else {
        Status::Warn
    };
    Check::new(name, status, format!("{found} while busy ({:.0}% utilization)", g.util.unwrap_or(0.0)))
        .advise("the link runs below its maximum under load: reseat the card, check the slot, riser and BIOS PCIe settings")
}

fn memory_errors_check(g: &GpuFacts, name: &str, sim: &str) -> Check {
    if g.remap_failed == Some(true) {
        return Check::new(
            name,
            Status::Fail,
            "row remapping failed: the GPU's memory has errors it cannot repair",
        )
        .advise("the GPU needs service (RMA); stop using it for training");
    }
    let mut found = Vec::new();
    let mut bad = false;
    if let Some(e) = g.ecc_uncorrected {
        found.push(format!(
            "{e} uncorrected ECC error(s) since the driver loaded"
        ));
        bad |= e > 0;
    }
    if let Some(r) = g.remapped_uncorrectable {
        found.push(format!("{r} row(s) remapped for uncorrectable errors"));
    }
    if let Some(p) = g.retired_pages {
        found.push(format!("{p} retired page(s)"));
    }
    if g.remap_pending == Some(true) {
        found.push("a row remap is pending".to_string());
    }
    if found.is_empty() {
        return Check::new(
            name,
            Status::NotApplicable,
            "ECC and row remapping are not reported by this GPU",
        );
    }
    let text = format!("{}{sim}", found.join("; "));
    if bad {
        Check::new(name, Status::Fail, text)
            .advise("uncorrected errors crash or corrupt jobs: check `nvidia-smi -q -d ECC,ROW_REMAPPER`; reset the GPU and, if they return, have it serviced")
    } else if g.remap_pending == Some(true) {
        Check::new(name, Status::Warn, text)
            .advise("reset the GPU (or reboot) so the pending remap takes effect")
    } else {
        Check::new(name, Status::Ok, text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::facts::ProcessFacts;

    fn obs(g: GpuFacts) -> GpuObservation {
        GpuObservation {
            throttle_seen: g.throttle,
            busiest: g,
            readings: 1,
            window_s: None,
        }
    }

    fn find<'a>(c: &'a [Check], what: &str) -> &'a Check {
        c.iter().find(|c| c.name.ends_with(what)).unwrap()
    }

    #[test]
    fn bf16_is_told_from_the_compute_capability_and_never_from_a_job() {
        let check = |cc| {
            let g = GpuFacts {
                compute_capability: cc,
                ..Default::default()
            };
            let c = find(&gpu_checks(&obs(g), false), "bf16").clone();
            (c.status, c.found, c.advice)
        };
        let (status, found, _) = check(Some((9, 0)));
        assert_eq!(status, Status::Ok);
        assert!(
            found.contains("9.0") && found.contains("bf16 and TF32"),
            "{found}"
        );
        let (status, found, advice) = check(Some((7, 0)));
        assert_eq!(status, Status::NotApplicable);
        assert!(found.contains("fp16 only"), "{found}");
        assert!(advice.contains("GradScaler"), "{advice}");
        assert_eq!(check(None).0, Status::Unknown);
    }

    #[test]
    fn a_degraded_link_is_judged_only_when_busy() {
        let mut g = GpuFacts {
            pcie_gen: Some(1),
            pcie_width: Some(16),
            pcie_gen_max: Some(5),
            pcie_width_max: Some(16),
            util: Some(0.0),
            ..Default::default()
        };
        let c = gpu_checks(&obs(g.clone()), false);
        assert_eq!(find(&c, "PCIe link").status, Status::NotApplicable);
        assert!(find(&c, "PCIe link").advice.contains("--under-load"));
        g.util = Some(95.0);
        g.pcie_width = Some(8);
        let c = gpu_checks(&obs(g), false);
        assert_eq!(find(&c, "PCIe link").status, Status::Fail);
    }

    #[test]
    fn persistence_off_throttling_and_other_users_are_reported() {
        let g = GpuFacts {
            persistence: Some(false),
            throttle: Some(throttle::HW_THERMAL_SLOWDOWN | throttle::SW_POWER_CAP),
            temp_c: Some(88.0),
            temp_slowdown_c: Some(90.0),
            power_limit_w: Some(500.0),
            power_default_w: Some(700.0),
            processes: vec![ProcessFacts {
                pid: 7,
                user: Some("1001".into()),
                other_user: Some(true),
                memory_bytes: Some(40 << 30),
            }],
            ..Default::default()
        };
        let c = gpu_checks(&obs(g), false);
        assert_eq!(find(&c, "persistence mode").status, Status::Warn);
        assert!(find(&c, "persistence mode")
            .advice
            .contains("sudo nvidia-smi -pm 1"));
        assert_eq!(find(&c, "throttling").status, Status::Fail);
        assert!(find(&c, "throttling").found.contains("HW thermal"));
        assert_eq!(find(&c, "temperature").status, Status::Warn);
        assert_eq!(find(&c, "power limit").status, Status::Warn);
        assert!(find(&c, "other users").found.contains("40.0 GiB"));
        assert_eq!(find(&c, "MIG").status, Status::NotApplicable);
        assert_eq!(find(&c, "memory errors").status, Status::NotApplicable);
    }

    #[test]
    fn uncorrected_ecc_errors_fail() {
        let g = GpuFacts {
            ecc_uncorrected: Some(3),
            remapped_uncorrectable: Some(1),
            ..Default::default()
        };
        let c = gpu_checks(&obs(g), false);
        assert_eq!(find(&c, "memory errors").status, Status::Fail);
    }
}
