//! The chart window's zoom steps: the zoom keys step through a fixed list of windows, cut at the
//! history kept.

/// Chart windows the zoom keys step through (seconds), cut at the retention.
pub const ZOOM_STEPS: [f64; 9] = [
    10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0,
];

/// The next shorter window (at most the shortest step).
pub fn zoom_in(w: f64) -> f64 {
    ZOOM_STEPS
        .iter()
        .rev()
        .copied()
        .find(|&s| s < w - 1e-9)
        .unwrap_or(w.min(ZOOM_STEPS[0]))
}

/// The next longer window, up to the retention.
pub fn zoom_out(w: f64, retention: f64) -> f64 {
    ZOOM_STEPS
        .iter()
        .copied()
        .find(|&s| s > w + 1e-9 && s <= retention + 1e-9)
        .unwrap_or(retention.max(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zoom_steps_stay_within_bounds() {
        assert_eq!(zoom_in(60.0), 30.0);
        assert_eq!(zoom_in(10.0), 10.0);
        assert_eq!(zoom_in(45.0), 30.0);
        assert_eq!(zoom_in(5.0), 5.0);
        assert_eq!(zoom_out(60.0, 600.0), 120.0);
        assert_eq!(zoom_out(600.0, 600.0), 600.0);
        // A retention between steps is itself the last step.
        assert_eq!(zoom_out(300.0, 450.0), 450.0);
        assert_eq!(zoom_out(450.0, 450.0), 450.0);
    }
}
