//! Values as the command line and the config file write them: durations (`250ms`, `10m`),
//! sampling intervals and listen addresses. One parser each, so both places accept the same.

use std::net::SocketAddr;

/// Parse a duration such as `250ms`, `1.5s`, `2m`, `1h` or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a duration; use e.g. 250ms, 1s, 2m, 1h"))?;
    if !v.is_finite() || v <= 0.0 {
        return Err(format!("'{s}' must be a positive duration"));
    }
    Ok(v * scale)
}

/// A sampling interval: a duration between 100 ms and 10 s.
pub fn parse_interval(s: &str) -> Result<f64, String> {
    let v = parse_duration(s)?;
    if !(0.1..=10.0).contains(&v) {
        return Err(format!("interval '{s}' is out of range; use 100ms to 10s"));
    }
    Ok(v)
}

/// Parse a listen address such as `127.0.0.1:9400` or `[::1]:9400`.
pub fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    s.trim().parse::<SocketAddr>().map_err(|_| {
        format!("'{s}' is not an address to listen on; use IP:PORT, e.g. 127.0.0.1:9400 (0.0.0.0:9400 for every interface)")
    })
}

/// A duration as the config file writes it (`250ms`, `10m`, `90s`).
pub fn format_duration(s: f64) -> String {
    let ms = (s * 1000.0).round() as u64;
    if ms % 3_600_000 == 0 {
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
    fn durations_round_trip_through_the_file_format() {
        for (s, text) in [
            (0.25, "250ms"),
            (600.0, "10m"),
            (90.0, "90s"),
            (3600.0, "1h"),
        ] {
            assert_eq!(format_duration(s), text);
            assert_eq!(parse_duration(text), Ok(s));
        }
    }
}
