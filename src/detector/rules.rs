//! The rules: from one window of signals to candidate findings, with the evidence and the fix.

use std::collections::BTreeMap;

use super::signal::Analysis;
use super::DetectorConfig;
use crate::model::{throttle, DeviceInfo, Evidence, FindingKind, Severity, UnixTime};

/// A finding one evaluation supports; the hysteresis in [`super::Detector`] decides whether it is raised.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub kind: FindingKind,
    pub severity: Severity,
    /// When the pattern began, as far as this evaluation can tell.
    pub start: UnixTime,
    pub evidence: Evidence,
    pub summary: Summary,
}

impl Candidate {
    /// Starvation over a provisional period: three deep, evenly spaced dips, the newest just
    /// begun. It is raised at its first evaluation: the next evaluations see the same dip starts
    /// until the next dip begins, so waiting for them only delays it.
    pub fn provisional_period(&self) -> bool {
        matches!(
            self.summary,
            Summary::InputStarvation {
                provisional: true,
                ..
            }
        )
    }
}

/// The numbers of a candidate's one-line summary. The text ([`Summary::text`]) is formatted only
/// when a finding is raised or its numbers change, not at every evaluation.
#[derive(Debug, Clone, PartialEq)]
pub enum Summary {
    PeriodicStall {
        dip_s: f64,
        period_s: f64,
        lost: f64,
        cycles: usize,
    },
    InputStarvation {
        dip_s: f64,
        period_s: f64,
        lost: f64,
        confidence: f64,
        cycles: usize,
        /// Over fewer cycles than a period needs (see [`Candidate::provisional_period`]).
        provisional: bool,
        /// Over enough cycles to report the period (see [`CONFIRM_CYCLES`]); until then the
        /// stalls are named without it.
        confirmed: bool,
        /// Waits in each cycle (two where workers deliver out of step).
        waits: u32,
    },
    ErraticStalls {
        stalls: usize,
        span_s: f64,
        sub_second: bool,
        lost: f64,
    },
    TransferBound {
        rx: f64,
        link: f64,
        util: f64,
    },
    HostBound {
        util: f64,
        sm: Option<f64>,
    },
    BusyButIdle {
        util: f64,
        sm: Option<f64>,
        /// Power and its limit, when SM activity is not read.
        power: (f64, f64),
    },
    MemoryIdle {
        share: f64,
        used: u64,
        util: f64,
    },
    MemoryPressure {
        share: f64,
    },
    Throttled {
        bits: u64,
        share: f64,
    },
    PcieDegraded {
        link: (u32, u32),
        max: (u32, u32),
    },
    SingleGpuBusy {
        idle_holding: usize,
    },
    Imbalance {
        util: f64,
        busiest: f64,
    },
}

