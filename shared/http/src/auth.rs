//! Authentication: an API token in `x-api-token` (or `Authorization: Bearer`), looked up by its
//! SHA-256 hash; one organisation per token.

use crate::error::ApiError;
use lambda_http::Request;
use lambda_http::http::header;
use mq_core::ids::OrgId;
use mq_store::{TokenRecord, TokenStore};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

pub const TOKEN_HEADER: &str = "x-api-token";

/// Who is calling, once authenticated.
#[derive(Debug, Clone)]
pub struct Caller {
    pub org: OrgId,
    pub request_id: String,
}

/// Lowercase hex SHA-256 of a token: what the store keeps.
pub fn hash_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// The longest token looked up; a longer one is not valid.
pub const MAX_TOKEN_LEN: usize = 512;

/// The token a request carries, from `x-api-token` or else `Authorization: Bearer` (an
/// empty `x-api-token`, such as an unset CI variable, carries none).
pub fn presented_token(req: &Request) -> Option<&str> {
    let direct = req
        .headers()
        .get(TOKEN_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|t| !t.is_empty());
    let bearer = || {
        req.headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, rest) = v.trim().split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
            })
    };
    direct.or_else(bearer).filter(|t| !t.is_empty())
}

/// The record of the request's token (its organisation, its public id); 401 when it is
/// missing, unknown or revoked.
pub async fn authenticate(tokens: &dyn TokenStore, req: &Request) -> Result<TokenRecord, ApiError> {
    let token = presented_token(req).ok_or_else(ApiError::unauthorized)?;
    if token.len() > MAX_TOKEN_LEN {
        return Err(ApiError::token_not_valid());
    }
    let hash = hash_token(token);
    let record = tokens
        .find_token(&hash)
        .await?
        .ok_or_else(ApiError::token_not_valid)?;
    let same: bool = record.token_hash.as_bytes().ct_eq(hash.as_bytes()).into();
    if !same || record.revoked_at.is_some() {
        return Err(ApiError::token_not_valid());
    }
    Ok(record)
}

/// A new API token: the secret (shown once) and the record to store (its hash only).
pub fn new_token(
    org: mq_core::ids::OrgId,
    label: &str,
    now: mq_core::time::Timestamp,
) -> Result<(String, mq_store::TokenRecord), getrandom::Error> {
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret)?;
    let token = format!("mq_{}", hex::encode(secret));
    Ok((token.clone(), record_for(&token, org, label, now)))
}

/// The stored record of a known token (the local gateway registers tokens given to it).
pub fn record_for(
    token: &str,
    org: mq_core::ids::OrgId,
    label: &str,
    now: mq_core::time::Timestamp,
) -> mq_store::TokenRecord {
    let token_hash = hash_token(token);
    mq_store::TokenRecord {
        id: format!("tok_{}", &token_hash[..12]),
        token_hash,
        org,
        label: label.to_owned(),
        created_at: now,
        revoked_at: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lambda_http::Body;

    fn with_headers(headers: &[(&str, &str)]) -> Request {
        let mut b = lambda_http::http::Request::builder();
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(Body::Empty).unwrap()
    }

    #[test]
    fn hashes_are_sha256_hex() {
        assert_eq!(
            hash_token("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn stored_records_hold_only_the_hash() {
        let org = OrgId::parse("acme").unwrap();
        let (token, record) = new_token(org, "ci", mq_core::time::Timestamp(0)).unwrap();
        assert_eq!(record.token_hash, hash_token(&token));
        let stored = serde_json::to_string(&record).unwrap();
        assert!(!stored.contains(&token), "{stored}");
        assert!(!stored.contains(&token["mq_".len()..]), "{stored}");
    }

    #[tokio::test]
    async fn only_known_unrevoked_tokens_authenticate() {
        use mq_core::time::Timestamp;
        let store = mq_store::MemoryStore::new();
        let org = OrgId::parse("acme").unwrap();
        let live = record_for("live-token", org.clone(), "", Timestamp(0));
        let revoked = record_for("old-token", org, "", Timestamp(0));
        store.put_token(&live).await.unwrap();
        store.put_token(&revoked).await.unwrap();
        store.revoke_token(&revoked.id, Timestamp(1)).await.unwrap();
        let ask = |t: &str| with_headers(&[("x-api-token", t)]);
        assert_eq!(
            authenticate(&store, &ask("live-token"))
                .await
                .unwrap()
                .org
                .as_str(),
            "acme"
        );
        let long = "t".repeat(MAX_TOKEN_LEN + 1);
        for refused in ["old-token", "live-tokeN", "live-toke", "unknown", &long] {
            let answer = authenticate(&store, &ask(refused)).await;
            let err = answer.expect_err(refused);
            assert_eq!((err.status.as_u16(), err.code), (401, "UNAUTHORIZED"));
            assert!(err.message.contains("not valid"), "{}", err.message);
        }
        let missing = authenticate(&store, &with_headers(&[])).await.unwrap_err();
        assert!(
            missing.message.starts_with("no API token"),
            "{}",
            missing.message
        );
    }

    #[test]
    fn token_comes_from_either_header() {
        assert_eq!(
            presented_token(&with_headers(&[("x-api-token", "t1")])),
            Some("t1")
        );
        assert_eq!(
            presented_token(&with_headers(&[("authorization", "Bearer t2")])),
            Some("t2")
        );
        assert_eq!(
            presented_token(&with_headers(&[("authorization", "bearer  t3 ")])),
            Some("t3")
        );
        assert_eq!(
            presented_token(&with_headers(&[("authorization", "Basic dXNlcg==")])),
            None
        );
        assert_eq!(presented_token(&with_headers(&[("x-api-token", "")])), None);
        assert_eq!(
            presented_token(&with_headers(&[
                ("x-api-token", " "),
                ("authorization", "Bearer t4")
            ])),
            Some("t4"),
            "an empty x-api-token hides no bearer token"
        );
        assert_eq!(presented_token(&with_headers(&[])), None);
    }
}
