//! CODEOWNERS text as the DynamoDB adapter stores it: gzip-compressed in one item. A DynamoDB
//! item holds at most 400 KB; GitHub accepts CODEOWNERS files up to 3 MB, and their repeated
//! paths and team names compress about tenfold, so compression lets real files fit.

use crate::error::StoreError;
use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use std::io::{Read, Write};

/// The most compressed bytes stored, leaving room in the item for its keys.
pub const MAX_STORED_BYTES: usize = 380 * 1024;

/// The text, gzip-compressed.
pub fn compress(text: &str) -> Vec<u8> {
    let mut gz = GzEncoder::new(Vec::with_capacity(text.len() / 8), Compression::default());
    // Writing to a Vec cannot fail.
    let _ = gz.write_all(text.as_bytes());
    gz.finish().unwrap_or_default()
}

/// Whether the text fits in one item once compressed.
pub fn fits(text: &str) -> bool {
    compress(text).len() <= MAX_STORED_BYTES
}

/// The text back from its compressed bytes.
pub fn decompress(bytes: &[u8]) -> Result<String, StoreError> {
    let mut text = String::new();
    GzDecoder::new(bytes)
        .read_to_string(&mut text)
        .map_err(StoreError::internal)?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_survives_the_round_trip() {
        let text = "/src/ @acme/core\n*.md @acme/docs\n".repeat(1000);
        let stored = compress(&text);
        assert!(stored.len() < text.len() / 10, "{}", stored.len());
        assert_eq!(decompress(&stored).unwrap(), text);
    }

    #[test]
    fn github_sized_files_fit_and_random_ones_do_not() {
        let lines: String = (0..45_000)
            .map(|i| {
                format!(
                    "/services/team-{}/module-{i}/ @acme/team-{}\n",
                    i % 300,
                    i % 300
                )
            })
            .collect();
        assert!(lines.len() > 2_000_000, "{}", lines.len());
        assert!(fits(&lines));
        let mut seed = 7u64;
        let noise: String = (0..600 * 1024)
            .map(|_| {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                char::from(b'!' + (seed >> 58) as u8)
            })
            .collect();
        assert!(!fits(&noise));
    }
}