impl Summary {
    /// The summary in words.
    pub fn text(&self) -> String {
        match *self {
            Summary::PeriodicStall {
                dip_s,
                period_s,
                lost,
                cycles,
            } => format!(
                "pauses of ~{dip_s:.1} s every {period_s:.0} s, {} of time lost ({cycles} cycles)",
                pct(lost)
            ),
            Summary::InputStarvation {
                dip_s,
                period_s,
                lost,
                confidence,
                cycles,
                provisional: _,
                confirmed,
                waits,
            } => {
                let waits = if waits > 1 {
                    format!(" in {waits} waits")
                } else {
                    String::new()
                };
                let (lost, faster) = (pct(lost), 1.0 / (1.0 - lost).max(0.02));
                let confidence = confidence_word(confidence);
                if confirmed {
                    format!(
                        "idle ~{dip_s:.1} s every {period_s:.1} s{waits}, {lost} of time lost, up to {faster:.1}× faster if fixed (confidence {confidence}, {cycles} cycles)"
                    )
                } else {
                    format!(
                        "idle ~{dip_s:.1} s a cycle{waits}, {cycles} cycles so far, {lost} of time lost, up to {faster:.1}× faster if fixed (confidence {confidence}, period not yet confirmed)"
                    )
                }
            }
            Summary::ErraticStalls {
                stalls,
                span_s,
                sub_second,
                lost,
            } => format!(
                "{stalls} stalls in {span_s:.0} s with no regular period{}, {} of time lost",
                if sub_second {
                    " (stalls shorter than 1 s)"
                } else {
                    ""
                },
                pct(lost)
            ),
            Summary::TransferBound { rx, link, util } => format!(
                "host-to-device copies at {:.1} GB/s ({} of the link) while the GPU is {util:.0}% busy",
                rx / 1e9,
                pct(rx / link)
            ),
            Summary::HostBound { util, sm } => {
                let mut why = format!("flat plateau at ~{util:.0}% utilization");
                if let Some(sm) = sm {
                    why.push_str(&format!(", SM activity only {sm:.1}%"));
                }
                format!("{why}: the GPU waits on the host between small kernels")
            }
            Summary::BusyButIdle {
                util,
                sm,
                power: (p, lim),
            } => {
                let what = match sm {
                    Some(sm) => format!("SM activity only {sm:.0}%"),
                    None => format!("power only {p:.0} W of {lim:.0} W"),
                };
                format!("utilization reads {util:.0}% but {what}")
            }
            Summary::MemoryIdle { share, used, util } => format!(
                "{} of memory ({:.1} GiB) held while utilization is ~{util:.0}%",
                pct(share),
                used as f64 / (1u64 << 30) as f64
            ),
            Summary::MemoryPressure { share } => {
                format!("memory {} full and still rising", pct(share))
            }
            Summary::Throttled { bits, share } => format!(
                "{} while busy ({} of busy time)",
                throttle::words(bits & throttle::SERIOUS).join(", "),
                pct(share)
            ),
            Summary::PcieDegraded {
                link: (g, w),
                max: (gm, wm),
            } => format!("PCIe link at Gen{g} x{w} while busy (maximum Gen{gm} x{wm})"),
            Summary::SingleGpuBusy { idle_holding } => format!(
                "only this GPU works; {idle_holding} other GPU(s) hold memory and sit idle"
            ),
            Summary::Imbalance { util, busiest } => {
                format!("mean utilization {util:.0}% against {busiest:.0}% on the busiest GPU")
            }
        }
    }
}

/// The classic fix for each kind.
pub fn advice(kind: FindingKind) -> &'static str {
    match kind {
        FindingKind::InputStarvation => "more DataLoader workers (num_workers), pin_memory=True, persistent_workers=True, prefetch_factor, faster storage or decoding",
        FindingKind::ErraticStalls => "per-step input waits: more DataLoader workers, pin_memory=True, persistent_workers=True, prefetch; look for a slow sample source",
        FindingKind::HostBound => "larger batch, avoid per-step .item()/.cpu() syncs, CUDA graphs or torch.compile, fewer tiny kernels",
        FindingKind::PeriodicStall => "checkpoint, eval or logging cadence: checkpoint asynchronously or less often; not a DataLoader problem",
        FindingKind::BusyButIdle => "utilization overstates the work: tiny or single-block kernels, spin-waits; if it stays flat for minutes, check for a hang",
        FindingKind::TransferBound => "pinned memory (pin_memory=True, non_blocking=True), fewer and larger copies, move preprocessing onto the GPU",
        FindingKind::MemoryIdle => "a process holds GPU memory but computes nothing: free it or end the idle process (notebook kernels often do this)",
        FindingKind::MemoryPressure => "close to out of memory: smaller batch, gradient accumulation, mixed precision (AMP), activation checkpointing",
        FindingKind::Throttled => "the hardware is slowing the GPU down: check cooling, airflow, power delivery and the power limit",
        FindingKind::PcieDegraded => "the PCIe link runs below its maximum while busy: reseat the card, check the slot or riser and the BIOS PCIe settings",
        FindingKind::SingleGpuBusy => "one GPU works while others hold memory and wait: DataParallel → DistributedDataParallel, check device placement",
        FindingKind::Imbalance => "GPUs of one job differ in load: a straggler rank, uneven data sharding, or one GPU doing extra work (logging, eval)",
        FindingKind::Idle | FindingKind::Healthy => "",
    }
}

