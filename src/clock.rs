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
