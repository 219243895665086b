//! Timestamps of the logs to Unix seconds: nvidia-smi's local civil time, ISO-8601, Unix
//! seconds, and `nvidia-smi dmon`'s date and time of day.

use std::collections::HashMap;

use crate::model::UnixTime;

/// The date taken for a time of day logged without one (`nvidia-smi dmon -o T`): 1970-01-01.
pub(super) const NO_DATE: (i16, i8, i8) = (1970, 1, 1);

/// Unix times before this are not read from a bare number (a count or a reading, not a time):
/// 2001-09-09.
const UNIX_MIN_S: f64 = 1e9;

/// Local civil time → Unix seconds, caching the start of each local hour.
#[derive(Debug)]
pub(super) struct LocalClock {
    tz: jiff::tz::TimeZone,
    cache: HashMap<(i16, i8, i8, i8), i64>,
    /// The last timestamp text and its value: the rows of one sample (one per GPU) share it.
    last_text: Vec<u8>,
    last_value: UnixTime,
}

impl LocalClock {
    /// A clock in the system's time zone (`TZ` applies).
    pub(super) fn new() -> Self {
        LocalClock {
            tz: jiff::tz::TimeZone::system(),
            cache: HashMap::new(),
            last_text: Vec::new(),
            last_value: 0.0,
        }
    }

    /// [`Self::parse_text`], remembering the last answer.
    pub(super) fn parse(&mut self, s: &str) -> Option<UnixTime> {
        let b = s.trim().as_bytes();
        if !b.is_empty() && b == self.last_text.as_slice() {
            return Some(self.last_value);
        }
        let v = self.parse_text(s.trim())?;
        self.last_text.clear();
        self.last_text.extend_from_slice(b);
        self.last_value = v;
        Some(v)
    }

    /// nvidia-smi's `2026/12/02 13:28:37.117` (or with `-` between date parts) in local time,
    /// else ISO-8601 (`2026-12-02T13:28:37.117Z`, an offset, or none: local time), else Unix
    /// seconds (`1796218117.117`; milliseconds past 10^11).
    fn parse_text(&mut self, s: &str) -> Option<UnixTime> {
        self.parse_smi(s)
            .or_else(|| self.parse_iso(s))
            .or_else(|| parse_unix(s))
    }

    /// `2026/12/02 13:28:37.117`.
    fn parse_smi(&mut self, s: &str) -> Option<UnixTime> {
        let b = s.as_bytes();
        if b.len() < 19 || !matches!(b[4], b'/' | b'-') || !matches!(b[10], b' ' | b'T') {
            return None;
        }
        let (y, mo, da) = (digits(b, 0, 4)?, digits(b, 5, 2)?, digits(b, 8, 2)?);
        if b[7] != b[4] {
            return None;
        }
        let tod = time_of_day(&s[11..19])?;
        let frac = match b.get(19) {
            None => 0.0,
            Some(b'.') => fraction(&s[20..])?,
            Some(_) => return None,
        };
        self.civil((y as i16, mo as i8, da as i8), tod + frac)
    }

    /// ISO-8601 with a `T` or a space, and an offset or `Z` (else local time).
    fn parse_iso(&mut self, s: &str) -> Option<UnixTime> {
        if let Ok(ts) = s.parse::<jiff::Timestamp>() {
            return Some(ts.as_nanosecond() as f64 / 1e9);
        }
        let dt: jiff::civil::DateTime = s.parse().ok()?;
        let z = dt.to_zoned(self.tz.clone()).ok()?;
        Some(z.timestamp().as_nanosecond() as f64 / 1e9)
    }

    /// Seconds `secs` into the local day `date` (`secs` may pass midnight).
    pub(super) fn civil(&mut self, date: (i16, i8, i8), secs: f64) -> Option<UnixTime> {
        if !(0.0..86_400.0 * 2.0).contains(&secs) {
            return None;
        }
        let whole = secs.floor();
        let (hour, rest) = ((whole / 3600.0) as i64, whole % 3600.0);
        let (day_add, h) = (hour / 24, (hour % 24) as i8);
        let key = (date.0, date.1, date.2, h);
        let start = match self.cache.get(&key) {
            Some(v) => *v,
            None => {
                let dt = jiff::civil::DateTime::new(key.0, key.1, key.2, h, 0, 0, 0).ok()?;
                let v = dt.to_zoned(self.tz.clone()).ok()?.timestamp().as_second();
                if self.cache.len() > 10_000 {
                    self.cache.clear();
                }
                self.cache.insert(key, v);
                v
            }
        };
        Some(start as f64 + (day_add * 86_400) as f64 + rest + (secs - whole))
    }
}

/// `n` decimal digits of `b` from `at`.
fn digits(b: &[u8], at: usize, n: usize) -> Option<i64> {
    let mut v = 0i64;
    for &c in b.get(at..at + n)? {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + (c - b'0') as i64;
    }
    Some(v)
}

/// Up to nine digits after a decimal point, as a fraction.
fn fraction(d: &str) -> Option<f64> {
    if d.is_empty() || d.len() > 9 || !d.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some(d.parse::<u64>().ok()? as f64 / 10f64.powi(d.len() as i32))
}

/// `HH:MM:SS` as seconds into the day.
pub(super) fn time_of_day(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    if b.len() != 8 || b[2] != b':' || b[5] != b':' {
        return None;
    }
    let (h, m, sec) = (digits(b, 0, 2)?, digits(b, 3, 2)?, digits(b, 6, 2)?);
    (h < 24 && m < 60 && sec <= 60).then(|| (h * 3600 + m * 60 + sec) as f64)
}

/// `YYYYMMDD`.
pub(super) fn date8(s: &str) -> Option<(i16, i8, i8)> {
    let b = s.as_bytes();
    if b.len() != 8 {
        return None;
    }
    let (y, m, d) = (digits(b, 0, 4)?, digits(b, 4, 2)?, digits(b, 6, 2)?);
    ((1..=12).contains(&m) && (1..=31).contains(&d)).then_some((y as i16, m as i8, d as i8))
}

/// Unix seconds (or milliseconds, past 10^11) from 2001 on.
fn parse_unix(s: &str) -> Option<UnixTime> {
    if !s.bytes().all(|c| c.is_ascii_digit() || c == b'.') {
        return None;
    }
    let v: f64 = s.parse().ok()?;
    let secs = if v >= 1e11 { v / 1000.0 } else { v };
    (secs >= UNIX_MIN_S && secs.is_finite()).then_some(secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_timestamp_shape_reads_as_the_same_instant() {
        std::env::set_var("TZ", "UTC");
        let mut c = LocalClock::new();
        let want = 1_796_218_117.117;
        for s in [
            "2026/12/02 13:28:37.117",
            "2026-12-02 13:28:37.117",
            "2026-12-02T13:28:37.117Z",
            "2026-12-02T14:28:37.117+01:00",
            "2026-12-02T13:28:37.117",
            "1796218117.117",
            "1796218117117",
        ] {
            let got = c.parse(s).unwrap_or(f64::NAN);
            assert!((got - want).abs() < 1e-6, "{s}: {got}");
        }
        for bad in [
            "13:28:37",
            "42",
            "2026/12/02",
            "2026/12-02 13:28:37",
            "yesterday",
        ] {
            assert_eq!(c.parse(bad), None, "{bad}");
        }
        assert_eq!(time_of_day("13:28:37"), Some(48517.0));
        assert_eq!(date8("20261202"), Some((2026, 12, 2)));
        let midnight = c.civil(NO_DATE, 86_400.0 + 5.0);
        assert_eq!(midnight, Some(86_405.0));
    }
}