/// Readings of the recent ticks, reduced to what the rules need.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TickSummary {
    pub ticks: usize,
    pub util_mean: Option<f64>,
    pub sm_mean: Option<f64>,
    pub power_mean: Option<f64>,
    pub power_limit: Option<f64>,
    pub rx_mean: Option<f64>,
    pub mem_used_first: Option<u64>,
    pub mem_used_last: Option<u64>,
    pub mem_total: Option<u64>,
    pub busy_ticks: usize,
    /// Busy ticks with a serious throttle reason, and the reasons seen.
    pub throttled_ticks: usize,
    pub throttle_bits: u64,
    /// Busy ticks with the PCIe link below its maximum, and the lowest gen/width seen.
    pub degraded_ticks: usize,
    pub link_seen: Option<(u32, u32)>,
    pub link_current: Option<(u32, u32)>,
    /// The last tick on which no process held a context on the GPU (memory in use below
    /// [`NO_CONTEXT_BYTES`]), and the first tick of that stretch without one (see
    /// [`TickSummary::of_the_current_job`]).
    pub no_context_at: Option<UnixTime>,
    pub context_lost_at: Option<UnixTime>,
    /// Since when the memory in use has stayed at its latest reading (within [`MEM_STEADY_SHARE`]
    /// or [`MEM_STEADY_BYTES`]): within the ticks summarised, or, steady over all of them, since
    /// it settled in the detector's longer memory of the GPU; `None` without memory readings.
    pub mem_steady_since: Option<UnixTime>,
}

/// Memory in use within this share of its latest reading, or this many bytes, is steady. A job
/// starting up moves it by GiBs (H200: model load, then cuDNN trying algorithms: 1.6 → 12 → 3.4 →
/// 13.6 GiB over 15 s, with blips of 1–15% utilization between); a job waiting for its input
/// holds the same MiB for minutes.
pub const MEM_STEADY_SHARE: f64 = 0.05;

pub const MEM_STEADY_BYTES: u64 = 256 << 20;

/// How far memory in use may move from `bytes` and still be steady (see [`MEM_STEADY_SHARE`]).
pub fn mem_steady_band(bytes: u64) -> u64 {
    MEM_STEADY_BYTES.max((MEM_STEADY_SHARE * bytes as f64) as u64)
}

/// Seconds after its job's context went during which a pattern's evidence still counts: a
/// pattern seen as the job ended is named (H200 run 2: an eval cadence's fourth cycle began
/// 0.75 s before the job was stopped), then ends.
const JOB_END_GRACE_S: f64 = 1.0;

impl TickSummary {
    /// Whether a pattern whose first and last cycles (or stalls) began at `first` and `last`
    /// belongs to the job on the GPU now. A pattern belongs to one job: when the GPU had no
    /// context after its first cycle, the cycles before were an ended job's, and it goes on only
    /// with `n` of its cycles (`spacing` apart) after that (the same job started again), not with
    /// the next job's start-up blips. (Without this a 13 s loader's finding outlived its job by
    /// 37 s on the H200: two blips of the next job's start-up, 13 s apart, kept it going.)
    pub fn of_the_current_job(
        &self,
        first: UnixTime,
        last: UnixTime,
        spacing: f64,
        n: usize,
        now: UnixTime,
    ) -> bool {
        let Some(gone) = self.no_context_at.filter(|&t| t >= first) else {
            return true;
        };
        let just_ended = gone >= now - 0.5 * spacing.min(1.0)
            && self
                .context_lost_at
                .is_some_and(|l| now - l <= JOB_END_GRACE_S);
        just_ended || last - gone >= n.saturating_sub(1) as f64 * spacing
    }
}

/// Memory in use below this means that no process holds a context on the GPU: an H200 without
/// one reads 0 MiB, a CUDA context alone takes hundreds of MiB and a PyTorch job GiBs.
pub const NO_CONTEXT_BYTES: u64 = 128 << 20;

/// PCIe bandwidth per lane per direction, bytes/s, by generation.
pub fn lane_bytes_per_s(gen: u32) -> f64 {
    match gen {
        1 => 0.25e9,
        2 => 0.5e9,
        3 => 0.985e9,
        4 => 1.969e9,
        5 => 3.938e9,
        6 => 7.563e9,
        _ => 0.0,
    }
}

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// The most confidence a provisional period (fewer than `min_cycles` cycles) is given: `low`.
const PROVISIONAL_CONFIDENCE: f64 = 0.35;

