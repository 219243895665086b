//! Utilization as a signal: busy level, dips, lost time and periodicity over a window.
//!
//! The input is the driver's utilization windows (or polled readings) with their times. The busy
//! level H is the 90th percentile of the samples that show any activity; dips are marked with
//! hysteresis (enter below `enter`·H, leave above `leave`·H; a job that is idle most of the time
//! and busy in bursts uses a lower band so a burst that the window caught only in part still counts).
//! The period is found two ways, the median spacing of dip starts and the autocorrelation peak near
//! it, and is only believed when both agree.

/// Finest step of the resampled grid the autocorrelation runs on (the H200's driver window).
pub const GRID_S: f64 = 0.2;

/// Tunables of the analysis (copied from [`super::DetectorConfig`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SignalParams {
    pub dip_enter: f64,
    pub dip_leave: f64,
    pub min_cycles: usize,
    pub acf_min: f64,
    pub period_agree: f64,
    pub active_util: f64,
    /// Seconds at the end of the window the plateau figures (`recent_*`) look at.
    pub recent_s: f64,
    /// Shortest period the sampling can resolve (seconds).
    pub min_period_s: f64,
    /// Periods at or above this are a cadence (checkpoint, evaluation), never taken from the
    /// fewer cycles of a provisional period.
    pub early_max_period_s: f64,
}

/// A provisional period (one cycle short of `min_cycles`, at least three dip starts) is only
/// taken for periods this long: shorter ones reach `min_cycles` soon enough.
pub const EARLY_MIN_PERIOD_S: f64 = 2.5;
/// ... on a busy level at least this many times the activity threshold (not blips on an idle GPU),
const EARLY_MIN_BUSY: f64 = 3.0;
/// ... when its spacings agree within this share of their mean,
const EARLY_AGREE: f64 = 0.12;
/// ... its closed dips agree in length within this share of their mean (or two driver windows),
const EARLY_DIP_AGREE: f64 = 0.3;
/// ... its dips are deep (each dip's mean at most this share of the busy level),
const EARLY_DEPTH: f64 = 0.1;
/// ... and at least this share of the time since its first dip is lost.
const EARLY_MIN_LOST: f64 = 0.25;

/// The band of a GPU idle most of the time and busy in bursts, as shares of the normal band's
/// levels: a burst the 200 ms window caught only in part still ends a dip.
const BURST_BAND: (f64, f64) = (0.3, 0.35);
/// Busy readings that last at least this long are steady work: a level change begins where the
/// last such stretch ends (shorter ones are bursts between dips, which a starving job has and a
/// poll may fill in at the busy level).
const SUSTAINED_BUSY_S: f64 = 1.0;
/// Most share of the readings since such a drop that may be back at the old level for them to
/// be a regime of their own (H200 logs: a 4.2 s loader after steady work 2–5%; a slightly slow
/// loader, the same work throughout, 39–42%).
const REGIME_MAX_BUSY_SHARE: f64 = 0.2;

/// Dips at least this long (seconds, median) are never missed by the sampling, so a period is
/// not halved on their account (see [`find_period`]).
const MISSABLE_DIP_S: f64 = 1.0;

/// The band used when the normal one finds no period: shallow regular dips (short gaps that a
/// 200 ms window only partly covers).
const SHALLOW: (f64, f64) = (0.8, 0.95);

/// A stretch below the busy level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dip {
    pub start: f64,
    /// `None` while the signal is still in the dip at the end of the window.
    pub end: Option<f64>,
    /// True when the window began inside this dip (its start is not known).
    pub open_start: bool,
}

/// A period both methods agree on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Period {
    pub period_s: f64,
    pub spacing_s: f64,
    pub acf_s: f64,
    /// Autocorrelation at the peak (0..1).
    pub acf: f64,
    /// Dip starts that follow the period.
    pub cycles: usize,
    /// Start of the first dip of those cycles (of a provisional period seen from the latest dip
    /// ends, the end of its first dip: where the first burst of its cycles began).
    pub first_start: f64,
    /// Start (or end, as `first_start`) of the last dip of those cycles.
    pub last_start: f64,
    /// Share of dip spacings within 35% of the median.
    pub regularity: f64,
    /// Seen over fewer than `min_cycles` cycles (three deep, evenly spaced dips that are the
    /// latest in the window): named early, with less confidence, until more cycles confirm it.
    pub provisional: bool,
    /// Dips in each cycle: 1, or 2 or 3 where workers deliver out of step (see
    /// [`waits_repeat`]).
    pub dips_per_cycle: u32,
}

impl Period {
    /// Whether the cycles still go on at `now`: the last began at most two and a half periods
    /// (and a second) before.
    pub fn ongoing_at(&self, now: f64) -> bool {
        now - self.last_start <= 2.5 * self.period_s + 1.0
    }
}

/// What one window of utilization shows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Analysis {
    pub n: usize,
    pub span_s: f64,
    pub mean: f64,
    pub p10: f64,
    pub p90: f64,
    /// Busy level H (90th percentile of active samples); 0 when nothing ran.
    pub busy_level: f64,
    /// Share of samples with any activity.
    pub active_share: f64,
    /// Σ max(0, H − u) / (H·N).
    pub lost_fraction: f64,
    pub dips: Vec<Dip>,
    /// Median length of the dips that both began and ended in the window.
    pub dip_s: Option<f64>,
    /// Median spacing of dip starts.
    pub spacing_s: Option<f64>,
    pub period: Option<Period>,
    /// The dips repeat faster than the sample rate can resolve (a period would alias).
    pub too_fast: bool,
    /// Mean, 10th and 90th percentile of the last `recent_s`.
    pub recent_mean: f64,
    pub recent_p10: f64,
    pub recent_p90: f64,
    /// The samples since a level change (see [`regime_since_last_drop`]) when they were analysed
    /// on their own and held no period yet: the dip edges a provisional period of theirs would
    /// need are judged against their busy level.
    pub regime: Option<Regime>,
}

/// The busy level and dip edges of the samples since a level change.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Regime {
    pub busy_level: f64,
    /// Dips that began after the drop, and dips that ended.
    pub starts: usize,
    pub ends: usize,
}

impl Regime {
    /// How many dips of the regime have this edge.
    fn edges(&self, edge: DipEdge) -> usize {
        match edge {
            DipEdge::Start => self.starts,
            DipEdge::End => self.ends,
        }
    }
}

/// Percentile of integer-percent values via a histogram (O(n), no sort).
pub fn percentile_hist(hist: &[u32; 101], count: u32, p: f64) -> f64 {
    if count == 0 {
        return 0.0;
    }
    let target = ((p * count as f64).ceil() as u32).clamp(1, count);
    let mut acc = 0u32;
    for (v, c) in hist.iter().enumerate() {
        acc += c;
        if acc >= target {
            return v as f64;
        }
    }
    100.0
}

/// The histogram bin of a percentage (nearest whole percent; `round` is a library call on
/// baseline x86-64, adding one half and truncating is not).
pub fn bin(u: f32) -> usize {
    ((u.max(0.0) + 0.5) as usize).min(100)
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    // The value a full sort would put at `m` (and, for an even count, the largest before it):
    // under `total_cmp` equal values are equal bits, so the median is the same.
    let len = v.len();
    let m = len / 2;
    let (below, mid, _) = v.select_nth_unstable_by(m, |a, b| a.total_cmp(b));
    let mid = *mid;
    if len % 2 == 1 {
        return Some(mid);
    }
    let lower = below.iter().copied().max_by(|a, b| a.total_cmp(b))?;
    Some((lower + mid) / 2.0)
}

/// Histograms of the samples of a window, kept as samples enter and leave it, so that an
/// analysis of the whole window need not walk it for them.
#[derive(Debug, Clone)]
pub struct WindowHist {
    all: [u32; 101],
    /// Samples at or above `active_util`.
    act: [u32; 101],
    n: u32,
    n_act: u32,
    active_util: f64,
    /// Samples that are not whole percents in 0..=100, and the sum of those that are: with none
    /// of the former, sums over the window are exact whatever their order.
    odd: u32,
    whole_sum: u64,
}

impl Default for WindowHist {
    /// Histograms that no analysis uses (no activity threshold).
    fn default() -> Self {
        WindowHist::new(f64::NAN)
    }
}

