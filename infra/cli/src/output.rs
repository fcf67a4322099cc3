//! Writing to the terminal: lines that survive a closed pipe, JSON, and aligned tables.

use serde_json::Value;
use std::io::Write;

/// Writes a line to standard output; a reader that went away (`mq queue | head`) is not an
/// error worth a panic.
pub fn line(text: impl std::fmt::Display) {
    let _ = try_line(text);
}

/// Writes a line to standard output, or says why it could not: the reader went away.
pub fn try_line(text: impl std::fmt::Display) -> std::io::Result<()> {
    writeln!(std::io::stdout().lock(), "{text}")
}

/// Writes a JSON document on one line.
pub fn json(value: &Value) {
    line(value);
}

/// Writes a note to standard error, prefixed with `mq: `.
pub fn note(text: impl std::fmt::Display) {
    let _ = writeln!(std::io::stderr().lock(), "mq: {text}");
}

/// Rows under a header, each column as wide as its widest cell; the last column is not
/// padded.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let header: Vec<String> = header.iter().map(|h| (*h).to_owned()).collect();
    let mut out = String::new();
    for row in std::iter::once(&header).chain(rows) {
        let last = row.len().saturating_sub(1);
        for (i, cell) in row.iter().enumerate() {
            if i == last {
                out.push_str(cell);
            } else {
                let pad = widths[i] - cell.chars().count();
                out.push_str(cell);
                out.push_str(&" ".repeat(pad + 2));
            }
        }
        out.push('\n');
    }
    out
}

/// A string field of a JSON object, or `-`.
pub fn text(value: &Value, field: &str) -> String {
    match &value[field] {
        Value::String(s) if !s.is_empty() => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => "-".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up() {
        let t = table(
            &["A", "LONGER"],
            &[
                vec!["wide cell".into(), "x".into()],
                vec!["b".into(), "y".into()],
            ],
        );
        assert_eq!(t, "A          LONGER\nwide cell  x\nb          y\n");
    }
}
