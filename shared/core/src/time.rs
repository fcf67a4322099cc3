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

    /// RFC 3339, UTC, millisecond precision: `2026-11-22T14:16:39.123Z`. Years outside
    /// 0..=9999 (not a date a queue sees) read as the epoch.
    pub fn to_rfc3339(self) -> String {
        let nanos = i128::from(self.0) * 1_000_000;
        let t = match OffsetDateTime::from_unix_timestamp_nanos(nanos) {
            Ok(t) if (0..=9999).contains(&t.year()) => t,
            _ => OffsetDateTime::UNIX_EPOCH,
        };
        // Written digit by digit: every response lists timestamps, and `format!` with
        // padding costs several times as much.
        let mut out = [0u8; 24];
        let fields: [(usize, u32, usize); 7] = [
            (0, t.year() as u32, 4),
            (5, u32::from(u8::from(t.month())), 2),
            (8, u32::from(t.day()), 2),
            (11, u32::from(t.hour()), 2),
            (14, u32::from(t.minute()), 2),
            (17, u32::from(t.second()), 2),
            (20, u32::from(t.millisecond()), 3),
        ];
        for (at, value, width) in fields {
            let mut v = value;
            for i in (at..at + width).rev() {
                out[i] = b'0' + (v % 10) as u8;
                v /= 10;
            }
        }
        for (at, c) in [
            (4, b'-'),
            (7, b'-'),
            (10, b'T'),
            (13, b':'),
            (16, b':'),
            (19, b'.'),
            (23, b'Z'),
        ] {
            out[at] = c;
        }
        // ASCII digits and separators only.
        std::str::from_utf8(&out)
            .map(str::to_owned)
            .unwrap_or_default()
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
        assert_eq!(
            Timestamp(1_709_168_523_004).to_rfc3339(),
            "2024-02-29T01:02:03.004Z"
        );
        assert_eq!(Timestamp(-1).to_rfc3339(), "1969-12-31T23:59:59.999Z");
        assert_eq!(Timestamp(i64::MAX).to_rfc3339(), "1970-01-01T00:00:00.000Z");
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