/// `u` as a whole percent, when it is one.
fn whole(u: f32) -> Option<u64> {
    ((0.0..=100.0).contains(&u) && u.fract() == 0.0).then_some(u as u64)
}

impl WindowHist {
    /// Empty histograms counting samples at or above `active_util` as active.
    pub fn new(active_util: f64) -> Self {
        WindowHist {
            all: [0; 101],
            act: [0; 101],
            n: 0,
            n_act: 0,
            active_util,
            odd: 0,
            whole_sum: 0,
        }
    }

    /// A sample entered the window.
    pub fn add(&mut self, u: f32) {
        let b = bin(u);
        self.all[b] += 1;
        self.n += 1;
        if self.active(u as f64) {
            self.act[b] += 1;
            self.n_act += 1;
        }
        match whole(u) {
            Some(w) => self.whole_sum += w,
            None => self.odd += 1,
        }
    }

    /// The busy level of the window's samples, as an analysis takes it (the 90th percentile of
    /// the active ones; `None` with none).
    pub fn busy_level(&self) -> Option<f64> {
        (self.n_act > 0).then(|| percentile_hist(&self.act, self.n_act, 0.9))
    }

    /// Whether `u` shows activity (at or above the threshold).
    pub fn active(&self, u: f64) -> bool {
        u >= self.active_util
    }

    /// A sample (one that entered) left the window.
    pub fn remove(&mut self, u: f32) {
        let b = bin(u);
        self.all[b] = self.all[b].saturating_sub(1);
        self.n = self.n.saturating_sub(1);
        if self.active(u as f64) {
            self.act[b] = self.act[b].saturating_sub(1);
            self.n_act = self.n_act.saturating_sub(1);
        }
        match whole(u) {
            Some(w) => self.whole_sum = self.whole_sum.saturating_sub(w),
            None => self.odd = self.odd.saturating_sub(1),
        }
    }
}

/// Σ max(0, h − u) over the samples counted in `all` by whole percent, when `h` is a whole
/// percent too (an exact integer, so equal to the sum in sample order).
fn shortfall_hist(all: &[u32; 101], h: f64) -> Option<i64> {
    if h.fract() != 0.0 || !(0.0..=100.0).contains(&h) {
        return None;
    }
    let h = h as usize;
    Some(
        all[..h]
            .iter()
            .enumerate()
            .map(|(v, c)| (h - v) as i64 * *c as i64)
            .sum(),
    )
}

/// [`shortfall`] of `us[from..]`. `all`: the counts of the whole of `us` by whole percent, when
/// every sample is one; then a tail longer than the head is the whole window's shortfall less
/// the head's (exact integers: the same value).
fn shortfall_from(us: &[f32], from: usize, h: f64, all: Option<&[u32; 101]>) -> f64 {
    let head = &us[..from.min(us.len())];
    let tail = &us[head.len()..];
    if let Some(total) = all
        .filter(|_| head.len() < tail.len())
        .and_then(|a| shortfall_hist(a, h))
    {
        let hi = h as i64;
        let lost_head: i64 = head.iter().map(|&u| (hi - u as i64).max(0)).sum();
        return (total - lost_head) as f64;
    }
    shortfall(tail, h, all.is_some())
}

/// Σ max(0, h − u) over `us`, in sample order. When `whole` (every sample is a whole percent
/// in 0..=100) and `h` is one too, every partial sum is an exact integer, so the sum is taken in
/// integers (no chain of dependent float additions): the same value.
fn shortfall(us: &[f32], h: f64, whole: bool) -> f64 {
    if whole && !us.is_empty() && h.fract() == 0.0 && (0.0..=100.0).contains(&h) {
        let hi = h as i64;
        let s: i64 = us.iter().map(|&u| (hi - u as i64).max(0)).sum();
        return s as f64;
    }
    us.iter().map(|&u| (h - u as f64).max(0.0)).sum::<f64>()
}

/// Buffers an analysis works in, kept between analyses so that they allocate nothing once warm.
#[derive(Debug, Default)]
pub struct Scratch {
    /// A spare dip list: the dips of a band are marked here, and the band that describes the
    /// window swaps it into its [`Analysis`].
    dips: Vec<Dip>,
    starts: Vec<f64>,
    ends: Vec<f64>,
    spacings: Vec<f64>,
    lens: Vec<f64>,
    grid: Grid,
    sums: Vec<f64>,
    rs: Vec<f64>,
}

/// The period search's grid and what it was built from within the current analysis (the mean's
/// and the step's bits, and the cell count): the bands and the searches of the latest dip edges
/// use the same one.
#[derive(Debug, Default)]
struct Grid {
    cells: Vec<f64>,
    built: Option<(u64, u64, usize)>,
}

impl Scratch {
    /// Keep a dip list that is no longer needed (an old analysis's), for the next analysis.
    pub fn recycle(&mut self, dips: Vec<Dip>) {
        if dips.capacity() > self.dips.capacity() {
            self.dips = dips;
        }
    }
}

/// Analyse samples `(t, util%)`, oldest first.
pub fn analyse(ts: &[f64], us: &[f32], p: &SignalParams) -> Analysis {
    analyse_window(ts, us, p, None, &mut Scratch::default())
}

