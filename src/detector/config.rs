//! The detector's tunables: the config file's `[detector]` table.
//!
//! Every threshold a rule or the signal analysis uses is a field here, with its unit, its default
//! and the range `gpulse config check` accepts. Keys only ever get added: a config file written
//! for an older version still reads.

use serde::{Deserialize, Serialize};

/// Declares [`DetectorConfig`], its defaults and its valid ranges from one list:
/// `doc; key: type = default, [lowest, highest] "unit";`.
macro_rules! detector_config {
    ($( $(#[doc = $doc:literal])* $key:ident : $ty:ty = $default:expr, [$lo:expr, $hi:expr] $unit:literal; )*) => {
        /// Thresholds of the detector (the config file's `[detector]` table).
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(default, deny_unknown_fields)]
        pub struct DetectorConfig {
            $( $(#[doc = $doc])* pub $key: $ty, )*
        }

        impl Default for DetectorConfig {
            fn default() -> Self {
                DetectorConfig { $( $key: $default, )* }
            }
        }

        impl DetectorConfig {
            /// Every key with what it means (its doc comment, one line).
            pub fn described() -> Vec<(&'static str, &'static str)> {
                vec![ $( (stringify!($key), concat!($($doc, " "),*).trim_ascii()), )* ]
            }

            /// Every key with its value and valid range: `(key, value, lowest, highest, unit)`.
            /// A key that must stay below another (see [`ORDERED`]) has that key's value as its
            /// highest.
            pub fn ranges(&self) -> Vec<(&'static str, f64, f64, f64, &'static str)> {
                let mut out: Vec<(&'static str, f64, f64, f64, &'static str)> =
                    vec![ $( (stringify!($key), self.$key as f64, $lo, $hi, $unit), )* ];
                for (low, high) in ORDERED {
                    let bound = out.iter().find(|r| r.0 == *high).map(|r| r.1);
                    if let (Some(bound), Some(r)) = (bound, out.iter_mut().find(|r| r.0 == *low)) {
                        r.3 = r.3.min(bound);
                    }
                }
                out
            }
        }
    };
}

/// Keys whose value must not exceed another key's: `(lower, upper)`.
pub const ORDERED: &[(&str, &str)] = &[
    ("dip_enter", "dip_leave"),
    ("shallow_enter", "shallow_leave"),
    ("idle_util", "busy_util"),
];

detector_config! {
    // --- Evaluation cadence and hysteresis ---
    /// Seconds of utilization each evaluation looks at (holds ≥ 4 cycles of a 20 s period).
    window_s: f64 = 90.0, [10.0, 3600.0] " seconds";
    /// Seconds of ticks the signal rules (SM activity, power, PCIe, memory, throttling) look at.
    rules_window_s: f64 = 20.0, [2.0, 600.0] " seconds";
    /// Seconds of data time between evaluations.
    eval_interval_s: f64 = 1.0, [0.1, 60.0] " seconds";
    /// An evaluation needs at least this much data of the current job; until then the verdict
    /// is `pending`.
    min_span_s: f64 = 5.0, [1.0, 600.0] " seconds";
    /// Positive evaluations in a row before a finding is raised.
    raise_after: u32 = 2, [1.0, 20.0] "";
    /// Seconds without a positive evaluation before a finding is cleared.
    clear_after_s: f64 = 10.0, [0.0, 3600.0] " seconds";

    // --- Levels and dips ---
    /// Below this utilization (percent) a GPU counts as idle.
    idle_util: f64 = 5.0, [0.0, 50.0] " percent";
    /// At or above this mean utilization (percent) a GPU counts as busy.
    busy_util: f64 = 90.0, [10.0, 100.0] " percent";
    /// A dip begins below this share of the busy level.
    dip_enter: f64 = 0.5, [0.05, 0.95] " (a share of the busy level, below dip_leave)";
    /// A dip ends above this share of the busy level.
    dip_leave: f64 = 0.8, [0.1, 1.0] " (a share of the busy level)";
    /// The shallow band, tried when the normal one finds no period (short gaps a 200 ms window
    /// only partly covers): a dip begins below this share of the busy level.
    shallow_enter: f64 = 0.8, [0.05, 1.0] " (a share of the busy level, below shallow_leave)";
    /// The shallow band: a dip ends above this share of the busy level.
    shallow_leave: f64 = 0.95, [0.1, 1.0] " (a share of the busy level)";
    /// A window whose median is below this share of the busy level is idle with bursts of work:
    /// it marks dips in the burst band, and lost time is measured against 100% when its busiest
    /// readings stay below `busy_util` (bursts shorter than a reading).
    bursty_median: f64 = 0.2, [0.0, 1.0] " (a share of the busy level)";
    /// The burst band's enter level: `dip_enter` times this share, low enough that a burst a
    /// window caught only in part still ends a dip.
    burst_band_enter: f64 = 0.3, [0.01, 1.0] " (a share of dip_enter)";
    /// The burst band's leave level: `dip_leave` times this share.
    burst_band_leave: f64 = 0.35, [0.01, 1.0] " (a share of dip_leave)";

    // --- Level changes ---
    /// Readings above the busy band for at least this long are steady work: a level change
    /// begins where the last such stretch ends.
    sustained_busy_s: f64 = 1.0, [0.2, 60.0] " seconds";
    /// Most share of the readings since a drop that may be back at the old level for them to be
    /// a regime of their own (bursts between waits, not the same work with shorter stretches).
    regime_max_busy_share: f64 = 0.2, [0.0, 1.0] "";

    // --- Periods ---
    /// Dip starts needed before a period is believed.
    min_cycles: usize = 4, [3.0, 20.0] "";
    /// Autocorrelation at the period needed (0..1).
    acf_min: f64 = 0.25, [0.0, 1.0] "";
    /// Largest relative difference between the two period estimates.
    period_agree: f64 = 0.2, [0.01, 1.0] "";
    /// Shortest period reported with a number (seconds); faster stalls are "shorter than 1 s".
    min_period_s: f64 = 1.0, [0.4, 10.0] " seconds";
    /// Dips at least this long (median) are never missed by the sampling, so a period is not
    /// halved on their account.
    missable_dip_s: f64 = 1.0, [0.0, 60.0] " seconds";
    /// The most the spacings of a period's cycles may differ from it on average (a share of the
    /// period, or `cycle_mean_dev_slack_s`, whichever is more): random stalls scatter across the
    /// whole tolerance, a loader's cycles do not.
    cycle_mean_dev: f64 = 0.1, [0.0, 1.0] "";
    /// The least that `cycle_mean_dev` allows.
    cycle_mean_dev_slack_s: f64 = 0.2, [0.0, 10.0] " seconds";
    /// A period seen over fewer cycles than this needs each spacing within `few_cycles_agree` of
    /// it (or `few_cycles_slack_s`): four or five random stalls fall within 35% of a period by chance.
    few_cycles: usize = 6, [2.0, 100.0] "";
    /// How close each spacing of fewer than `few_cycles` cycles must be to the period (a share of
    /// it), or `few_cycles_slack_s`, whichever is more.
    few_cycles_agree: f64 = 0.12, [0.0, 1.0] "";
    /// The least that `few_cycles_agree` allows (also the slack of a provisional period's dip
    /// lengths).
    few_cycles_slack_s: f64 = 0.4, [0.0, 10.0] " seconds";
    /// Below this share of regular spacings a period may be half of a cycle of uneven waits, and a
    /// cycle of several waits is searched.
    uneven_regularity: f64 = 0.75, [0.0, 1.0] "";
    /// A cycle of several waits replaces a period when every n-th dip start is at least this
    /// regular (and its autocorrelation stronger by `paired_acf_margin`, or at least
    /// `paired_acf_min` on its own).
    paired_regularity: f64 = 0.9, [0.0, 1.0] "";
    /// How much stronger the cycle's autocorrelation must be than the period it replaces.
    paired_acf_margin: f64 = 0.2, [0.0, 1.0] "";
    /// The cycle's autocorrelation needed where no period was found.
    paired_acf_min: f64 = 0.45, [0.0, 1.0] "";
    /// The most waits to a cycle searched for (workers that deliver out of step).
    max_waits: usize = 3, [1.0, 10.0] "";

    // --- Provisional periods: a pattern named from its first cycles ---
    /// A provisional period (one cycle short of `min_cycles`, at least three dip starts) is only
    /// taken for periods this long: shorter ones reach `min_cycles` soon enough.
    provisional_min_period_s: f64 = 2.5, [0.5, 600.0] " seconds";
    /// A provisional period needs a busy level at least this many times `idle_util` (not blips on
    /// an idle GPU).
    provisional_min_busy: f64 = 3.0, [1.0, 20.0] " (times idle_util)";
    /// A provisional period's spacings agree within this share of their mean.
    provisional_agree: f64 = 0.12, [0.0, 1.0] "";
    /// A provisional period's closed dips agree in length within this share of their mean (or
    /// `few_cycles_slack_s`).
    provisional_dip_agree: f64 = 0.3, [0.0, 1.0] "";
    /// Each dip of a provisional period averages at most this share of the busy level.
    provisional_depth: f64 = 0.1, [0.0, 1.0] " (a share of the busy level)";
    /// At least this share of the time since a provisional period's first dip is lost, below the
    /// cadence range (a loader's cycle; a cadence needs `stall_min_lost`).
    provisional_min_lost: f64 = 0.25, [0.0, 1.0] "";
    /// A provisional period is not taken when the window holds this many earlier dips as long as
    /// its own that follow no period (a few random stalls evenly spaced by chance).
    provisional_max_earlier: usize = 3, [1.0, 100.0] "";
    /// The most confidence a provisional period is given.
    provisional_confidence: f64 = 0.35, [0.0, 1.0] "";

    // --- Confirming a starvation period ---
    /// Cycles before a starvation finding reports its period (or `confirm_span_s` of them, or
    /// `confirm_cycles_confident` at `confirm_confidence`).
    confirm_cycles: usize = 8, [3.0, 100.0] "";
    /// Seconds of evenly spaced cycles that confirm a starvation period however few they are.
    confirm_span_s: f64 = 40.0, [1.0, 3600.0] " seconds";
    /// Cycles that confirm a starvation period found with at least `confirm_confidence`.
    confirm_cycles_confident: usize = 6, [3.0, 100.0] "";
    /// The confidence `confirm_cycles_confident` needs.
    confirm_confidence: f64 = 0.7, [0.0, 1.0] "";

    // --- Stall rules ---
    /// Periods at or above this are a cadence (checkpoint, evaluation), not loader starvation,
    /// unless `cadence_max_lost` of each cycle is lost.
    stall_min_period_s: f64 = 8.0, [1.0, 3600.0] " seconds";
    /// A long period losing at least this share of each cycle is starvation: a cadence leaves the
    /// GPU busy for most of each cycle, a loader that slow leaves it idle between short bursts.
    cadence_max_lost: f64 = 0.75, [0.0, 1.0] "";
    /// Least lost fraction for input starvation.
    starvation_min_lost: f64 = 0.05, [0.0, 1.0] "";
    /// Least lost fraction for a periodic stall.
    stall_min_lost: f64 = 0.05, [0.0, 1.0] "";
    /// Lost fraction at which a periodic stall is a warning (below, information).
    stall_warn_lost: f64 = 0.1, [0.0, 1.0] "";
    /// Lost fraction at which starvation and stalls are severity high.
    high_lost: f64 = 0.25, [0.0, 1.0] "";
    /// Dips needed in the window for erratic stalls.
    erratic_min_dips: usize = 5, [2.0, 1000.0] "";
    /// Least lost fraction for erratic stalls.
    erratic_min_lost: f64 = 0.1, [0.0, 1.0] "";
    /// Dips longer than this (seconds, median) are not erratic stalls.
    long_gap_s: f64 = 2.0, [0.2, 600.0] " seconds";
    /// Stalls already named stay named while this many rules windows hold as many stalls as
    /// named them: random stalls come in sparse spells.
    named_stalls_windows: f64 = 2.0, [1.0, 10.0] " (rules windows)";

    // --- Signal rules ---
    /// A plateau below this utilization (percent) is host bound.
    plateau_max_util: f64 = 60.0, [1.0, 100.0] " percent";
    /// A plateau's 10th percentile is at least this share of its 90th.
    plateau_flatness: f64 = 0.4, [0.0, 1.0] "";
    /// Busy but idle: SM activity (percent) below this while utilization is busy.
    busy_but_idle_sm: f64 = 20.0, [0.0, 100.0] " percent";
    /// Busy but idle without SM activity: power below this share of the GPU's reference power
    /// (its power limit, or the most it drew while busy, whichever is more).
    busy_but_idle_power_share: f64 = 0.25, [0.0, 1.0] "";
    /// Transfer bound: PCIe receive at least this share of the link's bandwidth.
    transfer_link_share: f64 = 0.05, [0.0, 1.0] "";
    /// Memory idle: at least this share of memory used while utilization is idle.
    memory_idle_share: f64 = 0.5, [0.0, 1.0] "";
    /// Memory idle also when SM activity (percent, GPM) is below this, whatever utilization reads.
    memory_idle_sm: f64 = 1.0, [0.0, 100.0] " percent";
    /// Memory pressure: at least this share of memory used and rising.
    memory_pressure_share: f64 = 0.95, [0.5, 1.0] "";
    /// Busy ticks needed before throttling or link rules judge.
    min_busy_ticks: usize = 8, [1.0, 10000.0] "";
    /// Throttled: share of busy ticks with a serious clock-event reason.
    throttled_share: f64 = 0.5, [0.0, 1.0] "";
    /// PCIe degraded: share of busy ticks with the link below its maximum.
    degraded_share: f64 = 0.8, [0.0, 1.0] "";
    /// Imbalance: per-GPU mean utilizations differing by more than this many points.
    imbalance_points: f64 = 10.0, [1.0, 100.0] " points";

    // --- Tensor cores (GPM on Hopper and newer, DCGM profiling) ---
    /// Tensor cores idle: a tick whose SM activity (percent) is at least this is busy with
    /// compute; the rule judges only such ticks, so a job's waits do not hide its precision.
    tensor_idle_min_sm: f64 = 80.0, [1.0, 100.0] " percent";
    /// Tensor cores idle: ticks busy with compute (`tensor_idle_min_sm`) the rules window needs
    /// before the rule judges.
    tensor_idle_min_ticks: usize = 8, [1.0, 10000.0] "";
    /// Tensor cores idle: the compute ticks' mean tensor-core activity (percent) is below this
    /// (fp32 matmuls read 0–3%, TF32, bf16 and fp16 work 8% and more).
    tensor_idle_max_tensor: f64 = 5.0, [0.0, 100.0] " percent";
    /// Tensor cores idle is not raised when the compute ticks' mean DRAM bandwidth (percent) is
    /// at least this: a bandwidth-bound job would not run faster on the tensor cores.
    tensor_idle_max_dram: f64 = 60.0, [0.0, 100.0] " percent";

    // --- Jobs ---
    /// Memory in use below this (MiB) means no process holds a context: the job has ended.
    no_context_mib: f64 = 128.0, [0.0, 65536.0] " MiB";
    /// Memory in use at or above this (MiB) is a job's context (cross-GPU rules, stalls of a GPU
    /// that reads idle).
    holds_memory_mib: f64 = 1024.0, [0.0, 1048576.0] " MiB";
    /// Memory in use within this share of its latest reading (or `mem_steady_mib`) is steady: a
    /// job starting up moves it by GiBs.
    mem_steady_share: f64 = 0.05, [0.0, 1.0] "";
    /// The least band `mem_steady_share` gives.
    mem_steady_mib: f64 = 256.0, [0.0, 1048576.0] " MiB";
    /// A window without a period whose memory settled at least this long after its first sample
    /// is analysed again from the settling on (a job's start-up hides the pattern after it).
    settled_margin_s: f64 = 2.0, [0.0, 600.0] " seconds";
    /// Seconds after a job's context went during which its pattern's evidence still counts.
    job_end_grace_s: f64 = 1.0, [0.0, 60.0] " seconds";
    /// Seconds of activity in the rules window before a GPU without findings is called busy.
    busy_evidence_s: f64 = 2.0, [0.0, 600.0] " seconds";
    /// Separate bursts of activity in the rules window that make a GPU holding memory a job
    /// that is waiting, not an idle one.
    min_bursts: usize = 3, [1.0, 1000.0] "";

    // --- Polled sources (one reading per poll) ---
    /// A power rise of at least this many watts (and `power_burst_share` of the earlier reading)
    /// on a tick whose polled utilization shows nothing is a burst the poll missed.
    power_burst_w: f64 = 6.0, [0.0, 1000.0] " W";
    /// The least power rise of a missed burst, as a share of the reading before it.
    power_burst_share: f64 = 0.04, [0.0, 1.0] "";

    // --- The stall watch (stalls seen before they are named) ---
    /// Stalls a watch line needs in the rules window (taking `watch_min_stalled` of it).
    watch_min_stalls: usize = 2, [1.0, 1000.0] "";
    /// The share of the rules window the watch line's stalls take at least.
    watch_min_stalled: f64 = 0.1, [0.0, 1.0] "";
    /// Seconds a watch line stays after the evaluation that last saw its stalls.
    watch_hold_s: f64 = 5.0, [0.0, 600.0] " seconds";

    // --- Reusing an analysis ---
    /// A GPU without findings whose busy level is at least this (percent) and whose new samples
    /// all stayed at or above `reuse_band` of it keeps its last analysis for up to `reuse_s`.
    reuse_min_busy: f64 = 60.0, [0.0, 100.0] " percent";
    /// The band a quiet GPU's samples stay in to keep its analysis.
    reuse_band: f64 = 0.95, [0.0, 1.0] " (a share of the busy level)";
    /// Longest a quiet GPU's analysis is kept, seconds of data time.
    reuse_s: f64 = 5.0, [0.0, 60.0] " seconds";
}

impl DetectorConfig {
    /// `mib` in bytes.
    pub fn bytes(mib: f64) -> u64 {
        (mib.max(0.0) * (1u64 << 20) as f64) as u64
    }
}
