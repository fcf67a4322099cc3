//! The wall clock, read by the adapters (the domain never reads it).

use mq_core::Timestamp;
use std::time::{SystemTime, UNIX_EPOCH};

pub(crate) fn now() -> Timestamp {
    Timestamp::from_millis(i64::try_from(since_epoch().as_millis()).unwrap_or(i64::MAX))
}

/// Seconds since the epoch: what GitHub's tokens and rate limits count in.
#[cfg(feature = "github")]
pub(crate) fn unix_seconds() -> u64 {
    since_epoch().as_secs()
}

fn since_epoch() -> std::time::Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}