/// [`analyse`], with the window's histograms when they are kept (`hist`, used only when it
/// counts exactly these samples with this activity threshold), in reused buffers. The result is
/// the same.
pub fn analyse_window(
    ts: &[f64],
    us: &[f32],
    p: &SignalParams,
    hist: Option<&WindowHist>,
    scratch: &mut Scratch,
) -> Analysis {
    let n = ts.len().min(us.len());
    if n < 2 {
        return Analysis {
            n,
            ..Default::default()
        };
    }
    let (ts, us) = (&ts[..n], &us[..n]);
    // A grid built for other samples is not this window's.
    scratch.grid.built = None;
    let hist = hist.filter(|h| h.n as usize == n && h.active_util == p.active_util);
    let (all, act, n_act, sum, whole_window) = match hist {
        Some(h) => {
            let sum = if h.odd == 0 {
                h.whole_sum as f64
            } else {
                us.iter().fold(0.0f64, |s, &u| s + u as f64)
            };
            (h.all, h.act, h.n_act, sum, h.odd == 0)
        }
        None => {
            let mut all = [0u32; 101];
            let mut act = [0u32; 101];
            let mut n_act = 0u32;
            let mut sum = 0.0f64;
            let mut odd = false;
            for &u in us {
                let b = bin(u);
                all[b] += 1;
                sum += u as f64;
                odd |= whole(u).is_none();
                if (u as f64) >= p.active_util {
                    act[b] += 1;
                    n_act += 1;
                }
            }
            (all, act, n_act, sum, !odd)
        }
    };
    let mut a = Analysis {
        n,
        span_s: ts[n - 1] - ts[0],
        mean: sum / n as f64,
        p10: percentile_hist(&all, n as u32, 0.10),
        p90: percentile_hist(&all, n as u32, 0.90),
        active_share: n_act as f64 / n as f64,
        ..Default::default()
    };
    let from = ts.partition_point(|t| *t < ts[n - 1] - p.recent_s);
    let mut recent = [0u32; 101];
    let mut rsum = 0.0;
    for &u in &us[from..] {
        recent[bin(u)] += 1;
        rsum += u as f64;
    }
    let rn = (n - from) as u32;
    a.recent_mean = rsum / rn.max(1) as f64;
    a.recent_p10 = percentile_hist(&recent, rn, 0.10);
    a.recent_p90 = percentile_hist(&recent, rn, 0.90);
    if n_act == 0 {
        return a;
    }
    let h = percentile_hist(&act, n_act, 0.90).max(p.active_util);
    a.busy_level = h;
    // The whole window's histogram, read by whole percent when every sample is one.
    let whole_hist = whole_window.then_some(&all);
    let lost = shortfall_from(us, 0, h, whole_hist);
    a.lost_fraction = lost / (h * n as f64);
    // Mostly idle with bursts: a burst the 200 ms window caught only in part still reads well below H.
    let bursty = percentile_hist(&all, n as u32, 0.5) < 0.2 * h;
    let burst_band = [(p.dip_enter * 0.3, p.dip_leave * 0.35)];
    let normal_bands = [(p.dip_enter, p.dip_leave), SHALLOW];
    let bands: &[(f64, f64)] = if bursty { &burst_band } else { &normal_bands };
    let mut normal_dips: Option<usize> = None;
    for (k, &(enter, leave)) in bands.iter().enumerate() {
        let Scratch {
            dips,
            starts,
            ends,
            spacings,
            lens,
            grid,
            sums,
            rs,
        } = &mut *scratch;
        find_dips(ts, us, enter * h, leave * h, dips);
        starts.clear();
        starts.extend(dips.iter().filter(|d| !d.open_start).map(|d| d.start));
        spacings.clear();
        spacings.extend(starts.windows(2).map(|w| w[1] - w[0]));
        // The period search only counts the spacings, in any order.
        let spacing = median(spacings);
        let dip_len = median_dip(dips, f64::MIN, lens);
        let mut found = match spacing {
            Some(sp) if starts.len() >= early_cycles(p) => find_period(
                ts,
                us,
                (a.mean, h, dip_len),
                (starts, spacings, sp),
                whole_hist,
                p,
                (grid, sums, rs),
            ),
            _ => Periodicity::None,
        };
        // Earlier dips that follow no period (a job's warm-up) can hide a provisional period in
        // the latest dip starts from the median spacing: search those on their own. Then the
        // latest dip ends: the burst that ends a dip shows its cycle as soon as it begins, one
        // burst before the next dip does.
        let mut tail_from = None;
        let mut edges: &[f64] = starts;
        if matches!(found, Periodicity::None) {
            ends.clear();
            ends.extend(dips.iter().filter_map(|d| d.end));
            for (cands, search_all) in [(&starts[..], false), (&ends[..], true)] {
                let Some((tail, sp)) = early_tail(cands, search_all, p) else {
                    continue;
                };
                if dips_before_tail(dips, tail[0], search_all) >= EARLY_MAX_EARLIER {
                    continue;
                }
                // The spacings of the whole window are no longer needed: their buffer takes the
                // tail's.
                spacings.clear();
                spacings.extend(tail.windows(2).map(|w| w[1] - w[0]));
                found = find_period(
                    ts,
                    us,
                    (a.mean, h, dip_len),
                    (tail, spacings, sp),
                    whole_hist,
                    p,
                    (grid, sums, rs),
                );
                if !matches!(found, Periodicity::None) {
                    tail_from = tail.first().copied();
                    edges = cands;
                    break;
                }
            }
        }
        // Two dips to a cycle (workers that deliver out of step: a burst 1.4 s then 2.6 s after
        // the last, every 4 s): the spacings alternate and no period is near their median, but
        // every other dip start follows the cycle. Counted on the dip starts that end with the
        // latest, over `min_cycles` whole cycles (no provisional period).
        // A period found over alternating spacings (the median one short, the long ones taken
        // as two periods) yields to the cycle when every other dip start follows the cycle far
        // more closely.
        let uneven = match &found {
            Periodicity::None => Some(None),
            Periodicity::Period(per) if per.regularity < UNEVEN_REGULARITY => Some(Some(per.acf)),
            _ => None,
        };
        // Likewise three workers out of step: spacings repeating a, b, c (two waits are tried
        // first; evenly spaced starts never get here, they have a regular period).
        for waits in (2..=MAX_WAITS).filter(|_| k == 0) {
            let Some(beat) = uneven else { break };
            let need = waits_min_starts(waits, p);
            if starts.len() < need || !waits_repeat(&starts[starts.len() - need..], waits) {
                continue;
            }
            let every_kth: Vec<f64> = starts[(starts.len() - 1) % waits..]
                .iter()
                .step_by(waits)
                .copied()
                .collect();
            spacings.clear();
            spacings.extend(every_kth.windows(2).map(|w| w[1] - w[0]));
            let Some(sp) = median(spacings) else { continue };
            let r = find_period(
                ts,
                us,
                (a.mean, h, dip_len),
                (&every_kth, spacings, sp),
                whole_hist,
                p,
                (grid, sums, rs),
            );
            if let Periodicity::Period(mut per) = r {
                let clearer = per.regularity >= PAIRED_REGULARITY
                    && per.acf >= beat.map_or(PAIRED_ACF_MIN, |acf| acf + PAIRED_ACF_MARGIN);
                if clearer && !per.provisional && per.period_s >= waits as f64 * p.min_period_s {
                    per.dips_per_cycle = waits as u32;
                    found = Periodicity::Period(per);
                    break;
                }
            }
        }
        // A provisional period counts only when it passes its checks; with fewer dip starts
        // than `min_cycles` nothing else counts either (the window reads as before: no period).
        let early = match &found {
            Periodicity::Period(per) if per.provisional => {
                Some(early_checks(ts, us, h, dips, edges, per, whole_hist, p))
            }
            _ => None,
        };
        if early == Some(false) || (early.is_none() && starts.len() < p.min_cycles) {
            found = Periodicity::None;
        }
        if let Periodicity::Period(per) = &found {
            if few_cycles_by_chance(dips, per, per.first_start, p) {
                found = Periodicity::None;
            }
        }
        // The normal band's dips must not outnumber the periods a shallow band found.
        if let (Periodicity::Period(per), Some(n0)) = (&found, normal_dips) {
            if n0 as f64 > 1.1 * (a.span_s / per.period_s) + 1.0 {
                found = Periodicity::TooFast;
            }
        }
        if k == 0 {
            normal_dips = Some(starts.len());
        }
        // The first band describes the dips; a shallow band only adds a period it found.
        if k == 0 || !matches!(found, Periodicity::None) {
            // A period of the latest dips alone is described by those dips.
            a.dip_s = match tail_from.filter(|_| matches!(found, Periodicity::Period(_))) {
                None => dip_len,
                Some(from) => median_dip(dips, from, lens),
            };
            // The analysis takes the band's dips; its empty list becomes the spare.
            std::mem::swap(&mut a.dips, dips);
            a.spacing_s = spacing;
            a.too_fast = matches!(found, Periodicity::TooFast);
            if a.too_fast {
                break;
            }
            if let Periodicity::Period(per) = found {
                // Lost time over the cycles themselves (the window may also hold other behaviour).
                let from = ts.partition_point(|t| *t < per.first_start);
                let m = (n - from).max(1);
                a.lost_fraction = shortfall_from(us, from, h, whole_hist) / (h * m as f64);
                // Far more time lost than the dips explain: the busy stretches hide stalls that
                // fall between samples, so the true period is shorter than the one seen.
                // Several waits to a cycle, of uneven lengths: the share of the cycles' time
                // their dips cover.
                let dip_share = if per.dips_per_cycle > 1 {
                    let last = ts[n - 1];
                    let idle: f64 = a
                        .dips
                        .iter()
                        .filter(|d| d.start >= per.first_start)
                        .map(|d| d.end.unwrap_or(last) - d.start)
                        .sum();
                    idle / (last - per.first_start).max(per.period_s)
                } else {
                    a.dip_s.unwrap_or(0.0) / per.period_s
                };
                if a.lost_fraction > dip_share + 0.2 {
                    a.too_fast = true;
                } else {
                    a.period = Some(per);
                }
                break;
            }
        }
    }
    regime_since_last_drop(ts, us, p, &mut a, scratch);
    period_after_ended_cycles(ts, us, p, &mut a, scratch);
    a
}

/// Whether `span_s` of samples is long enough to hold `min_cycles` of the shortest resolvable
/// period (worth analysing on their own).
fn holds_min_cycles(span_s: f64, p: &SignalParams) -> bool {
    span_s >= p.min_cycles as f64 * p.min_period_s
}

/// `a` takes the dips, period and lost time of `tail`, an analysis of its latest samples that
/// found a period.
fn adopt_period(a: &mut Analysis, tail: Analysis, scratch: &mut Scratch) {
    a.busy_level = tail.busy_level;
    a.lost_fraction = tail.lost_fraction;
    scratch.recycle(std::mem::replace(&mut a.dips, tail.dips));
    a.dip_s = tail.dip_s;
    a.spacing_s = tail.spacing_s;
    a.period = tail.period;
    a.too_fast = false;
}