/// Cycles before a starvation finding reports its period (or [`CONFIRM_SPAN_S`] of them). Until
/// then the stalls are named, with their idle time and lost share, but the period is not
/// reported (`period_s` absent): random stalls (a Poisson stream, 2.5 s apart on average) fall
/// evenly spaced for three to five stalls by chance in about one run in ten, which is all the
/// evidence a loader's first cycles give (the 15 s bound needs those named); eight (six at high
/// confidence) evenly spaced by chance came in 0.7% of 6,000 synthetic runs (docs/DETECTOR.md,
/// "Unconfirmed periods").
pub const CONFIRM_CYCLES: usize = 8;
/// Seconds of evenly spaced cycles that confirm a period however few they are (a 7 s loader's
/// six cycles).
pub const CONFIRM_SPAN_S: f64 = 40.0;
/// Cycles that confirm a period found with at least [`CONFIRM_CONFIDENCE`] (`high`): four at
/// high confidence still came by chance, six did not.
pub const CONFIRM_CYCLES_CONFIDENT: usize = 6;
pub const CONFIRM_CONFIDENCE: f64 = 0.7;

fn confidence_word(c: f64) -> &'static str {
    if c >= 0.7 {
        "high"
    } else if c >= 0.4 {
        "medium"
    } else {
        "low"
    }
}

/// Stalls named already (erratic stalls or input starvation raised) stay named while the stall
/// count over this many rules windows meets the count that named them: random stalls come in
/// sparse spells (H200 run 12: 11 s between two stalls of a job stalling every ~3 s on average
/// cleared the finding, and it was raised again 19 s later).
pub const NAMED_STALLS_WINDOWS: f64 = 2.0;

