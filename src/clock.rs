//! Wall-clock time as Unix seconds.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::model::UnixTime;

/// Now, as Unix seconds.
pub fn now() -> UnixTime {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// CPU time this thread has used, seconds (`None` where the clock cannot be read).
pub fn thread_cpu_s() -> Option<f64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9)
}

/// Unix seconds as RFC 3339 in UTC with milliseconds, e.g. `2023-11-14T22:13:20.250Z`.
pub fn rfc3339(t: UnixTime) -> String {
    let ms = (t * 1000.0).round() as i64;
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(ts) => format!("{ts:.3}"),
        Err(_) => "1970-01-01T00:00:00.000Z".to_string(),
    }
}

/// The time of day (UTC) of Unix seconds, `HH:MM:SS`.
pub fn time_of_day_utc(t: UnixTime) -> String {
    if !t.is_finite() {
        return "--:--:--".to_string();
    }
    let secs = (t.floor() as i64).rem_euclid(86_400);
    format!(
        "{:02}:{:02}:{:02}",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_is_utc_with_milliseconds() {
        assert_eq!(rfc3339(1_700_000_000.25), "2023-11-14T22:13:20.250Z");
        assert_eq!(rfc3339(0.0), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn time_of_day_is_utc() {
        assert_eq!(time_of_day_utc(1_700_000_000.25), "22:13:20");
        assert_eq!(time_of_day_utc(f64::NAN), "--:--:--");
    }
}