/// A period whose cycles ended (a job that starved and stopped) can hold the window while a new
/// pattern begins after it: the new dips, with another period or phase, do not follow the old
/// cycles, and the old period is no longer ongoing. The samples after the old pattern's last
/// cycle are then analysed on their own; when they hold a period, it is the window's.
fn period_after_ended_cycles(
    ts: &[f64],
    us: &[f32],
    p: &SignalParams,
    a: &mut Analysis,
    scratch: &mut Scratch,
) {
    let end = ts[ts.len() - 1];
    let Some(old) = a.period.filter(|per| !per.ongoing_at(end)) else {
        return;
    };
    let from = ts.partition_point(|t| *t <= old.last_start + old.period_s);
    if from + 2 >= ts.len() || !holds_min_cycles(end - ts[from], p) {
        return;
    }
    let tail = analyse_window(&ts[from..], &us[from..], p, None, scratch);
    if tail.period.as_ref().is_some_and(|per| per.ongoing_at(end)) {
        adopt_period(a, tail, scratch);
    } else {
        scratch.recycle(tail.dips);
    }
}

/// A level change: the window began in one regime (busy near H) and the signal fell below the
/// normal band (`dip_enter`·H, whichever band described the dips) and has not come back above
/// `dip_leave`·H since, so the whole window's busy level no longer describes the
/// samples since the drop (a job that started starving: short bursts that never come back near
/// the old H). Those samples are analysed as their own window, with their own busy level; when
/// they hold a period, the dips, period and lost time are theirs. A period (or aliasing) the
/// whole window found in cycles that all began before the drop describes the earlier regime and
/// gives way; one with cycles after the drop stands.
fn regime_since_last_drop(
    ts: &[f64],
    us: &[f32],
    p: &SignalParams,
    a: &mut Analysis,
    scratch: &mut Scratch,
) {
    let h = a.busy_level;
    // Backwards to the last sustained busy stretch (at once on a busy GPU), then forwards to the
    // drop.
    let Some(last_busy) = last_sustained_busy(ts, us, p.dip_leave * h) else {
        return;
    };
    let Some(from) = us[last_busy..]
        .iter()
        .position(|u| (*u as f64) < p.dip_enter * h)
        .map(|i| last_busy + i)
    else {
        return;
    };
    let drop = ts[from];
    if a.period.is_some_and(|per| per.last_start >= drop) {
        return;
    }
    if !holds_min_cycles(ts[ts.len() - 1] - drop, p) {
        return;
    }
    // Mostly below the old level since: bursts between long waits, not the same work with
    // shorter stretches.
    let busy = us[from..]
        .iter()
        .filter(|u| **u as f64 > p.dip_leave * h)
        .count();
    if busy as f64 > REGIME_MAX_BUSY_SHARE * (us.len() - from) as f64 {
        return;
    }
    let tail = analyse_window(&ts[from..], &us[from..], p, None, scratch);
    // Stalls as long as the new dips before the drop: the same stalls went on before it, and a
    // few of them evenly spaced since are chance, not a new pattern (H200 run 12's random
    // stalls: four 1.6 s apart after a busy second).
    if tail
        .period
        .is_some_and(|per| few_cycles_by_chance(&a.dips, &per, drop, p))
    {
        scratch.recycle(tail.dips);
    } else if tail.period.is_some() {
        adopt_period(a, tail, scratch);
    } else {
        a.regime = Some(Regime {
            busy_level: tail.busy_level,
            starts: edge_count(&tail.dips, DipEdge::Start),
            ends: edge_count(&tail.dips, DipEdge::End),
        });
        scratch.recycle(tail.dips);
    }
}

/// The last reading of the latest stretch of readings all above `level` that lasts at least
/// [`SUSTAINED_BUSY_S`]: steady work, not a burst between dips.
fn last_sustained_busy(ts: &[f64], us: &[f32], level: f64) -> Option<usize> {
    let mut run_end = None;
    for i in (0..us.len()).rev() {
        if us[i] as f64 > level {
            let end = *run_end.get_or_insert(i);
            if ts[end] - ts[i] >= SUSTAINED_BUSY_S {
                return Some(end);
            }
        } else {
            run_end = None;
        }
    }
    None
}

/// The median length of the dips that began at or after `from` and ended in the window (`lens`
/// a work buffer).
fn median_dip(dips: &[Dip], from: f64, lens: &mut Vec<f64>) -> Option<f64> {
    lens.clear();
    lens.extend(
        dips.iter()
            .filter(|d| !d.open_start && d.start >= from)
            .filter_map(|d| d.end.map(|e| e - d.start)),
    );
    median(lens)
}

/// Mark the dips of `us` (enter below `enter`, leave above `leave`) into `dips`. (Not inlined:
/// inside the caller its loop kept its values on the stack.)
#[inline(never)]
fn find_dips(ts: &[f64], us: &[f32], enter: f64, leave: f64, dips: &mut Vec<Dip>) {
    dips.clear();
    let mut in_dip = (us[0] as f64) < enter;
    let mut cur = in_dip.then_some(Dip {
        start: ts[0],
        end: None,
        open_start: true,
    });
    for (&t, &u) in ts.iter().zip(us).skip(1) {
        let u = u as f64;
        if in_dip {
            if u > leave {
                in_dip = false;
                if let Some(mut d) = cur.take() {
                    d.end = Some(t);
                    dips.push(d);
                }
            }
        } else if u < enter {
            in_dip = true;
            cur = Some(Dip {
                start: t,
                end: None,
                open_start: false,
            });
        }
    }
    dips.extend(cur);
}

/// Σ `grid[i]·grid[i + lag]` over `i < len − lag`, added in index order from −0.0 (the value
/// `Iterator::sum` gives).
fn lagged_sum(grid: &[f64], lag: usize) -> f64 {
    let n = grid.len().saturating_sub(lag);
    grid[..n].iter().zip(&grid[lag..]).map(|(a, b)| a * b).sum()
}

/// [`lagged_sum`] for every lag in `0..=max_lag`, bit for bit: each lag still adds its products in
/// index order, but several lags advance together in one pass over the grid (independent sums,
/// so the additions overlap instead of waiting on each other).
fn lagged_sums(grid: &[f64], max_lag: usize, out: &mut Vec<f64>) {
    const B: usize = 16;
    let m = grid.len();
    out.clear();
    let mut l0 = 0;
    while l0 <= max_lag && l0 < m {
        let k = (max_lag + 1 - l0).min(B);
        let mut acc = [-0.0f64; B];
        // Rows where all B lags of the block are inside the grid.
        let full = m.saturating_sub(l0 + B - 1);
        for i in 0..full {
            let x = grid[i];
            for (a, y) in acc.iter_mut().zip(&grid[i + l0..i + l0 + B]) {
                *a += x * y;
            }
        }
        for (j, a) in acc.iter_mut().enumerate().take(k) {
            let lag = l0 + j;
            for i in full..m.saturating_sub(lag) {
                *a += grid[i] * grid[i + lag];
            }
        }
        out.extend_from_slice(&acc[..k]);
        l0 += B;
    }
}

/// `m` cells of `grid_s` from `ts[0]`, each the time-weighted mean of the readings held over it
/// (a reading holds until the next one, the last to the end of the grid; one that comes out of
/// order holds from the latest time already seen) minus `mean`, into `grid`. Every reading counts:
/// readings as far apart as the cells (200 ms driver windows on a 0.2 s grid) drift against them,
/// and taking one reading per point dropped the reading whose hold fell between two points, a
/// one-window burst included. Each cell is the difference of the readings' running integral at
/// its two ends, so the walk costs what the point sampling did.
/// (Not inlined: on its own the loop keeps its values in registers.)
#[inline(never)]
fn resample(ts: &[f64], us: &[f32], mean: f64, grid_s: f64, m: usize, grid: &mut Vec<f64>) {
    grid.clear();
    let n = ts.len().min(us.len());
    let Some(&t0) = ts.first().filter(|_| n > 0) else {
        return;
    };
    grid.reserve(m);
    let inv = 1.0 / grid_s;
    // Where the hold after reading `j` (which began at `from`) begins.
    let next_start = |j: usize, from: f64| {
        ts.get(j + 1)
            .filter(|_| j + 1 < n)
            .map_or(f64::INFINITY, |t| t.max(from))
    };
    // The reading held, where its hold began, the integral up to there, and where the next hold
    // begins.
    let (mut j, mut start, mut before) = (0usize, t0, 0.0f64);
    let mut next = next_start(0, t0);
    let mut at_last = 0.0f64;
    for k in 1..=m {
        let t = t0 + k as f64 * grid_s;
        while next <= t {
            before += us[j] as f64 * (next - start);
            j += 1;
            start = next;
            next = next_start(j, start);
        }
        let at = before + us[j] as f64 * (t - start);
        grid.push((at - at_last) * inv - mean);
        at_last = at;
    }
}

