//! Time as the domain sees it: milliseconds since the Unix epoch, passed in by the shell.

use serde::{Deserialize, Serialize};
use std::fmt;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// A point in time, in milliseconds since the Unix epoch (UTC).
///
/// The core never reads a clock: every `Timestamp` comes from the caller.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(transparent)]
pub struct Timestamp(pub i64);

impl Timestamp {
    pub const fn from_millis(ms: i64) -> Self {
        Self(ms)
    }

    pub const fn millis(self) -> i64 {
        self.0
    }

    pub fn plus_millis(self, ms: i64) -> Self {
        Self(self.0.saturating_add(ms))
    }

    pub fn plus_minutes(self, minutes: u32) -> Self {
        self.plus_millis(i64::from(minutes) * 60_000)
    }

    /// Milliseconds from `earlier` to `self` (0 when `earlier` is later).
    pub fn millis_since(self, earlier: Timestamp) -> i64 {
        (self.0 - earlier.0).max(0)
    }

    /// RFC 3339, UTC, millisecond precision: `2026-11-22T14:16:39.123Z`.
    pub fn to_rfc3339(self) -> String {
        let nanos = i128::from(self.0) * 1_000_000;
        match OffsetDateTime::from_unix_timestamp_nanos(nanos) {
            Ok(t) => format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
                t.year(),
                u8::from(t.month()),
                t.day(),
                t.hour(),
                t.minute(),
                t.second(),
                t.millisecond()
            ),
            Err(_) => "1970-01-01T00:00:00.000Z".to_owned(),
        }
    }

    /// Parses an RFC 3339 timestamp with any offset.
    pub fn parse_rfc3339(s: &str) -> Option<Self> {
        let t = OffsetDateTime::parse(s, &Rfc3339).ok()?;
        i64::try_from(t.unix_timestamp_nanos() / 1_000_000)
            .ok()
            .map(Self)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_utc_with_milliseconds() {
        assert_eq!(
            Timestamp(1_795_356_999_123).to_rfc3339(),
            "2026-11-22T14:16:39.123Z"
        );
        assert_eq!(Timestamp(0).to_rfc3339(), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn parses_what_it_renders_and_other_offsets() {
        let t = Timestamp(1_795_356_999_123);
        assert_eq!(Timestamp::parse_rfc3339(&t.to_rfc3339()), Some(t));
        assert_eq!(
            Timestamp::parse_rfc3339("2026-11-22T15:16:39.123+01:00"),
            Some(t)
        );
        assert_eq!(Timestamp::parse_rfc3339("yesterday"), None);
    }
}
