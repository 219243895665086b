//! The resampled grid the autocorrelation runs on, and its lagged sums.

/// Finest step of the resampled grid the autocorrelation runs on (the H200's driver window).
pub const GRID_S: f64 = 0.2;

/// The most cells a grid is built with. A window spans at most `window_s` (an hour: 18,000
/// cells); a longer span comes from damaged times, and a grid sized from it would take memory
/// without bound, so it has no period.
pub const MAX_CELLS: usize = 1 << 17;

/// The period search's grid and what it was built from within the current analysis (the mean's
/// and the step's bits, and the cell count): the bands and the searches of the latest dip edges
/// use the same one.
#[derive(Debug, Default)]
pub(super) struct Grid {
    pub cells: Vec<f64>,
    pub built: Option<(u64, u64, usize)>,
}

/// Buffers of the autocorrelation: the grid, the lagged sums, and the correlations searched.
#[derive(Debug, Default)]
pub(super) struct AcfBuffers {
    pub grid: Grid,
    pub sums: Vec<f64>,
    pub rs: Vec<f64>,
}

/// Σ `grid[i]·grid[i + lag]` over `i < len − lag`, added in index order from −0.0 (the value
/// `Iterator::sum` gives).
pub(super) fn lagged_sum(grid: &[f64], lag: usize) -> f64 {
    let n = grid.len().saturating_sub(lag);
    grid[..n].iter().zip(&grid[lag..]).map(|(a, b)| a * b).sum()
}

/// [`lagged_sum`] for every lag in `0..=max_lag`, bit for bit: each lag still adds its products in
/// index order, but several lags advance together in one pass over the grid (independent sums,
/// so the additions overlap instead of waiting on each other).
pub(super) fn lagged_sums(grid: &[f64], max_lag: usize, out: &mut Vec<f64>) {
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
/// and taking one reading per point would drop the reading whose hold fell between two points, a
/// one-window burst included. Each cell is the difference of the readings' running integral at
/// its two ends. (Not inlined: on its own the loop keeps its values in registers.)
#[inline(never)]
pub(super) fn resample(
    ts: &[f64],
    us: &[f32],
    mean: f64,
    grid_s: f64,
    m: usize,
    grid: &mut Vec<f64>,
) {
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

/// The strongest autocorrelation peak between half and one and a half `spacing`, on a grid of
/// `ts`/`us` less `mean`.
#[derive(Debug, Clone, Copy)]
pub(super) struct AcfPeak {
    /// The lag of the peak, refined between grid cells (seconds).
    pub lag_s: f64,
    /// The autocorrelation there (0..1).
    pub r: f64,
    /// The strongest autocorrelation within a step or two of half the lag.
    pub r_half: f64,
}

/// The autocorrelation peak near `spacing` (see [`AcfPeak`]), when there is one at least
/// `acf_min` strong: a local maximum, searched on a grid of 0.2 s (coarser for long spacings:
/// about 25 cells per spacing), refined by a parabola through it and its neighbours.
pub(super) fn acf_peak(
    ts: &[f64],
    us: &[f32],
    mean: f64,
    spacing: f64,
    acf_min: f64,
    bufs: &mut AcfBuffers,
) -> Option<AcfPeak> {
    let AcfBuffers { grid, sums, rs } = bufs;
    let t0 = ts[0];
    let grid_s = GRID_S.max(spacing / 25.0);
    let cells = ((ts[ts.len() - 1] - t0) / grid_s).floor();
    // A NaN span is refused too.
    if cells.is_nan() || cells >= MAX_CELLS as f64 {
        return None;
    }
    let m = cells.max(0.0) as usize + 1;
    let key = (mean.to_bits(), grid_s.to_bits(), m);
    if grid.built != Some(key) {
        resample(ts, us, mean, grid_s, m, &mut grid.cells);
        grid.built = Some(key);
    }
    let cells: &[f64] = &grid.cells;
    let lo = ((0.5 * spacing / grid_s).floor() as usize).max(1);
    let hi = ((1.5 * spacing / grid_s).ceil() as usize).min(m * 2 / 3);
    // Every lag the search reads (0 for the variance, half lags, lo − 1 ..= hi + 1) in one pass.
    lagged_sums(cells, (hi + 1).min(m - 1), sums);
    let var: f64 = sums[0] / m as f64;
    if var <= 1e-9 || hi <= lo + 1 {
        return None;
    }
    let acf = |lag: usize| -> f64 {
        let s = match sums.get(lag) {
            Some(s) => *s,
            None => lagged_sum(cells, lag),
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
    if best_r < acf_min || rs[i] < rs[i - 1] || rs[i] < rs[i + 1] {
        return None;
    }
    // Parabolic refinement of the peak.
    let (ym, y0, yp) = (rs[i - 1], rs[i], rs[i + 1]);
    let denom = ym - 2.0 * y0 + yp;
    let shift = if denom.abs() > 1e-12 {
        (0.5 * (ym - yp) / denom).clamp(-0.5, 0.5)
    } else {
        0.0
    };
    let lag_s = (lo - 1 + i) as f64 * grid_s + shift * grid_s;
    // The lags around half of it: the two either side, and one step further where a step is at
    // most a tenth of the period (at a 1 s period a step is a fifth of it, and a step further
    // already nears the period or zero).
    let half = lag_s / 2.0 / grid_s;
    let near = (0.1 * lag_s / grid_s).floor().min(1.0);
    let r_half = (((half - near).floor() as usize).max(1)..=(half + near).ceil() as usize)
        .map(acf)
        .fold(f64::MIN, f64::max);
    Some(AcfPeak {
        lag_s,
        r: best_r,
        r_half,
    })
}
