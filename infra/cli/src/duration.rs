//! Durations as people write them: `90s`, `45m`, `2h30m`, `500ms`; a bare number is seconds.

use std::time::Duration;

/// Parses a duration; the message says what is accepted.
pub fn parse(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let invalid = || {
        format!(
            "`{text}` is not a duration: write e.g. 90s, 45m, 2h30m or 500ms (a bare number is seconds)"
        )
    };
    if text.is_empty() {
        return Err(invalid());
    }
    if let Ok(seconds) = text.parse::<f64>() {
        return seconds_to_duration(seconds).ok_or_else(invalid);
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .ok_or_else(invalid)?;
        let value: u64 = rest[..digits].parse().map_err(|_| invalid())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let millis_per_unit = match &rest[..unit_len] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            _ => return Err(invalid()),
        };
        let millis = value.checked_mul(millis_per_unit).ok_or_else(invalid)?;
        total = total
            .checked_add(Duration::from_millis(millis))
            .ok_or_else(invalid)?;
        rest = &rest[unit_len..];
    }
    Ok(total)
}

/// The shortest time between two looks at the API that `--interval` takes: a shorter one
/// would poll it without a pause, and be refused for rate limits.
pub const SHORTEST_INTERVAL: Duration = Duration::from_millis(100);

/// Parses an `--interval`: a duration of at least [`SHORTEST_INTERVAL`].
pub fn parse_interval(text: &str) -> Result<Duration, String> {
    let interval = parse(text)?;
    if interval < SHORTEST_INTERVAL {
        return Err(format!(
            "`{}` is too short an interval: at least 100ms",
            text.trim()
        ));
    }
    Ok(interval)
}

fn seconds_to_duration(seconds: f64) -> Option<Duration> {
    (seconds.is_finite() && (0.0..1e12).contains(&seconds))
        .then(|| Duration::from_secs_f64(seconds))
}

/// A duration for people: `45s`, `3m`, `2h05m`, `3d04h`.
pub fn short(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3_600 => format!("{}m", s / 60),
        3_600..86_400 => format!("{}h{:02}m", s / 3_600, s % 3_600 / 60),
        _ => format!("{}d{:02}h", s / 86_400, s % 86_400 / 3_600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_is_at_least_100ms() {
        assert_eq!(parse_interval("100ms"), Ok(Duration::from_millis(100)));
        assert!(parse_interval("0").unwrap_err().contains("at least 100ms"));
        assert!(parse_interval("0s").is_err());
        assert!(parse_interval("99ms").is_err());
    }

    #[test]
    fn units_add_up() {
        assert_eq!(parse("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("2h30m"), Ok(Duration::from_secs(9_000)));
        assert_eq!(parse("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("1d"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse("12"), Ok(Duration::from_secs(12)));
        assert_eq!(parse("0.25"), Ok(Duration::from_millis(250)));
    }

    #[test]
    fn anything_else_is_refused_with_what_is_accepted() {
        for bad in [
            "",
            "m",
            "10x",
            "1h30",
            "-5",
            "h1",
            "1.5h",
            "99999999999999999999s",
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains("e.g. 90s"), "{bad}: {e}");
        }
    }

    #[test]
    fn short_forms() {
        assert_eq!(short(Duration::from_secs(45)), "45s");
        assert_eq!(short(Duration::from_secs(185)), "3m");
        assert_eq!(short(Duration::from_secs(7_500)), "2h05m");
        assert_eq!(short(Duration::from_secs(3 * 86_400 + 4 * 3_600)), "3d04h");
    }
}
