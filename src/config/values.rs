//! Values as the command line and the config file write them: durations (`250ms`, `10m`),
//! sampling intervals, history kept, chart windows and listen addresses. One parser (and one
//! range) each, so both places accept the same.

use std::net::SocketAddr;

/// The longest duration any option takes: a year. Longer ones are typing errors, and would
/// overflow the clock arithmetic of a deadline.
pub const MAX_DURATION_S: f64 = 365.0 * 86_400.0;
/// The shortest: a millisecond, the finest step any timer here takes.
pub const MIN_DURATION_S: f64 = 0.001;
/// Sampling interval, seconds: at least this and at most [`INTERVAL_MAX_S`].
pub const INTERVAL_MIN_S: f64 = 0.1;
pub const INTERVAL_MAX_S: f64 = 10.0;
/// History kept, seconds. Memory grows with it (every tick of every GPU is kept).
pub const RETENTION_MIN_S: f64 = 60.0;
pub const RETENTION_MAX_S: f64 = 6.0 * 3600.0;
/// Chart window at start, seconds: from the shortest zoom step, and never past the retention.
pub const WINDOW_MIN_S: f64 = 10.0;

/// Parse a duration such as `250ms`, `1.5s`, `2m`, `1h`, `1d` or a bare number of seconds: from a
/// millisecond to a year.
pub fn parse_duration(s: &str) -> Result<f64, String> {
    let secs = parse_seconds(s)?;
    let shown = crate::printable::text(s);
    if secs > MAX_DURATION_S {
        return Err(format!("'{shown}' is longer than a year; use at most 365d"));
    }
    if secs < MIN_DURATION_S {
        return Err(format!(
            "'{shown}' is shorter than a millisecond; use at least 1ms"
        ));
    }
    Ok(secs)
}

/// A positive, finite duration in seconds.
fn parse_seconds(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix('d') {
        (n, 86_400.0)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    let shown = crate::printable::text(s);
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{shown}' is not a duration; use e.g. 250ms, 1s, 2m, 1h"))?;
    let secs = v * scale;
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!("'{shown}' must be a positive duration"));
    }
    Ok(secs)
}

/// A duration within `[lo, hi]` seconds; `what` names it in the error.
fn parse_in_range(s: &str, what: &str, lo: f64, hi: f64) -> Result<f64, String> {
    let v = parse_seconds(s)?;
    if !(lo..=hi).contains(&v) {
        return Err(format!(
            "{what} '{}' is out of range; use {} to {}",
            crate::printable::text(s),
            format_duration(lo),
            format_duration(hi)
        ));
    }
    Ok(v)
}

/// A sampling interval: a duration between 100 ms and 10 s.
pub fn parse_interval(s: &str) -> Result<f64, String> {
    parse_in_range(s, "interval", INTERVAL_MIN_S, INTERVAL_MAX_S)
}

/// History kept: a duration between 1 min and 6 h.
pub fn parse_retention(s: &str) -> Result<f64, String> {
    parse_in_range(s, "retention", RETENTION_MIN_S, RETENTION_MAX_S)
}

/// A chart window: a duration between 10 s and 6 h (and, once the retention is known, at most
/// the retention: [`window_fits`]).
pub fn parse_window(s: &str) -> Result<f64, String> {
    parse_in_range(s, "window", WINDOW_MIN_S, RETENTION_MAX_S)
}

/// The rule between the two: a chart cannot show more history than is kept.
pub fn window_fits(window_s: f64, retention_s: f64) -> Result<(), String> {
    if window_s > retention_s {
        return Err(format!(
            "the chart window ({}) cannot be longer than the history kept (retention {}); shorten the window or keep more history",
            format_duration(window_s),
            format_duration(retention_s)
        ));
    }
    Ok(())
}

/// Parse a listen address such as `127.0.0.1:9400` or `[::1]:9400`.
pub fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    s.trim().parse::<SocketAddr>().map_err(|_| {
        format!("'{}' is not an address to listen on; use IP:PORT, e.g. 127.0.0.1:9400 (0.0.0.0:9400 for every interface)", crate::printable::text(s))
    })
}

/// A duration as the config file writes it (`250ms`, `10m`, `90s`).
pub fn format_duration(s: f64) -> String {
    let ms = (s * 1000.0).round() as u64;
    if ms % 86_400_000 == 0 {
        format!("{}d", ms / 86_400_000)
    } else if ms % 3_600_000 == 0 {
        format!("{}h", ms / 3_600_000)
    } else if ms % 60_000 == 0 {
        format!("{}m", ms / 60_000)
    } else if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms"), Ok(0.25));
        assert_eq!(parse_duration("2m"), Ok(120.0));
        assert_eq!(parse_duration("1.5"), Ok(1.5));
        assert!(parse_duration("abc").is_err());
        assert!(parse_duration("-1s").is_err());
        assert!(parse_interval("50ms").is_err());
        assert!(parse_interval("11s").is_err());
        assert_eq!(parse_interval("10s"), Ok(10.0));
    }

    #[test]
    fn huge_negative_and_odd_durations_are_refused_with_the_range() {
        for bad in [
            "1e300", "inf", "NaN", "-0", "0", "-5m", "2y", "", " ", "1e-300",
        ] {
            assert!(
                parse_duration(bad).is_err() || parse_window(bad).is_err(),
                "{bad:?}"
            );
        }
        assert_eq!(parse_duration("1d"), Ok(86_400.0));
        assert!(parse_duration("366d")
            .expect_err("too long")
            .contains("longer than a year"));
        let e = parse_retention("1e300").expect_err("huge");
        assert!(
            e.contains("retention '1e300' is out of range; use 1m to 6h"),
            "{e}"
        );
        assert!(parse_duration("1e300")
            .expect_err("huge")
            .contains("longer than a year"));
        let e = parse_retention("7h").expect_err("too long");
        assert!(
            e.contains("retention '7h' is out of range; use 1m to 6h"),
            "{e}"
        );
        let e = parse_window("1s").expect_err("too short");
        assert!(
            e.contains("window '1s' is out of range; use 10s to 6h"),
            "{e}"
        );
        assert_eq!(parse_window("2h"), Ok(7200.0));
        let e = window_fits(7200.0, 600.0).expect_err("longer than the retention");
        assert!(e.contains("(2h)") && e.contains("retention 10m"), "{e}");
        assert_eq!(window_fits(600.0, 600.0), Ok(()));
        let e = parse_duration("\x1b[2J").expect_err("not a duration");
        assert!(!e.contains('\x1b'), "{e:?}");
    }

    #[test]
    fn durations_round_trip_through_the_file_format() {
        for (s, text) in [
            (0.25, "250ms"),
            (86_400.0, "1d"),
            (600.0, "10m"),
            (90.0, "90s"),
            (3600.0, "1h"),
        ] {
            assert_eq!(format_duration(s), text);
            assert_eq!(parse_duration(text), Ok(s));
        }
    }
}