/// Rules over one GPU's util window and tick summary. `stalls_named`: erratic stalls or input
/// starvation is raised on this GPU (see [`NAMED_STALLS_WINDOWS`]).
pub fn per_gpu(
    cfg: &DetectorConfig,
    dev: Option<&DeviceInfo>,
    a: &Analysis,
    s: &TickSummary,
    now: UnixTime,
    stalls_named: bool,
) -> Vec<Candidate> {
    let mut out = Vec::new();
    let window_start = now - a.span_s;
    // Rules over the tick summary and the recent readings judge the last `rules_window_s`: their
    // findings begin there, not with the whole window.
    let recent_start = window_start.max(now - cfg.rules_window_s);
    let enough = a.span_s >= cfg.min_span_s;
    let busy = a.busy_level >= cfg.idle_util;
    let mut starving = false;
    if enough && busy {
        // A period measured a little under the minimum is the minimum within the sampling error.
        if let Some(p) = a.period.filter(|p| {
            p.period_s >= 0.9 * cfg.min_period_s
                && p.ongoing_at(now)
                && s.of_the_current_job(
                    p.first_start,
                    p.last_start,
                    p.period_s,
                    cfg.min_cycles,
                    now,
                )
        }) {
            let l = a.lost_fraction;
            let conf = (p.acf.clamp(0.0, 1.0) * 0.6
                + (p.cycles as f64 / 8.0).min(1.0) * 0.25
                + p.regularity * 0.15)
                .min(if p.provisional {
                    PROVISIONAL_CONFIDENCE
                } else {
                    1.0
                });
            // A starvation period is reported once confirmed; a periodic stall's is its finding.
            let confirmed = !p.provisional
                && (p.cycles >= CONFIRM_CYCLES
                    || p.cycles as f64 * p.period_s >= CONFIRM_SPAN_S
                    || (p.cycles >= CONFIRM_CYCLES_CONFIDENT && conf >= CONFIRM_CONFIDENCE));
            let mut ev = Evidence {
                period_s: Some(p.period_s),
                dip_s: a.dip_s,
                lost_fraction: Some(l),
                speedup_bound: Some(1.0 / (1.0 - l).max(0.02)),
                confidence: Some(conf),
                cycles: Some(p.cycles as u32),
                ..Default::default()
            };
            ev.signals.insert("busy_level".into(), a.busy_level);
            // Several waits to a cycle: the idle time of the whole cycle.
            let dip = if p.dips_per_cycle > 1 {
                p.period_s * l
            } else {
                a.dip_s.unwrap_or(p.period_s * l)
            };
            if p.dips_per_cycle > 1 {
                ev.dip_s = Some(dip);
                ev.signals
                    .insert("waits_per_cycle".into(), p.dips_per_cycle as f64);
            }
            if p.period_s >= cfg.stall_min_period_s && l < cfg.cadence_max_lost {
                if l >= cfg.stall_min_lost {
                    out.push(Candidate {
                        kind: FindingKind::PeriodicStall,
                        severity: if l >= 0.1 {
                            Severity::Warn
                        } else {
                            Severity::Info
                        },
                        start: p.first_start,
                        summary: Summary::PeriodicStall {
                            dip_s: dip,
                            period_s: p.period_s,
                            lost: l,
                            cycles: p.cycles,
                        },
                        evidence: ev,
                    });
                }
            } else if l >= cfg.starvation_min_lost {
                starving = true;
                if !confirmed {
                    ev.period_s = None;
                }
                out.push(Candidate {
                    kind: FindingKind::InputStarvation,
                    severity: if l >= cfg.high_lost && !p.provisional {
                        Severity::High
                    } else {
                        Severity::Warn
                    },
                    start: p.first_start,
                    summary: Summary::InputStarvation {
                        dip_s: dip,
                        period_s: p.period_s,
                        lost: l,
                        confidence: conf,
                        cycles: p.cycles,
                        provisional: p.provisional,
                        confirmed,
                        waits: p.dips_per_cycle,
                    },
                    evidence: ev,
                });
            }
        }
        // The dips whose start is known (no list built: read where needed).
        let stalls = || a.dips.iter().filter(|d| !d.open_start);
        let short = a.dip_s.is_some_and(|d| d <= cfg.long_gap_s);
        let gap_limit = a.spacing_s.map_or(5.0, |sp| (3.0 * sp).max(5.0));
        let stalls_span = if stalls_named {
            NAMED_STALLS_WINDOWS * cfg.rules_window_s
        } else {
            cfg.rules_window_s
        };
        let recent = match (stalls().next(), stalls().next_back()) {
            (Some(first), Some(last)) => {
                now - last.start <= gap_limit
                    && s.of_the_current_job(
                        first.start,
                        last.start,
                        a.spacing_s.unwrap_or(1.0),
                        cfg.erratic_min_dips,
                        now,
                    )
            }
            _ => false,
        } && stalls()
            .filter(|d| {
                now - d.start <= stalls_span && s.mem_steady_since.is_none_or(|t| d.start >= t)
            })
            .count()
            >= cfg.erratic_min_dips;
        if out.is_empty()
            && recent
            && a.period
                .is_none_or(|p| p.period_s < 0.9 * cfg.min_period_s || !p.ongoing_at(now))
            && stalls().count() >= cfg.erratic_min_dips
            && short
            && a.lost_fraction >= cfg.erratic_min_lost
        {
            let sub_second = a.too_fast
                || a.period
                    .is_some_and(|p| p.period_s < 0.9 * cfg.min_period_s)
                || a.dip_s.is_some_and(|d| d < 1.0)
                || a.spacing_s.is_some_and(|s| s < cfg.min_period_s);
            let l = a.lost_fraction;
            let mut ev = Evidence {
                dip_s: a.dip_s,
                lost_fraction: Some(l),
                speedup_bound: Some(1.0 / (1.0 - l).max(0.02)),
                ..Default::default()
            };
            let n_stalls = stalls().count();
            ev.signals.insert("stalls".into(), n_stalls as f64);
            ev.signals.insert("busy_level".into(), a.busy_level);
            starving = true;
            out.push(Candidate {
                kind: FindingKind::ErraticStalls,
                severity: if l >= cfg.high_lost {
                    Severity::High
                } else {
                    Severity::Warn
                },
                start: stalls().next().map(|d| d.start).unwrap_or(window_start),
                summary: Summary::ErraticStalls {
                    stalls: n_stalls,
                    span_s: a.span_s,
                    sub_second,
                    lost: l,
                },
                evidence: ev,
            });
        }
    }
    let link_bw = link_bandwidth(dev, s);
    let transfer = match (s.rx_mean, link_bw, s.util_mean) {
        (Some(rx), Some(bw), Some(u)) if bw > 0.0 => {
            rx / bw >= cfg.transfer_link_share && u < cfg.plateau_max_util
        }
        _ => false,
    };
    if enough && transfer {
        let (rx, bw) = (s.rx_mean.unwrap_or(0.0), link_bw.unwrap_or(1.0));
        let mut ev = Evidence::default();
        ev.signals.insert("pcie_rx_bytes_per_s".into(), rx);
        ev.signals.insert("link_bytes_per_s".into(), bw);
        ev.signals
            .insert("util_gpu".into(), s.util_mean.unwrap_or(0.0));
        out.push(Candidate {
            kind: FindingKind::TransferBound,
            severity: Severity::Warn,
            start: recent_start,
            summary: Summary::TransferBound {
                rx,
                link: bw,
                util: s.util_mean.unwrap_or(0.0),
            },
            evidence: ev,
        });
    }
    let flat = a.recent_p10 >= cfg.idle_util
        && a.recent_p90 < cfg.plateau_max_util
        && a.recent_p10 >= cfg.plateau_flatness * a.recent_p90;
    let total = s.mem_total.or(dev.and_then(|d| d.memory_total_bytes));
    let mem_share = s
        .mem_used_last
        .zip(total.filter(|t| *t > 0))
        .map(|(u, t)| u as f64 / t as f64);
    let computes_nothing =
        a.recent_mean < cfg.idle_util || s.sm_mean.is_some_and(|sm| sm < cfg.memory_idle_sm);
    let memory_idle =
        enough && computes_nothing && mem_share.is_some_and(|m| m >= cfg.memory_idle_share);
    if enough && flat && !starving && !transfer && !memory_idle {
        let mut ev = Evidence::default();
        ev.signals.insert("util_gpu".into(), a.recent_mean);
        if let Some(sm) = s.sm_mean {
            ev.signals.insert("sm_active".into(), sm);
        }
        out.push(Candidate {
            kind: FindingKind::HostBound,
            severity: Severity::Warn,
            start: recent_start,
            summary: Summary::HostBound {
                util: a.recent_mean,
                sm: s.sm_mean,
            },
            evidence: ev,
        });
    }
    if let Some(u) = s.util_mean.filter(|u| *u >= cfg.busy_util && enough) {
        let sm_low = s.sm_mean.filter(|sm| *sm < cfg.busy_but_idle_sm);
        let power_low = match (
            s.power_mean,
            s.power_limit.or(dev.and_then(|d| d.power_limit_watts)),
        ) {
            (Some(p), Some(lim)) if lim > 0.0 && p < cfg.busy_but_idle_power_share * lim => {
                Some((p, lim))
            }
            _ => None,
        };
        if sm_low.is_some() || (s.sm_mean.is_none() && power_low.is_some()) {
            let mut ev = Evidence::default();
            ev.signals.insert("util_gpu".into(), u);
            let power = power_low.unwrap_or((0.0, 1.0));
            if let Some(sm) = sm_low {
                ev.signals.insert("sm_active".into(), sm);
            } else {
                ev.signals.insert("power_w".into(), power.0);
                ev.signals.insert("power_limit_w".into(), power.1);
            }
            out.push(Candidate {
                kind: FindingKind::BusyButIdle,
                severity: Severity::Warn,
                start: recent_start,
                summary: Summary::BusyButIdle {
                    util: u,
                    sm: sm_low,
                    power,
                },
                evidence: ev,
            });
        }
    }
    if let (Some(used), Some(share)) = (s.mem_used_last, mem_share) {
        if memory_idle {
            let mut ev = Evidence::default();
            ev.signals.insert("memory_used_share".into(), share);
            ev.signals.insert("util_gpu".into(), a.recent_mean);
            out.push(Candidate {
                kind: FindingKind::MemoryIdle,
                severity: Severity::Warn,
                start: recent_start,
                summary: Summary::MemoryIdle {
                    share,
                    used,
                    util: a.recent_mean,
                },
                evidence: ev,
            });
        }
        let rising = s.mem_used_first.is_some_and(|f| used > f);
        if share >= cfg.memory_pressure_share && rising {
            let mut ev = Evidence::default();
            ev.signals.insert("memory_used_share".into(), share);
            out.push(Candidate {
                kind: FindingKind::MemoryPressure,
                severity: Severity::High,
                start: now,
                summary: Summary::MemoryPressure { share },
                evidence: ev,
            });
        }
    }
    if s.busy_ticks >= cfg.min_busy_ticks && s.throttled_ticks as f64 >= 0.5 * s.busy_ticks as f64 {
        let mut ev = Evidence::default();
        ev.signals
            .insert("throttle_bits".into(), s.throttle_bits as f64);
        ev.notes = throttle::words(s.throttle_bits & throttle::SERIOUS)
            .into_iter()
            .map(String::from)
            .collect();
        out.push(Candidate {
            kind: FindingKind::Throttled,
            severity: Severity::High,
            start: recent_start,
            summary: Summary::Throttled {
                bits: s.throttle_bits,
                share: s.throttled_ticks as f64 / s.busy_ticks as f64,
            },
            evidence: ev,
        });
    }
    if s.busy_ticks >= cfg.min_busy_ticks && s.degraded_ticks as f64 >= 0.8 * s.busy_ticks as f64 {
        let (g, w) = s.link_seen.unwrap_or((0, 0));
        let mut ev = Evidence::default();
        ev.signals.insert("pcie_gen".into(), g as f64);
        ev.signals.insert("pcie_width".into(), w as f64);
        let (gm, wm) = (
            dev.and_then(|d| d.pcie_gen_max).unwrap_or(g),
            dev.and_then(|d| d.pcie_width_max).unwrap_or(w),
        );
        out.push(Candidate {
            kind: FindingKind::PcieDegraded,
            severity: Severity::Warn,
            start: recent_start,
            summary: Summary::PcieDegraded {
                link: (g, w),
                max: (gm, wm),
            },
            evidence: ev,
        });
    }
    out
}

