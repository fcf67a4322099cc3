//! `Idempotency-Key`: a mutating request retried with the same key gets the first response
//! again instead of acting twice.
//!
//! The key (1 to 255 visible ASCII characters) is scoped to the organisation and the endpoint
//! and kept 24 hours. The first request claims it with a conditional write before acting and
//! stores its response after (2xx and 4xx; a 5xx releases the claim so a retry acts). A repeat
//! with the same body (by SHA-256; of a `multipart/form-data` body, its parts, since a client
//! draws a new boundary for each attempt) replays the stored response with
//! `Idempotency-Replayed: true`; a different body is refused (422 `IDEMPOTENCY_KEY_REUSED`); a repeat while the first
//! is still running is refused (409 `IDEMPOTENCY_KEY_IN_USE`). A claim left unanswered for
//! [`STALE_AFTER_MS`] (its function died) is taken over.

use crate::auth::Caller;
use crate::error::ApiError;
use lambda_http::http::{HeaderValue, StatusCode, header};
use lambda_http::{Body, Request, Response};
use mq_service::App;
use mq_store::{Claim, IdempotencyRecord, StoredResponse};
use sha2::{Digest, Sha256};
use std::future::Future;

/// The request header carrying the key.
pub const KEY_HEADER: &str = "idempotency-key";
/// The response header marking a replayed response.
pub const REPLAYED_HEADER: &str = "idempotency-replayed";
/// The longest key.
pub const MAX_KEY_LEN: usize = 255;
/// How long a key and its response are kept: 24 hours.
pub const KEEP_FOR_MS: i64 = 24 * 60 * 60 * 1000;
/// How long an unanswered claim holds its key: twice as long as an API function may run
/// (`template.yaml` stops each after 29 s; a test holds the two together), so a retry after
/// a function was stopped acts within a minute instead of being refused meanwhile.
pub const STALE_AFTER_MS: i64 = 60 * 1000;

/// The request's key, if it has one; 400 `INVALID_IDEMPOTENCY_KEY` when it is malformed.
pub fn key_of(req: &Request) -> Result<Option<String>, ApiError> {
    let mut values = req.headers().get_all(KEY_HEADER).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    let bytes = value.as_bytes();
    let visible = bytes.iter().all(|b| (0x21..=0x7e).contains(b));
    if values.next().is_some() || bytes.is_empty() || bytes.len() > MAX_KEY_LEN || !visible {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "INVALID_IDEMPOTENCY_KEY",
            format!(
                "Idempotency-Key must be one header of 1 to {MAX_KEY_LEN} visible ASCII \
                 characters (no spaces)"
            ),
        ));
    }
    Ok(Some(String::from_utf8_lossy(bytes).into_owned()))
}

/// Runs `handler` once per key: the first request acts, repeats get its response.
pub async fn run_once<F, Fut>(
    app: &App,
    caller: Caller,
    route: &'static str,
    key: &str,
    req: Request,
    handler: F,
) -> Result<Response<Body>, ApiError>
where
    F: FnOnce(Caller, Request) -> Fut,
    Fut: Future<Output = Result<Response<Body>, ApiError>>,
{
    let now = app.now();
    let scope = format!("{}#{route}#{key}", caller.org.as_str());
    let record = IdempotencyRecord::claim(scope, body_hash(&req).await, now, KEEP_FOR_MS);
    let stale_before = now.plus_millis(-STALE_AFTER_MS);
    match app
        .store
        .claim_idempotency_key(&record, now, stale_before)
        .await?
    {
        Claim::Taken(first) => return replay(&record, first),
        Claim::Claimed => {}
    }
    let response = handler(caller, req)
        .await
        .unwrap_or_else(|e| e.to_response());
    let (response, stored) = into_stored(response);
    let kept = match stored.filter(|s| s.status < 500) {
        Some(stored) => {
            app.store
                .complete_idempotency_key(&record.scope, &record.claim_id, &stored)
                .await
        }
        None => Err(mq_store::StoreError::NotFound),
    };
    if kept.is_err() {
        // A 5xx, or the response could not be kept: let a retry act.
        if let Err(e) = app
            .store
            .release_idempotency_key(&record.scope, &record.claim_id)
            .await
        {
            tracing::warn!(error = %e, "idempotency key not released");
        }
    }
    Ok(response)
}

/// The SHA-256 of what a request asks: its body, or the parts of a `multipart/form-data`
/// body (names, file names and contents, each with its length), whatever its boundary.
async fn body_hash(req: &Request) -> String {
    let mut hash = Sha256::new();
    match crate::multipart::parse(req).await {
        Ok(parts) => {
            for part in parts {
                let file_name = part.file_name.unwrap_or_default();
                for field in [part.name.as_bytes(), file_name.as_bytes(), &part.bytes] {
                    hash.update((field.len() as u64).to_be_bytes());
                    hash.update(field);
                }
            }
        }
        Err(_) => hash.update(req.body().as_ref()),
    }
    hex::encode(hash.finalize())
}