/// What the period search concluded.
enum Periodicity {
    None,
    /// Regular, but the autocorrelation is as strong at half the period: the true period is
    /// probably shorter than the samples can resolve.
    TooFast,
    Period(Period),
}

/// The period of the dips starting at `starts` (`spacings` between them, `spacing` their median),
/// checked against the autocorrelation of `us`. `whole_hist`: the counts of `us` by whole
/// percent, when every sample is one. `grid`, `sums` and `rs` are work buffers.
fn find_period(
    ts: &[f64],
    us: &[f32],
    (mean, busy_level, dip_len): (f64, f64, Option<f64>),
    (starts, spacings, spacing): (&[f64], &[f64], f64),
    whole_hist: Option<&[u32; 101]>,
    p: &SignalParams,
    (grid, sums, rs): (&mut Grid, &mut Vec<f64>, &mut Vec<f64>),
) -> Periodicity {
    let regular = spacings
        .iter()
        .filter(|s| (**s - spacing).abs() <= 0.35 * spacing)
        .count();
    let regularity = regular as f64 / spacings.len().max(1) as f64;
    if regularity < 0.5 {
        return Periodicity::None;
    }
    // Resample onto the grid by holding each reading until the next.
    let t0 = ts[0];
    // Long periods need no 0.2 s resolution: about 25 grid steps per period keep the search cheap.
    let grid_s = GRID_S.max(spacing / 25.0);
    let m = ((ts[ts.len() - 1] - t0) / grid_s).floor() as usize + 1;
    let key = (mean.to_bits(), grid_s.to_bits(), m);
    if grid.built != Some(key) {
        resample(ts, us, mean, grid_s, m, &mut grid.cells);
        grid.built = Some(key);
    }
    let grid: &[f64] = &grid.cells;
    let lo = ((0.5 * spacing / grid_s).floor() as usize).max(1);
    let hi = ((1.5 * spacing / grid_s).ceil() as usize).min(m * 2 / 3);
    // Every lag the search reads (0 for the variance, half lags, lo − 1 ..= hi + 1) in one pass.
    lagged_sums(grid, (hi + 1).min(m - 1), sums);
    let var: f64 = sums[0] / m as f64;
    if var <= 1e-9 {
        return Periodicity::None;
    }
    if hi <= lo + 1 {
        return Periodicity::None;
    }
    let acf = |lag: usize| -> f64 {
        let s = match sums.get(lag) {
            Some(s) => *s,
            None => lagged_sum(grid, lag),
        };
        s / (m - lag) as f64 / var
    };
    rs.clear();
    rs.extend((lo - 1..=hi + 1).map(acf));
    let (best_i, best_r) =
        rs[1..rs.len() - 1]
            .iter()
            .enumerate()
            .fold(
                (0, f64::MIN),
                |acc, (i, &r)| if r > acc.1 { (i, r) } else { acc },
            );
    let i = best_i + 1;
    if best_r < p.acf_min || rs[i] < rs[i - 1] || rs[i] < rs[i + 1] {
        return Periodicity::None;
    }
    // Parabolic refinement of the peak.
    let (ym, y0, yp) = (rs[i - 1], rs[i], rs[i + 1]);
    let denom = ym - 2.0 * y0 + yp;
    let shift = if denom.abs() > 1e-12 {
        (0.5 * (ym - yp) / denom).clamp(-0.5, 0.5)
    } else {
        0.0
    };
    let acf_s = (lo - 1 + i) as f64 * grid_s + shift * grid_s;
    if (acf_s - spacing).abs() > p.period_agree * spacing {
        return Periodicity::None;
    }
    // The lags around half of it: the two either side, and one step further where a step is at
    // most a tenth of the period (at a 1 s period a step is a fifth of it, and a step further
    // already nears the period or zero).
    let half = acf_s / 2.0 / grid_s;
    let near = (0.1 * acf_s / grid_s).floor().min(1.0);
    let r_half = (((half - near).floor() as usize).max(1)..=(half + near).ceil() as usize)
        .map(acf)
        .fold(f64::MIN, f64::max);
    let mut acf_s = acf_s;
    let mut period_s = (acf_s + spacing) / 2.0;
    // As regular at half the lag: every other dip was missed, or the period is too short. Only
    // dips short enough to fall between samples can be missed: with longer ones (a checkpoint's
    // pause, a slow loader's wait) the dip starts show the period as it is.
    let missable = dip_len.is_none_or(|d| d < MISSABLE_DIP_S);
    if r_half >= 0.4 * best_r && missable {
        if acf_s / 2.0 >= 0.9 * p.min_period_s {
            acf_s /= 2.0;
            period_s = acf_s;
        } else {
            return Periodicity::TooFast;
        }
    }
    // More dips than periods: the stalls come faster than the period the samples show (aliasing).
    let span = ts[ts.len() - 1] - ts[0];
    if starts.len() as f64 > 1.1 * (span / period_s) + 1.0 {
        return Periodicity::TooFast;
    }
    // A period near the sample rate aliases: windows then mostly catch part of a stall.
    if period_s < 2.0 {
        let (lo, hi) = (0.15 * busy_level, 0.85 * busy_level);
        let between = |u: f64| u > lo && u < hi;
        let mid = match whole_hist {
            // Every sample is the whole percent of its bin.
            Some(all) => all
                .iter()
                .enumerate()
                .filter(|(v, _)| between(*v as f64))
                .map(|(_, c)| *c as usize)
                .sum(),
            None => us.iter().filter(|u| between(**u as f64)).count(),
        };
        if mid as f64 > 0.55 * us.len() as f64 {
            return Periodicity::TooFast;
        }
    }
    // The cycles: the run of dip starts whose spacings follow the period.
    let mut first = 0;
    let mut cycles = 1;
    let mut best = (0, 1);
    for k in 1..starts.len() {
        let s = starts[k] - starts[k - 1];
        let whole = (s / acf_s).round().max(1.0);
        if (s - whole * acf_s).abs() <= 0.35 * acf_s && whole <= 2.0 {
            cycles += 1;
        } else {
            first = k;
            cycles = 1;
        }
        if cycles > best.1 {
            best = (first, cycles);
        }
    }
    // The cycles' spacings, on average, close to the period (or its double) below the cadence
    // range: random stalls scatter across the whole 35% tolerance.
    let run = &starts[best.0..best.0 + best.1];
    if acf_s < p.early_max_period_s
        && mean_deviation(run, acf_s) > (CYCLE_MEAN_DEV * acf_s).max(CYCLE_MEAN_DEV_SLACK_S)
    {
        return Periodicity::None;
    }
    let provisional = best.1 < p.min_cycles;
    if provisional && (best.1 < early_cycles(p) || best.0 + best.1 != starts.len()) {
        return Periodicity::None;
    }
    // Few cycles: each spacing close to the period, none a missed dip.
    if best.1 < FEW_CYCLES
        && acf_s < p.early_max_period_s
        && starts[best.0..best.0 + best.1].windows(2).any(|w| {
            (w[1] - w[0] - acf_s).abs() > (FEW_CYCLES_AGREE * acf_s).max(FEW_CYCLES_SLACK_S)
        })
    {
        return Periodicity::None;
    }
    Periodicity::Period(Period {
        period_s,
        spacing_s: spacing,
        acf_s,
        acf: best_r.min(1.0),
        cycles: best.1,
        first_start: starts[best.0],
        last_start: starts[best.0 + best.1 - 1],
        regularity,
        provisional,
        dips_per_cycle: 1,
    })
}

/// The most the spacings of a period's cycles (below the cadence range) may differ from the
/// period (or its double, a missed dip) on average, as a share of it, or one driver window,
/// whichever is more. Random stalls (synthetic, 200 runs) got a period in 21% of runs without
/// this check, 12% with it; on the H200 files, 0.07 or 0.15 s would first delay real loaders.
const CYCLE_MEAN_DEV: f64 = 0.1;
const CYCLE_MEAN_DEV_SLACK_S: f64 = 0.2;

