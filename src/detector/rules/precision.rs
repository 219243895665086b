//! Precision: a GPU busy with compute whose tensor cores stay idle runs its math in plain fp32
//! on the CUDA cores. It loses speed, not time (the GPU is busy), so the finding is information
//! and never counts as lost time.

use super::candidate::{Candidate, Summary};
use super::Evaluation;
use crate::model::{FindingKind, Severity};

/// Tensor cores idle: at least `tensor_idle_min_ticks` ticks of the rules window busy with
/// compute (SM activity at least `tensor_idle_min_sm`), whose mean tensor-core activity is below
/// `tensor_idle_max_tensor` and whose mean DRAM bandwidth is below `tensor_idle_max_dram` (a
/// bandwidth-bound job, elementwise work, would gain nothing). Only compute ticks are judged, so
/// a job that also waits for its input is judged on the moments it computes. A source without
/// SM, tensor or DRAM activity (an nvidia-smi log, AMD, GPUs before Hopper) has no compute
/// ticks: the rule does not judge.
pub fn tensor_cores_idle(e: &Evaluation) -> Option<Candidate> {
    let (cfg, c) = (e.cfg, e.s.compute);
    let idle = c.ticks >= cfg.tensor_idle_min_ticks
        && c.tensor_mean < cfg.tensor_idle_max_tensor
        && c.dram_mean < cfg.tensor_idle_max_dram;
    (e.enough() && idle).then(|| {
        Candidate::of_signals(
            FindingKind::TensorCoresIdle,
            Severity::Info,
            e.recent_start(),
            &[
                ("sm_active", c.sm_mean),
                ("tensor_active", c.tensor_mean),
                ("dram_active", c.dram_mean),
            ],
            Summary::TensorCoresIdle {
                sm: c.sm_mean,
                tensor: c.tensor_mean,
                dram: c.dram_mean,
            },
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detector::rules::Evaluation;
    use crate::detector::signal::Analysis;
    use crate::detector::ticks::{ComputeTicks, TickSummary};
    use crate::detector::DetectorConfig;

    fn judge(compute: ComputeTicks) -> Option<Candidate> {
        let cfg = DetectorConfig::default();
        let a = Analysis {
            span_s: 30.0,
            ..Default::default()
        };
        let s = TickSummary {
            compute,
            ..Default::default()
        };
        tensor_cores_idle(&Evaluation {
            cfg: &cfg,
            dev: None,
            a: &a,
            s: &s,
            now: 100.0,
            stalls_named: false,
            health: crate::detector::rules::HealthView {
                track: &Default::default(),
                job_from: None,
                throttle: Default::default(),
            },
        })
    }

    fn ticks(n: usize, sm: f64, tensor: f64, dram: f64) -> ComputeTicks {
        ComputeTicks {
            ticks: n,
            sm_mean: sm,
            tensor_mean: tensor,
            dram_mean: dram,
        }
    }

    #[test]
    fn busy_fp32_compute_with_idle_tensor_cores_is_named_as_information() {
        // transformer-lm-fp32 on the H200: SM 94%, tensor 3.0%, DRAM 9.6%.
        let c = judge(ticks(80, 94.2, 3.0, 9.6)).expect("named");
        assert_eq!(c.kind, FindingKind::TensorCoresIdle);
        assert_eq!(c.severity, Severity::Info);
        assert_eq!(c.evidence.lost_fraction, None);
        assert_eq!(c.evidence.speedup_bound, None);
        assert_eq!(c.evidence.signals.get("tensor_active"), Some(&3.0));
        assert_eq!(
            c.summary.text(),
            "SM activity 94%, tensor cores 3.0%, DRAM bandwidth 10%: the math runs on the CUDA cores (fp32), not the tensor cores"
        );
    }

    #[test]
    fn tensor_core_work_is_not_named() {
        // resnet50-bf16: tensor 13.7%; transformer-lm-tf32: 35.4%.
        assert_eq!(judge(ticks(80, 89.7, 13.7, 46.5)), None);
        assert_eq!(judge(ticks(80, 87.2, 35.4, 26.0)), None);
    }

    #[test]
    fn bandwidth_bound_work_is_not_named() {
        // memory-bound-elementwise: SM 97.8%, tensor 0%, DRAM 90.4%.
        assert_eq!(judge(ticks(80, 97.8, 0.0, 90.4)), None);
    }

    #[test]
    fn too_few_compute_ticks_or_none_read_are_not_judged() {
        assert_eq!(judge(ticks(7, 97.0, 0.0, 7.0)), None);
        // A source without SM, tensor or DRAM activity has no compute ticks.
        assert_eq!(judge(ComputeTicks::default()), None);
    }
}
