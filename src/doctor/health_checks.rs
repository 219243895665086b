//! Per-GPU health checks from the health counters: XIDs, ECC mode and corrected errors, link
//! errors (PCIe replays, NVLink), and the time the clock event counters held the clocks since
//! the driver loaded. Uncorrectable errors and row remaps are the memory errors check's.

use super::facts::GpuFacts;
use super::{Check, Status};
use crate::model::{xid_info, GpuHealth, ThrottleReason};

/// Every health check of one GPU, in the order the report lists them.
pub fn health_checks(g: &GpuFacts) -> Vec<Check> {
    let n = |what: &str| format!("GPU {} {what}", g.index);
    vec![
        xid_check(g, &n("XIDs")),
        ecc_check(g.health.as_ref(), &n("ECC")),
        link_errors_check(g.health.as_ref(), &n("link errors")),
        throttle_time_check(g.health.as_ref(), &n("throttle time")),
    ]
}

const NO_HEALTH: &str = "this source reports no health counters";

/// XIDs seen while doctor ran, with their meaning and fix; earlier ones are not kept by the
/// driver's event API, so where none came doctor says where to look.
fn xid_check(g: &GpuFacts, name: &str) -> Check {
    if let Some(x) = g.xids.last() {
        let info = xid_info(x.xid);
        return Check::new(
            name,
            Status::Fail,
            format!("XID {} while doctor ran: {}", x.xid, info.meaning),
        )
        .advise(info.action.text());
    }
    if g.health.is_none() {
        return Check::new(name, Status::NotApplicable, NO_HEALTH);
    }
    Check::new(
        name,
        Status::Unknown,
        "none while doctor ran; the driver does not keep the XIDs before it",
    )
    .advise("look for earlier ones in the kernel log: `sudo dmesg -T | grep -i xid` (or `journalctl -k | grep -i xid`); `gpulse serve` and the dashboard watch them from their start")
}

fn ecc_check(h: Option<&GpuHealth>, name: &str) -> Check {
    let Some(h) = h else {
        return Check::new(name, Status::NotApplicable, NO_HEALTH);
    };
    match (h.ecc_enabled, h.ecc.volatile_corrected) {
        (None, _) => Check::new(name, Status::NotApplicable, "this GPU has no ECC"),
        (Some(false), _) => Check::new(name, Status::Warn, "off: memory errors go undetected")
            .advise("turn it on where results must be right: `sudo nvidia-smi -e 1`, then reboot"),
        (Some(true), corrected) => {
            let life = h
                .ecc
                .aggregate_corrected
                .map(|a| format!(" ({a} over the GPU's life)"))
                .unwrap_or_default();
            let now = corrected.map_or("corrected errors not counted".to_string(), |c| {
                format!("{c} corrected error(s) since the driver loaded{life}")
            });
            Check::new(name, Status::Ok, format!("on; {now}"))
        }
    }
}

/// PCIe replays and NVLink links down or counting errors.
fn link_errors_check(h: Option<&GpuHealth>, name: &str) -> Check {
    let Some(h) = h else {
        return Check::new(name, Status::NotApplicable, NO_HEALTH);
    };
    let down: Vec<String> = h
        .nvlinks
        .iter()
        .filter(|l| l.active == Some(false))
        .map(|l| l.link.to_string())
        .collect();
    let mut found = Vec::new();
    if let Some(r) = h.pcie_replays {
        found.push(format!("{r} PCIe replay(s) since the driver loaded"));
    }
    if !h.nvlinks.is_empty() {
        let errors = h
            .nvlink_errors()
            .map_or(String::new(), |e| format!(", {e} errors"));
        found.push(format!(
            "NVLink {}/{} up{errors}",
            h.nvlinks.len() - down.len(),
            h.nvlinks.len()
        ));
    }
    if found.is_empty() {
        return Check::new(
            name,
            Status::NotApplicable,
            "PCIe replays and NVLink are not reported by this GPU",
        );
    }
    let text = found.join("; ");
    if !down.is_empty() {
        Check::new(name, Status::Fail, format!("{text}: link(s) {} down", down.join(", ")))
            .advise("reset the GPU and check its NVLink bridge or baseboard; if a link stays down, RMA the GPU")
    } else if h.pcie_replays.is_some_and(|r| r > 0) || h.nvlink_errors().is_some_and(|e| e > 0) {
        Check::new(name, Status::Warn, text)
            .advise("the link retries packets: reseat the card, check the slot or riser; counts that keep rising point to a failing link")
    } else {
        Check::new(name, Status::Ok, text)
    }
}