/// The answer to a repeat: the first response, or why there is none to give.
fn replay(ours: &IdempotencyRecord, first: IdempotencyRecord) -> Result<Response<Body>, ApiError> {
    if first.body_hash != ours.body_hash {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "IDEMPOTENCY_KEY_REUSED",
            "this Idempotency-Key was used with a different request body",
        ));
    }
    let Some(stored) = first.response else {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "IDEMPOTENCY_KEY_IN_USE",
            "a request with this Idempotency-Key is still being processed; retry later",
        ));
    };
    let status = StatusCode::from_u16(stored.status).map_err(ApiError::internal)?;
    let mut response = Response::new(Body::Text(stored.body));
    *response.status_mut() = status;
    if let Ok(ct) = HeaderValue::from_str(&stored.content_type) {
        response.headers_mut().insert(header::CONTENT_TYPE, ct);
    }
    response
        .headers_mut()
        .insert(REPLAYED_HEADER, HeaderValue::from_static("true"));
    Ok(response)
}

/// The response (unchanged) and what to keep of it (`None` when its body is not text).
fn into_stored(response: Response<Body>) -> (Response<Body>, Option<StoredResponse>) {
    let (parts, body) = response.into_parts();
    let text = match &body {
        Body::Empty => Some(String::new()),
        Body::Text(t) => Some(t.clone()),
        Body::Binary(b) => String::from_utf8(b.clone()).ok(),
        _ => None,
    };
    let stored = text.map(|body| StoredResponse {
        status: parts.status.as_u16(),
        content_type: parts
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned(),
        body,
    });
    (Response::from_parts(parts, body), stored)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_keys(keys: &[&[u8]]) -> Request {
        let mut b = lambda_http::http::Request::builder();
        for k in keys {
            b = b.header(KEY_HEADER, HeaderValue::from_bytes(k).unwrap());
        }
        b.body(Body::Empty).unwrap()
    }

    #[test]
    fn keys_are_one_to_255_visible_ascii_characters() {
        assert_eq!(key_of(&with_keys(&[])).unwrap(), None);
        assert_eq!(
            key_of(&with_keys(&[b"a-1_B:~!"])).unwrap().as_deref(),
            Some("a-1_B:~!")
        );
        let longest = "k".repeat(255);
        assert!(key_of(&with_keys(&[longest.as_bytes()])).is_ok());
        let too_long = "k".repeat(256);
        for bad in [
            &[b"" as &[u8]][..],
            &[too_long.as_bytes()],
            &[b"has space"],
            &[b"tab\there"],
            &[b"caf\xc3\xa9"],
            &[b"a", b"b"],
        ] {
            let err = key_of(&with_keys(bad)).unwrap_err();
            assert_eq!(
                (err.status.as_u16(), err.code),
                (400, "INVALID_IDEMPOTENCY_KEY")
            );
        }
    }

    /// A request whose function was stopped before it answered leaves its claim: a retry
    /// is refused while the first could still be running, and acts once it cannot be.
    #[tokio::test]
    async fn a_claim_left_by_a_stopped_function_is_taken_over_after_a_minute() {
        use mq_core::ids::OrgId;
        use mq_core::time::Timestamp;
        use mq_service::app::ManualClock;
        use std::sync::Arc;
        use std::sync::atomic::{AtomicU32, Ordering};

        let start = Timestamp(1_795_000_000_000);
        let clock = Arc::new(ManualClock::new(start));
        let app = App::new(Arc::new(mq_store::MemoryStore::new()), clock.clone());
        let caller = || Caller {
            org: OrgId::parse("acme").unwrap(),
            request_id: "r".into(),
        };
        let request = || {
            lambda_http::http::Request::builder()
                .body(Body::Text("{}".into()))
                .unwrap()
        };
        let scope = "acme#submitPullRequest#k".to_owned();
        let stopped =
            IdempotencyRecord::claim(scope, body_hash(&request()).await, start, KEEP_FOR_MS);
        app.store
            .claim_idempotency_key(&stopped, start, Timestamp(0))
            .await
            .unwrap();

        let acted = AtomicU32::new(0);
        let retry = || async {
            let handler = |_, _| async {
                acted.fetch_add(1, Ordering::SeqCst);
                Ok(Response::new(Body::Empty))
            };
            run_once(&app, caller(), "submitPullRequest", "k", request(), handler).await
        };
        clock.set(start.plus_millis(STALE_AFTER_MS - 1));
        let refused = retry().await.unwrap_err();
        assert_eq!(
            (refused.status.as_u16(), refused.code),
            (409, "IDEMPOTENCY_KEY_IN_USE")
        );
        clock.set(start.plus_millis(60_000 + 1));
        let answered = retry().await.unwrap();
        assert_eq!(answered.status(), StatusCode::OK);
        assert_eq!(acted.load(Ordering::SeqCst), 1);
    }
}
