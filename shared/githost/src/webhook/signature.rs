//! `X-Hub-Signature-256`: HMAC-SHA256 of the raw body with the webhook's secret, hex, after
//! `sha256=`. Checked in constant time before anything reads the body.

use super::WebhookError;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The header GitHub signs deliveries in.
pub const SIGNATURE_HEADER: &str = "X-Hub-Signature-256";

/// Accepts `body` only when `header` is its signature under `secret`.
pub fn verify_signature(
    secret: &[u8],
    header: Option<&str>,
    body: &[u8],
) -> Result<(), WebhookError> {
    if secret.is_empty() {
        return Err(WebhookError::NoSecret);
    }
    let header = header.ok_or(WebhookError::MissingSignature)?;
    let hex_digest = header
        .trim()
        .strip_prefix("sha256=")
        .ok_or(WebhookError::BadSignature)?;
    let tag = hex::decode(hex_digest).map_err(|_| WebhookError::BadSignature)?;
    mac(secret, body)
        .verify_slice(&tag)
        .map_err(|_| WebhookError::BadSignature)
}

/// The header value GitHub would send for `body` under `secret`.
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    format!(
        "sha256={}",
        hex::encode(mac(secret, body).finalize().into_bytes())
    )
}

fn mac(secret: &[u8], body: &[u8]) -> Hmac<Sha256> {
    // HMAC takes keys of any length; this cannot fail.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret).unwrap_or_else(|_| unreachable!());
    mac.update(body);
    mac
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of GitHub's "Validating webhook deliveries" documentation.
    #[test]
    fn matches_githubs_documented_example() {
        let signature = sign(b"It's a Secret to Everybody", b"Hello, World!");
        assert_eq!(
            signature,
            "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
        );
        assert!(
            verify_signature(
                b"It's a Secret to Everybody",
                Some(&signature),
                b"Hello, World!"
            )
            .is_ok()
        );
    }

    #[test]
    fn refuses_missing_malformed_and_wrong_signatures() {
        let secret = b"s3cret";
        assert_eq!(
            verify_signature(secret, None, b"{}"),
            Err(WebhookError::MissingSignature)
        );
        assert_eq!(
            verify_signature(secret, Some("sha1=00"), b"{}"),
            Err(WebhookError::BadSignature)
        );
        assert_eq!(
            verify_signature(secret, Some("sha256=zz"), b"{}"),
            Err(WebhookError::BadSignature)
        );
        let other = sign(b"other", b"{}");
        assert_eq!(
            verify_signature(secret, Some(&other), b"{}"),
            Err(WebhookError::BadSignature)
        );
        assert_eq!(
            verify_signature(b"", Some(&other), b"{}"),
            Err(WebhookError::NoSecret)
        );
    }
}
