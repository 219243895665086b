//! The signal analysis on constructed windows.

use super::grid::{lagged_sum, lagged_sums, resample};
use super::hist::{median, shortfall};
use super::*;

fn params() -> DetectorConfig {
    DetectorConfig {
        acf_min: 0.3,
        ..Default::default()
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
    // Two workers out of step: a one-window burst at 0 s and at 1.4 s of every
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
        let mut hist = WindowHist::new(p.idle_util);
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