/// The time each serious clock event reason held the clocks since the driver loaded.
fn throttle_time_check(h: Option<&GpuHealth>, name: &str) -> Check {
    let Some(h) = h.filter(|h| !h.throttle_ns.is_empty()) else {
        return Check::new(
            name,
            Status::NotApplicable,
            "the driver keeps no clock event counters for this GPU",
        );
    };
    let held: Vec<String> = ThrottleReason::ALL
        .into_iter()
        .filter(|r| r.serious())
        .filter_map(|r| {
            let ns = h.throttle_ns.get(r).filter(|ns| *ns > 0)?;
            Some(format!("{} {}", r.words(), duration(ns)))
        })
        .collect();
    let cap = h
        .throttle_ns
        .get(ThrottleReason::SwPowerCap)
        .map(|ns| format!("; power cap {}", duration(ns)))
        .unwrap_or_default();
    if held.is_empty() {
        return Check::new(
            name,
            Status::Ok,
            format!("no slowdown counted since the driver loaded{cap}"),
        );
    }
    Check::new(
        name,
        Status::Warn,
        format!("since the driver loaded: {}{cap}", held.join(", ")),
    )
    .advise("the hardware slowed the GPU (heat or power delivery): check cooling and power cables; `nvidia-smi -q -d PERFORMANCE` shows the same counters")
}

/// Nanoseconds in the largest unit that keeps the number readable.
fn duration(ns: u64) -> String {
    let s = ns as f64 / 1e9;
    if s < 1.0 {
        format!("{:.0} ms", s * 1000.0)
    } else if s < 120.0 {
        format!("{s:.1} s")
    } else if s < 7200.0 {
        format!("{:.1} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{EccCounts, NvLinkHealth, ThrottleCounters, XidEvent};

    fn facts(health: Option<GpuHealth>, xids: Vec<XidEvent>) -> GpuFacts {
        GpuFacts {
            index: 1,
            health,
            xids,
            ..Default::default()
        }
    }

    fn find(c: &[Check], what: &str) -> Check {
        c.iter().find(|c| c.name.ends_with(what)).cloned().unwrap()
    }

    #[test]
    fn a_clean_gpu_passes_and_says_where_earlier_xids_are() {
        let mut throttle_ns = ThrottleCounters::default();
        throttle_ns.set(ThrottleReason::SwPowerCap, Some(180_000_000_000));
        throttle_ns.set(ThrottleReason::HwThermal, Some(0));
        let h = GpuHealth {
            ecc_enabled: Some(true),
            ecc: EccCounts {
                volatile_corrected: Some(0),
                aggregate_corrected: Some(2),
                ..Default::default()
            },
            pcie_replays: Some(0),
            throttle_ns,
            ..Default::default()
        };
        let c = health_checks(&facts(Some(h), Vec::new()));
        let xid = find(&c, "XIDs");
        assert_eq!(xid.status, Status::Unknown);
        assert!(xid.advice.contains("dmesg"), "{}", xid.advice);
        assert_eq!(find(&c, "ECC").status, Status::Ok);
        assert!(find(&c, "ECC").found.contains("(2 over the GPU's life)"));
        assert_eq!(
            find(&c, "link errors").found,
            "0 PCIe replay(s) since the driver loaded"
        );
        let t = find(&c, "throttle time");
        assert_eq!(t.status, Status::Ok);
        assert!(t.found.contains("power cap 3.0 min"), "{}", t.found);
    }

    #[test]
    fn an_xid_a_link_down_and_slowdown_time_are_reported_with_the_fix() {
        let mut throttle_ns = ThrottleCounters::default();
        throttle_ns.set(ThrottleReason::HwThermal, Some(42_000_000_000));
        let link = |link, active| NvLinkHealth {
            link,
            active: Some(active),
            replay_errors: Some(0),
            ..Default::default()
        };
        let h = GpuHealth {
            pcie_replays: Some(3),
            nvlinks: vec![link(0, true), link(1, false)],
            throttle_ns,
            ..Default::default()
        };
        let c = health_checks(&facts(Some(h), vec![XidEvent { t: 1.0, xid: 79 }]));
        let xid = find(&c, "XIDs");
        assert_eq!(xid.status, Status::Fail);
        assert!(xid.found.contains("fallen off the bus"), "{}", xid.found);
        assert!(xid.advice.contains("drain the node"), "{}", xid.advice);
        let links = find(&c, "link errors");
        assert_eq!(links.status, Status::Fail);
        assert!(
            links
                .found
                .contains("NVLink 1/2 up, 0 errors: link(s) 1 down"),
            "{}",
            links.found
        );
        let t = find(&c, "throttle time");
        assert_eq!(t.status, Status::Warn);
        assert!(t.found.contains("HW thermal 42.0 s"), "{}", t.found);
        // No health from the source: not applicable, never "0 errors".
        let none = health_checks(&facts(None, Vec::new()));
        assert!(
            none.iter().all(|c| c.status == Status::NotApplicable),
            "{none:?}"
        );
    }
}