/// The mean distance of the spacings of `starts` from the nearest whole multiple (at least one)
/// of `period`.
fn mean_deviation(starts: &[f64], period: f64) -> f64 {
    let (sum, n) = starts.windows(2).fold((0.0, 0usize), |(sum, n), w| {
        let s = w[1] - w[0];
        let whole = (s / period).round().max(1.0);
        (sum + (s - whole * period).abs(), n + 1)
    });
    if n == 0 {
        0.0
    } else {
        sum / n as f64
    }
}

/// A period below the cadence range seen over fewer cycles than this needs every spacing of its
/// cycles within [`FEW_CYCLES_AGREE`] of it: four or five random stalls fall within 35% of a
/// period by chance. (Cadences, an evaluation every ~9 s with its jitter, keep 35%.)
const FEW_CYCLES: usize = 6;
const FEW_CYCLES_AGREE: f64 = 0.12;
/// ... or within two driver windows, whichever is more.
const FEW_CYCLES_SLACK_S: f64 = 0.4;

/// Below this share of regular spacings a period may be half of a cycle of two uneven waits.
const UNEVEN_REGULARITY: f64 = 0.75;
/// How much stronger the cycle's autocorrelation must be, and how regular every other dip start,
/// for the cycle to replace such a period.
const PAIRED_ACF_MARGIN: f64 = 0.2;
const PAIRED_REGULARITY: f64 = 0.9;
/// The cycle's autocorrelation a search for two dips to a cycle needs on its own (H200 run 10's
/// out-of-step workers: 0.5).
const PAIRED_ACF_MIN: f64 = 0.45;

/// The most waits to a cycle searched for (workers out of step).
const MAX_WAITS: usize = 3;

/// Whether the spacings of the latest dip starts repeat a pattern of `waits` steady values: each
/// of the `waits` series (every `waits`-th spacing) within 25% of its own median. Random dips do
/// not (taking every other start only averages their spacings out); workers out of step do (H200
/// run 10, two waits: 1.4 s, 2.6 s, 1.4 s, …).
fn waits_repeat(starts: &[f64], waits: usize) -> bool {
    let spacings: Vec<f64> = starts.windows(2).map(|w| w[1] - w[0]).collect();
    let steady = |phase: usize| {
        let mut series: Vec<f64> = spacings
            .iter()
            .skip(phase)
            .step_by(waits)
            .copied()
            .collect();
        let Some(m) = median(&mut series) else {
            return false;
        };
        let near = series
            .iter()
            .filter(|s| (**s - m).abs() <= 0.25 * m)
            .count();
        near as f64 >= PAIRED_REGULARITY * series.len() as f64
    };
    (0..waits).all(steady)
}

/// Dip starts the search for `waits` dips to a cycle needs: `min_cycles` whole cycles.
fn waits_min_starts(waits: usize, p: &SignalParams) -> usize {
    waits * p.min_cycles
}

/// Dip starts a provisional period needs: one fewer than `min_cycles`, and at least three (two
/// spacings to compare).
fn early_cycles(p: &SignalParams) -> usize {
    p.min_cycles.saturating_sub(1).max(3)
}

/// An edge of a dip between two samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DipEdge {
    /// The signal fell into a dip.
    Start = 0,
    /// A burst ended the dip.
    End = 1,
}

/// The edge of a dip as deep as a provisional period's that the step from `prev` to `u` makes,
/// when one more such edge could complete a provisional period in the window `a` describes (a
/// busy level high enough and enough such edges already), judged against the window's busy level
/// and then against the regime since a level change. A start falls from the level that ends a
/// dip to at most [`EARLY_DEPTH`] of the busy level; an end rises from at most that depth to the
/// lowest level that ends a dip in any band.
pub fn completing_edge(a: &Analysis, prev: f32, u: f32, p: &SignalParams) -> Option<DipEdge> {
    let enough =
        |h: f64, known: usize| h >= EARLY_MIN_BUSY * p.active_util && known + 1 >= early_cycles(p);
    let whole = step_edge(a.busy_level, prev, u, p)
        .filter(|edge| enough(a.busy_level, edge_count(&a.dips, *edge)));
    whole.or_else(|| {
        let r = a.regime?;
        step_edge(r.busy_level, prev, u, p).filter(|edge| enough(r.busy_level, r.edges(*edge)))
    })
}

/// How many of `dips` have this edge in the window: a start (not open at the window's start), or
/// an end.
fn edge_count(dips: &[Dip], edge: DipEdge) -> usize {
    match edge {
        DipEdge::Start => dips.iter().filter(|d| !d.open_start).count(),
        DipEdge::End => dips.iter().filter(|d| d.end.is_some()).count(),
    }
}

/// The dip edge the step from `prev` to `u` makes against busy level `h`, if any.
fn step_edge(h: f64, prev: f32, u: f32, p: &SignalParams) -> Option<DipEdge> {
    let (prev, u) = (prev as f64, u as f64);
    if prev >= p.dip_leave * h && u <= EARLY_DEPTH * h {
        Some(DipEdge::Start)
    } else if prev <= EARLY_DEPTH * h && u > BURST_BAND.1 * p.dip_leave * h {
        Some(DipEdge::End)
    } else {
        None
    }
}

/// The latest dip edges (starts or ends) a provisional period needs, when their spacings agree as
/// a provisional period's must (see [`early_checks`]) and the window has more edges than those
/// (or `all_new`: the edges were not searched as a whole). Returns them with their mean spacing.
fn early_tail<'a>(edges: &'a [f64], all_new: bool, p: &SignalParams) -> Option<(&'a [f64], f64)> {
    let k = early_cycles(p);
    let from = edges
        .len()
        .checked_sub(k)
        .filter(|from| all_new || *from > 0)?;
    let tail = edges.get(from..)?;
    even_spacing(tail)
        .filter(|mean| *mean >= EARLY_MIN_PERIOD_S)
        .map(|mean| (tail, mean))
}

/// A provisional period of the latest dips is not taken when the window holds this many dips
/// before them as long as theirs (at least half their mean length) that follow no period:
/// a few dips in a row spaced evenly by chance among random stalls (warm-up flicker, shorter
/// than the cycles' dips, does not count).
const EARLY_MAX_EARLIER: usize = 3;

/// Dips of the window that began (`by_end`: ended) before `from` and are at least half as long
/// as the mean of those that began (ended) at or after it.
fn dips_before_tail(dips: &[Dip], from: f64, by_end: bool) -> usize {
    let at = |d: &Dip| if by_end { d.end } else { Some(d.start) };
    let (mut sum, mut n) = (0.0, 0usize);
    for d in dips.iter().filter(|d| !d.open_start) {
        if let (Some(e), Some(t)) = (d.end, at(d)) {
            if t >= from - 1e-9 {
                sum += e - d.start;
                n += 1;
            }
        }
    }
    let Some(mean) = (n > 0).then(|| sum / n as f64) else {
        return 0;
    };
    dips.iter()
        .filter(|d| !d.open_start && at(d).is_some_and(|t| t < from - 1e-9))
        .filter(|d| d.end.is_some_and(|e| e - d.start >= 0.5 * mean))
        .count()
}

/// Whether `per`, a period below the cadence range seen over fewer than [`FEW_CYCLES`] cycles,
/// comes after [`EARLY_MAX_EARLIER`] or more of the window's `dips` that began before `from` (its
/// cycles, or the level change they follow) and are as long as those after: a few stalls evenly
/// spaced by chance among random ones, as for a provisional period (see [`dips_before_tail`]).
/// More cycles, and cadences, stand.
fn few_cycles_by_chance(dips: &[Dip], per: &Period, from: f64, p: &SignalParams) -> bool {
    per.cycles < FEW_CYCLES * per.dips_per_cycle as usize
        && per.period_s < p.early_max_period_s
        && dips_before_tail(dips, from, false) >= EARLY_MAX_EARLIER
}

/// The mean spacing of `starts` when their spacings agree within [`EARLY_AGREE`] of it (`None`
/// with fewer than two starts).
fn even_spacing(starts: &[f64]) -> Option<f64> {
    let n = starts.len().checked_sub(1).filter(|n| *n > 0)?;
    let (lo, hi, sum) = starts
        .windows(2)
        .map(|w| w[1] - w[0])
        .fold((f64::MAX, f64::MIN, 0.0), |(lo, hi, sum), sp| {
            (lo.min(sp), hi.max(sp), sum + sp)
        });
    let mean = sum / n as f64;
    (hi - lo <= EARLY_AGREE * mean).then_some(mean)
}

