//! nvidia-smi's timestamps: local civil time to Unix seconds.

use std::collections::HashMap;

use crate::model::UnixTime;

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
        let v = self.parse_text(s)?;
        self.last_text.clear();
        self.last_text.extend_from_slice(b);
        self.last_value = v;
        Some(v)
    }

    /// `2026/12/02 13:28:37.117` (or with `-` between date parts).
    fn parse_text(&mut self, s: &str) -> Option<UnixTime> {
        let b = s.trim().as_bytes();
        if b.len() < 19 || !matches!(b[4], b'/' | b'-') || b[10] != b' ' {
            return None;
        }
        let d = |i: usize, n: usize| -> Option<i64> {
            let mut v = 0i64;
            for &c in b.get(i..i + n)? {
                if !c.is_ascii_digit() {
                    return None;
                }
                v = v * 10 + (c - b'0') as i64;
            }
            Some(v)
        };
        let (y, mo, da, h, mi, se) = (
            d(0, 4)?,
            d(5, 2)?,
            d(8, 2)?,
            d(11, 2)?,
            d(14, 2)?,
            d(17, 2)?,
        );
        if b[13] != b':' || b[16] != b':' || mi > 59 || se > 60 {
            return None;
        }
        let mut frac = 0.0;
        if b.len() > 19 {
            if b[19] != b'.' || b.len() == 20 {
                return None;
            }
            let digits = &s.trim()[20..];
            if !digits.bytes().all(|c| c.is_ascii_digit()) || digits.len() > 9 {
                return None;
            }
            frac = digits.parse::<u64>().ok()? as f64 / 10f64.powi(digits.len() as i32);
        }
        let key = (y as i16, mo as i8, da as i8, h as i8);
        let hour = match self.cache.get(&key) {
            Some(v) => *v,
            None => {
                let dt = jiff::civil::DateTime::new(key.0, key.1, key.2, key.3, 0, 0, 0).ok()?;
                let v = dt.to_zoned(self.tz.clone()).ok()?.timestamp().as_second();
                if self.cache.len() > 10_000 {
                    self.cache.clear();
                }
                self.cache.insert(key, v);
                v
            }
        };
        Some(hour as f64 + (mi * 60 + se) as f64 + frac)
    }
}
