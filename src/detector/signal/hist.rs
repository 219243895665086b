//! Histograms of integer-percent readings, percentiles, medians and the shortfall below a level.

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

/// The median of `v` (reordered), `None` when empty.
pub(super) fn median(v: &mut [f64]) -> Option<f64> {
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
    pub(super) all: [u32; 101],
    /// Samples at or above `active_util`.
    pub(super) act: [u32; 101],
    pub(super) n: u32,
    pub(super) n_act: u32,
    pub(super) active_util: f64,
    /// Samples that are not whole percents in 0..=100, and the sum of those that are: with none
    /// of the former, sums over the window are exact whatever their order.
    pub(super) odd: u32,
    pub(super) whole_sum: u64,
}

impl Default for WindowHist {
    /// Histograms that no analysis uses (no activity threshold).
    fn default() -> Self {
        WindowHist::new(f64::NAN)
    }
}

/// `u` as a whole percent, when it is one.
pub(super) fn whole(u: f32) -> Option<u64> {
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

    /// Forget every sample.
    pub fn clear(&mut self) {
        *self = WindowHist::new(self.active_util);
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
pub(super) fn shortfall_from(us: &[f32], from: usize, h: f64, all: Option<&[u32; 101]>) -> f64 {
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
pub(super) fn shortfall(us: &[f32], h: f64, whole: bool) -> f64 {
    if whole && !us.is_empty() && h.fract() == 0.0 && (0.0..=100.0).contains(&h) {
        let hi = h as i64;
        let s: i64 = us.iter().map(|&u| (hi - u as i64).max(0)).sum();
        return s as f64;
    }
    us.iter().map(|&u| (h - u as f64).max(0.0)).sum::<f64>()
}
