//! Sizes as people write them: `4MiB`, `512KiB`, `1GiB`, or a number of bytes.

/// Parses a size in bytes; the message says what is accepted.
pub fn parse(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let invalid = || format!("`{text}` is not a size: write e.g. 4MiB, 512KiB or 1000000");
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let value: u64 = text[..digits].parse().map_err(|_| invalid())?;
    let unit: u64 = match text[digits..].trim() {
        "" | "B" => 1,
        "KiB" | "K" => 1 << 10,
        "MiB" | "M" => 1 << 20,
        "GiB" | "G" => 1 << 30,
        _ => return Err(invalid()),
    };
    value.checked_mul(unit).ok_or_else(invalid)
}

/// A size for people: `812 B`, `3.4 KiB`, `12.0 MiB`.
pub fn human(bytes: u64) -> String {
    const KIB: f64 = 1024.0;
    let b = bytes as f64;
    if b < KIB {
        format!("{bytes} B")
    } else if b < KIB * KIB {
        format!("{:.1} KiB", b / KIB)
    } else {
        format!("{:.1} MiB", b / (KIB * KIB))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse("4MiB"), Ok(4 * 1024 * 1024));
        assert_eq!(parse("512KiB"), Ok(512 * 1024));
        assert_eq!(parse("1000"), Ok(1000));
        assert!(parse("4 MB").unwrap_err().contains("e.g. 4MiB"));
        assert!(parse("").is_err());
        assert!(parse("99999999999GiB").is_err());
        assert_eq!(human(812), "812 B");
        assert_eq!(human(3 * 1024 + 400), "3.4 KiB");
    }
}