fn link_bandwidth(dev: Option<&DeviceInfo>, s: &TickSummary) -> Option<f64> {
    let gen = dev
        .and_then(|d| d.pcie_gen_max)
        .or(s.link_current.map(|l| l.0))?;
    let width = dev
        .and_then(|d| d.pcie_width_max)
        .or(s.link_current.map(|l| l.1))?;
    Some(lane_bytes_per_s(gen) * width as f64)
}

/// Rules across the GPUs of a host: `means[i]` is GPU i's mean utilization over the window
/// (`None` without data), `holds_memory[i]` whether it holds a context's worth of memory.
pub fn cross_gpu(
    cfg: &DetectorConfig,
    means: &[Option<f64>],
    holds_memory: &[bool],
    explained: &[bool],
    now: UnixTime,
    window_s: f64,
) -> Vec<(usize, Candidate)> {
    let mut out = Vec::new();
    if means.len() < 2 {
        return out;
    }
    let busy: Vec<usize> = (0..means.len())
        .filter(|&i| means[i].is_some_and(|m| m >= cfg.busy_util * 0.5))
        .collect();
    let idle_holding: Vec<usize> = (0..means.len())
        .filter(|&i| means[i].is_some_and(|m| m < cfg.idle_util) && holds_memory[i])
        .collect();
    if busy.len() == 1 && idle_holding.len() + 1 == means.len() {
        let i = busy[0];
        let mut ev = Evidence::default();
        ev.signals
            .insert("idle_gpus_holding_memory".into(), idle_holding.len() as f64);
        out.push((
            i,
            Candidate {
                kind: FindingKind::SingleGpuBusy,
                severity: Severity::Warn,
                start: now - window_s,
                summary: Summary::SingleGpuBusy {
                    idle_holding: idle_holding.len(),
                },
                evidence: ev,
            },
        ));
    }
    let active: Vec<(usize, f64)> = (0..means.len())
        .filter_map(|i| {
            means[i]
                .filter(|m| *m >= cfg.idle_util * 4.0)
                .map(|m| (i, m))
        })
        .collect();
    if active.len() >= 2 {
        let top = active.iter().map(|x| x.1).fold(f64::MIN, f64::max);
        for &(i, m) in &active {
            if top - m > cfg.imbalance_points && !explained[i] {
                let mut signals = BTreeMap::new();
                signals.insert("util_gpu".into(), m);
                signals.insert("busiest_util_gpu".into(), top);
                out.push((
                    i,
                    Candidate {
                        kind: FindingKind::Imbalance,
                        severity: Severity::Warn,
                        start: now - window_s,
                        summary: Summary::Imbalance {
                            util: m,
                            busiest: top,
                        },
                        evidence: Evidence {
                            signals,
                            ..Default::default()
                        },
                    },
                ));
            }
        }
    }
    out
}