/// Whether a provisional period (fewer than `min_cycles` cycles, the latest dips of the window)
/// is trusted: a long period below the cadence range, spacings that agree closely, every dip of
/// the cycles deep, and a large share of the time since the first dip lost.
#[allow(clippy::too_many_arguments)]
fn early_checks(
    ts: &[f64],
    us: &[f32],
    h: f64,
    dips: &[Dip],
    edges: &[f64],
    per: &Period,
    whole_hist: Option<&[u32; 101]>,
    p: &SignalParams,
) -> bool {
    if per.period_s < EARLY_MIN_PERIOD_S
        || per.period_s >= p.early_max_period_s
        || h < EARLY_MIN_BUSY * p.active_util
    {
        return false;
    }
    // The edges of the cycles (in time order).
    let run = &edges[edges.partition_point(|s| *s < per.first_start)..];
    if even_spacing(run).is_none() {
        return false;
    }
    let deep = dips
        .iter()
        .filter(|d| !d.open_start && d.start >= per.first_start)
        .all(|d| {
            let a = ts.partition_point(|t| *t < d.start);
            let b = d.end.map_or(ts.len(), |e| ts.partition_point(|t| *t < e));
            let inside = &us[a..b.max(a + 1).min(us.len())];
            let mean = inside.iter().map(|u| *u as f64).sum::<f64>() / inside.len().max(1) as f64;
            mean <= EARLY_DEPTH * h
        });
    if !deep {
        return false;
    }
    // The cycles' closed dips last about as long as each other (a loader's wait is its period
    // less the step): random stalls of random lengths do not.
    let (lo, hi, sum, n) = dips
        .iter()
        .filter(|d| !d.open_start && d.start >= per.first_start)
        .filter_map(|d| d.end.map(|e| e - d.start))
        .fold((f64::MAX, f64::MIN, 0.0, 0usize), |(lo, hi, sum, n), l| {
            (lo.min(l), hi.max(l), sum + l, n + 1)
        });
    if n >= 2 && hi - lo > (EARLY_DIP_AGREE * sum / n as f64).max(FEW_CYCLES_SLACK_S) {
        return false;
    }
    let from = ts.partition_point(|t| *t < per.first_start);
    let m = (ts.len() - from).max(1);
    shortfall_from(us, from, h, whole_hist) / (h * m as f64) >= EARLY_MIN_LOST
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> SignalParams {
        SignalParams {
            dip_enter: 0.5,
            dip_leave: 0.8,
            min_cycles: 4,
            acf_min: 0.3,
            period_agree: 0.2,
            active_util: 5.0,
            recent_s: 20.0,
            min_period_s: 1.0,
            early_max_period_s: 8.0,
        }
    }

    fn square(period: f64, busy: f64, secs: f64) -> (Vec<f64>, Vec<f32>) {
        let mut ts = Vec::new();
        let mut us = Vec::new();
        let mut t = 0.0;
        while t < secs {
            ts.push(t);
            us.push(if (t % period) < busy { 100.0 } else { 0.0 });
            t += 0.25;
        }
        (ts, us)
    }

    #[test]
    fn a_square_wave_has_its_period_and_lost_fraction() {
        let (ts, us) = square(2.0, 1.2, 40.0);
        let a = analyse(&ts, &us, &params());
        let p = a.period.expect("periodic");
        assert!((p.period_s - 2.0).abs() < 0.15, "{p:?}");
        assert!((a.lost_fraction - 0.4).abs() < 0.05, "{}", a.lost_fraction);
        assert!((a.dip_s.expect("dips") - 0.8).abs() < 0.26);
    }

    #[test]
    fn two_waits_to_a_cycle_give_the_cycle_not_erratic_stalls() {
        // Two workers out of step (H200 run 10): a one-window burst at 0 s and at 1.4 s of every
        // 4 s cycle, driver windows every 0.2 s, 36 s. The spacings alternate 1.4 / 2.6 s.
        let (mut ts, mut us) = (Vec::new(), Vec::new());
        for i in 0..180 {
            let t = i as f64 * 0.2;
            let phase = t % 4.0;
            let burst = phase < 0.1 || (1.35..1.55).contains(&phase);
            ts.push(t);
            us.push(if burst { 16.0 } else { 0.0 });
        }
        let a = analyse(&ts, &us, &params());
        let p = a.period.expect("the cycle");
        assert!((p.period_s - 4.0).abs() < 0.2, "{p:?}");
        assert_eq!(p.dips_per_cycle, 2, "{p:?}");
        assert!(a.lost_fraction > 0.8, "{}", a.lost_fraction);
        // Evenly spaced bursts keep one wait to a cycle.
        let even: Vec<f32> = ts
            .iter()
            .map(|t| if t % 2.0 < 0.1 { 16.0 } else { 0.0 })
            .collect();
        let p = analyse(&ts, &even, &params()).period.expect("periodic");
        assert!(
            (p.period_s - 2.0).abs() < 0.2 && p.dips_per_cycle == 1,
            "{p:?}"
        );
    }

    #[test]
    fn three_waits_to_a_cycle_give_the_cycle_not_erratic_stalls() {
        // Three workers out of step: a one-window burst at 0, 1.0 and 3.2 s of every 4.8 s cycle
        // (spacings 1.0 / 2.2 / 1.6 s), driver windows every 0.2 s, 60 s.
        let (mut ts, mut us) = (Vec::new(), Vec::new());
        for i in 0..300 {
            let t = i as f64 * 0.2;
            let phase = t % 4.8;
            let burst = [0.0, 1.0, 3.2].iter().any(|b| (phase - b).abs() < 0.05);
            ts.push(t);
            us.push(if burst { 20.0 } else { 0.0 });
        }
        let a = analyse(&ts, &us, &params());
        let p = a.period.expect("the cycle");
        assert!((p.period_s - 4.8).abs() < 0.25, "{p:?}");
        assert_eq!(p.dips_per_cycle, 3, "{p:?}");
        assert!(a.lost_fraction > 0.8, "{}", a.lost_fraction);
        // The same three waits over fewer than four cycles: no period yet.
        let n = (3.0 * 4.8 / 0.2) as usize;
        let short = analyse(&ts[..n], &us[..n], &params());
        assert!(
            short.period.is_none_or(|p| p.dips_per_cycle == 1),
            "{short:?}"
        );
    }

    #[test]
    fn a_warm_up_before_three_even_dips_does_not_hide_their_provisional_period() {
        // 4 s of warm-up flicker (short dips every 0.5 s), then a burst of 0.4 s every 5.5 s
        // (from 5.0, 10.5 and 16.0 s). The window ends just after the third long dip began
        // (16.8 s), or as early as the third burst began (16.2 s): the ends of the long dips
        // then show the cycles.
        for end in [16.8, 16.2] {
            let (mut ts, mut us) = (Vec::new(), Vec::new());
            let mut t = 0.0;
            while t < end {
                let u = if t < 4.0 {
                    if t % 0.5 < 0.25 {
                        60.0
                    } else {
                        0.0
                    }
                } else if t >= 5.0 && (t - 5.0) % 5.5 < 0.4 {
                    90.0
                } else {
                    0.0
                };
                ts.push(t);
                us.push(u);
                t += 0.2;
            }
            let a = analyse(&ts, &us, &params());
            let p = a.period.expect("a provisional period");
            assert!(p.provisional && p.cycles == 3, "{end}: {p:?}");
            assert!((p.period_s - 5.5).abs() < 0.3, "{end}: {p:?}");
            // Its dips are the long ones, not the warm-up's.
            assert!(a.dip_s.is_some_and(|d| d > 4.5), "{end}: {:?}", a.dip_s);
        }
        // One burst earlier (the second long dip not yet ended) there is nothing to go on.
        let (ts, us): (Vec<f64>, Vec<f32>) = (0..80)
            .map(|i| {
                let t = i as f64 * 0.2;
                let on = (t < 4.0 && t % 0.5 < 0.25) || (t >= 5.0 && (t - 5.0) % 5.5 < 0.4);
                (t, if on { 90.0 } else { 0.0 })
            })
            .unzip();
        assert_eq!(analyse(&ts, &us, &params()).period, None);
    }

    #[test]
    fn flat_signals_have_no_dips_and_no_period() {
        let ts: Vec<f64> = (0..200).map(|i| i as f64 * 0.25).collect();
        let us = vec![100.0f32; 200];
        let a = analyse(&ts, &us, &params());
        assert!(a.dips.is_empty());
        assert_eq!(a.period, None);
        assert_eq!(a.lost_fraction, 0.0);
        let idle = analyse(&ts, &vec![0.0f32; 200], &params());
        assert_eq!(idle.busy_level, 0.0);
    }

    #[test]
    fn kept_histograms_give_the_same_analysis() {
        let p = params();
        let mut cases = vec![square(1.7, 0.7, 90.0), square(9.0, 6.0, 90.0)];
        // Fractional readings: the sums then walk the samples.
        let (ts, us) = square(2.3, 1.1, 90.0);
        cases.push((ts, us.iter().map(|u| u * 0.37 + 0.5).collect()));
        for (ts, us) in cases {
            let mut hist = WindowHist::new(p.active_util);
            // Samples that left the window before.
            for u in [3.0, 97.5, 100.0] {
                hist.add(u);
                hist.remove(u);
            }
            us.iter().for_each(|u| hist.add(*u));
            let kept = analyse_window(&ts, &us, &p, Some(&hist), &mut Scratch::default());
            let plain = analyse(&ts, &us, &p);
            assert_eq!(format!("{kept:?}"), format!("{plain:?}"));
            assert_eq!(kept.lost_fraction.to_bits(), plain.lost_fraction.to_bits());
            assert_eq!(kept.mean.to_bits(), plain.mean.to_bits());
        }
        let (_, us) = square(1.7, 0.7, 90.0);
        for h in [0.0, 37.0, 100.0] {
            let float = us.iter().map(|&u| (h - u as f64).max(0.0)).sum::<f64>();
            assert_eq!(shortfall(&us, h, true).to_bits(), float.to_bits());
            assert_eq!(shortfall(&us[..1], h, true).to_bits(), {
                let one: f64 = us[..1].iter().map(|&u| (h - u as f64).max(0.0)).sum();
                one.to_bits()
            });
        }
    }

    #[test]
    fn lagged_sums_equal_the_plain_sums_bit_for_bit() {
        let grid: Vec<f64> = (0..457)
            .map(|i| ((i * 37 % 101) as f64 * 0.731).sin() * 41.3 - 3.7)
            .collect();
        let mut sums = Vec::new();
        for max_lag in [0, 1, 7, 8, 9, 23, 300, 456] {
            lagged_sums(&grid, max_lag, &mut sums);
            assert_eq!(sums.len(), max_lag + 1);
            for (lag, s) in sums.iter().enumerate() {
                assert_eq!(s.to_bits(), lagged_sum(&grid, lag).to_bits(), "lag {lag}");
            }
        }
        lagged_sums(&[], 3, &mut sums);
        assert!(sums.is_empty());
    }

    /// The time-weighted mean of the readings over each cell, from every cell's own overlaps (the
    /// held readings walked for each cell; one out of order holds from the latest time seen).
    fn resample_by_cell(ts: &[f64], us: &[f32], mean: f64, grid_s: f64, m: usize) -> Vec<f64> {
        let t0 = ts[0];
        let end = t0 + m as f64 * grid_s;
        // Where each reading's hold begins: its time, or the latest time seen before it.
        let starts: Vec<f64> = ts
            .iter()
            .scan(f64::MIN, |latest, t| {
                *latest = latest.max(*t);
                Some(*latest)
            })
            .collect();
        (0..m)
            .map(|k| {
                let (a, b) = (t0 + k as f64 * grid_s, t0 + (k + 1) as f64 * grid_s);
                let mut area = 0.0;
                for i in 0..ts.len() {
                    let to = if i + 1 < ts.len() { starts[i + 1] } else { end };
                    let overlap = (to.min(b) - starts[i].max(a)).max(0.0);
                    area += (us[i] as f64 - mean) * overlap;
                }
                area / grid_s
            })
            .collect()
    }

    #[test]
    fn resampling_weighs_every_reading_by_the_time_it_holds() {
        let mut grid = Vec::new();
        // Regular, jittered, repeated and out-of-order times; grids finer and coarser than them.
        let mut cases: Vec<Vec<f64>> = vec![
            (0..360).map(|i| 1000.0 + i as f64 * 0.25).collect(),
            (0..450).map(|i| 7.3 + i as f64 * 0.2).collect(),
            (0..300)
                .map(|i| 50.0 + i as f64 * 0.1 + ((i * 7919 % 13) as f64 - 6.0) * 0.004)
                .collect(),
        ];
        let mut odd: Vec<f64> = (0..200).map(|i| i as f64 * 0.25).collect();
        odd[50] = odd[49];
        odd[120] = odd[118];
        cases.push(odd);
        for ts in cases {
            let us: Vec<f32> = (0..ts.len()).map(|i| (i * 37 % 101) as f32).collect();
            let span = ts[ts.len() - 1] - ts[0];
            for grid_s in [GRID_S, 0.25, 0.1, 1.37] {
                let m = (span / grid_s).floor() as usize + 1;
                for mean in [0.0, 41.7] {
                    resample(&ts, &us, mean, grid_s, m, &mut grid);
                    let want = resample_by_cell(&ts, &us, mean, grid_s, m);
                    assert_eq!(grid.len(), m);
                    for (k, (g, w)) in grid.iter().zip(&want).enumerate() {
                        assert!((g - w).abs() < 1e-6, "grid {grid_s} mean {mean} cell {k}");
                    }
                }
            }
        }
    }

    /// Driver windows 199.99 ms apart on a 0.2 s grid drift against it: each burst of one window
    /// still shows in the grid, at its full height where its window covers a cell, and the
    /// grid's mean is the readings' time-weighted mean.
    #[test]
    fn resampling_keeps_one_window_bursts_that_fall_between_points() {
        let ts: Vec<f64> = (0..500).map(|i| 100.0 + i as f64 * 0.19999).collect();
        let us: Vec<f32> = (0..500)
            .map(|i| if i % 21 == 5 { 22.0 } else { 0.0 })
            .collect();
        let m = ((ts[499] - ts[0]) / GRID_S).floor() as usize + 1;
        let mut grid = Vec::new();
        resample(&ts, &us, 0.0, GRID_S, m, &mut grid);
        for (i, t) in ts.iter().enumerate().filter(|(i, _)| i % 21 == 5) {
            let k = ((t - ts[0]) / GRID_S) as usize;
            let around = grid[k] + grid.get(k + 1).copied().unwrap_or(0.0);
            assert!((around - 22.0).abs() < 0.01, "window {i}: {around}");
        }
        let area: f64 = grid.iter().sum::<f64>() * GRID_S;
        let held: f64 = (0..499)
            .map(|i| us[i] as f64 * (ts[i + 1] - ts[i]))
            .sum::<f64>()
            + us[499] as f64 * (ts[0] + m as f64 * GRID_S - ts[499]);
        assert!((area - held).abs() < 1e-6, "{area} {held}");
    }

    #[test]
    fn median_by_selection_equals_the_sorted_median() {
        for len in 0..40usize {
            let v: Vec<f64> = (0..len)
                .map(|i| ((i * 53 % 17) as f64 * 0.37).sin() * 3.0 + (i % 3) as f64)
                .collect();
            let mut sorted = v.clone();
            sorted.sort_by(|a, b| a.total_cmp(b));
            let want = (!sorted.is_empty()).then(|| {
                let m = sorted.len() / 2;
                if sorted.len() % 2 == 1 {
                    sorted[m]
                } else {
                    (sorted[m - 1] + sorted[m]) / 2.0
                }
            });
            let got = median(&mut v.clone());
            assert_eq!(got.map(f64::to_bits), want.map(f64::to_bits), "len {len}");
        }
    }

    #[test]
    fn histogram_percentiles() {
        let mut h = [1u32; 101];
        h[100] = 0;
        assert_eq!(percentile_hist(&h, 100, 0.9), 89.0);
        assert_eq!(percentile_hist(&h, 100, 0.05), 4.0);
    }
}
