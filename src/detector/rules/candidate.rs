//! What a rule proposes: a candidate finding with its evidence, the numbers of its one-line
//! summary, and the classic fix for each kind.

use crate::model::{Evidence, FindingKind, Severity, UnixTime};

/// A finding one evaluation supports; the hysteresis decides whether it is raised.
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
    /// A candidate with `signals` as its only evidence.
    pub fn of_signals(
        kind: FindingKind,
        severity: Severity,
        start: UnixTime,
        signals: &[(&str, f64)],
        summary: Summary,
    ) -> Self {
        let mut evidence = Evidence::default();
        for (k, v) in signals {
            evidence.signals.insert((*k).to_string(), *v);
        }
        Candidate {
            kind,
            severity,
            start,
            evidence,
            summary,
        }
    }

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
        /// Over enough cycles to report the period; until then the stalls are named without it.
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
        /// Power and the reference it is compared with, when SM activity is not read.
        power: (f64, f64),
        /// The reference is the power limit (else the most the GPU drew when busy before).
        of_limit: bool,
    },
    MemoryIdle {
        share: f64,
        used: u64,
        util: f64,
    },
    MemoryPressure {
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
    /// Mean SM, tensor-core and DRAM activity (percent) of the ticks busy with compute.
    TensorCoresIdle {
        sm: f64,
        tensor: f64,
        dram: f64,
    },
    /// The share of busy time each clock event reason held the clocks.
    ThrottledTime(super::ThrottleShares),
    /// The worst fault, in words ([`super::fault`]).
    GpuFault(String),
}

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// A confidence (0..1) in words.
pub fn confidence_word(c: f64) -> &'static str {
    if c >= 0.7 {
        "high"
    } else if c >= 0.4 {
        "medium"
    } else {
        "low"
    }
}

/// The most a job could speed up if a lost fraction `lost` were won back.
pub fn speedup_bound(lost: f64) -> f64 {
    1.0 / (1.0 - lost).max(0.02)
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
            Summary::InputStarvation { .. } => self.starvation_text(),
            Summary::ThrottledTime(ref shares) => shares.text(),
            Summary::GpuFault(ref text) => text.clone(),
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
            _ => self.signal_text(),
        }
    }

    fn starvation_text(&self) -> String {
        let Summary::InputStarvation {
            dip_s,
            period_s,
            lost,
            confidence,
            cycles,
            confirmed,
            waits,
            ..
        } = *self
        else {
            return String::new();
        };
        let waits = if waits > 1 {
            format!(" in {waits} waits")
        } else {
            String::new()
        };
        let (faster, lost) = (speedup_bound(lost), pct(lost));
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

    /// The texts of the rules on tick readings and across GPUs.
    fn signal_text(&self) -> String {
        match *self {
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
                power: (p, reference),
                of_limit,
            } => {
                let what = match sm {
                    Some(sm) => format!("SM activity only {sm:.0}%"),
                    None if of_limit => format!("power only {p:.0} W of {reference:.0} W"),
                    None => format!(
                        "power only {p:.0} W, against {reference:.0} W when this GPU was busy before"
                    ),
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
            Summary::TensorCoresIdle { sm, tensor, dram } => format!(
                "SM activity {sm:.0}%, tensor cores {tensor:.1}%, DRAM bandwidth {dram:.0}%: the math runs on the CUDA cores (fp32), not the tensor cores"
            ),
            _ => String::new(),
        }
    }
}

/// Run the matmuls and convolutions on the tensor cores, in each framework's words, with the
/// speed-ups measured on an H200 (the same jobs' step times in each precision), not a formula.
const TENSOR_CORES_ADVICE: &str = "lower the matmul precision so the tensor cores do the math: \
PyTorch torch.autocast(device_type=\"cuda\", dtype=torch.bfloat16) (fp16 with torch.amp.GradScaler on GPUs without bf16), \
or TF32 with torch.set_float32_matmul_precision(\"high\") (convolutions: torch.backends.cudnn.allow_tf32 = True); \
JAX bfloat16 parameters (jnp.bfloat16) or jax.default_matmul_precision(\"tensorfloat32\") (the jax_default_matmul_precision config); \
TensorFlow tf.keras.mixed_precision.set_global_policy(\"mixed_bfloat16\") or tf.config.experimental.enable_tensor_float_32_execution(True). \
Measured on an H200 from the jobs' own step times: the same transformer LM ran 3.0× faster with TF32, 6.5× with bf16 and 5.9× with fp16, \
ResNet-50 2.96× with TF32 and 4.46× with bf16; a job whose time goes elsewhere than matmuls and convolutions gains less";

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
        FindingKind::TensorCoresIdle => TENSOR_CORES_ADVICE,
        FindingKind::GpuFault => "the GPU reported a fault: do what its fix says (fix the application, reset the GPU, drain the node, or RMA the GPU)",
        FindingKind::Idle | FindingKind::Healthy | FindingKind::Pending | FindingKind::Stalling => "",
    }
}
