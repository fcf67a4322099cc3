//! Idempotency keys: claimed once, answered, released, taken over when stale or expired.

use mq_core::time::Timestamp;
use mq_store::{Claim, IdempotencyRecord, Store, StoreError, StoredResponse};
use std::sync::Arc;

const MINUTE: i64 = 60_000;

fn record(scope: &str, claim_id: &str, body_hash: &str, at: i64) -> IdempotencyRecord {
    IdempotencyRecord {
        scope: scope.to_owned(),
        claim_id: claim_id.to_owned(),
        body_hash: body_hash.to_owned(),
        claimed_at: Timestamp(at),
        keep_until: Timestamp(at + 24 * 60 * MINUTE),
        response: None,
    }
}

fn response(status: u16, body: &str) -> StoredResponse {
    StoredResponse {
        status,
        content_type: "application/json".to_owned(),
        body: body.to_owned(),
    }
}

/// Claims `r` at `at`, treating claims older than five minutes as stale.
async fn claim(store: &dyn Store, r: &IdempotencyRecord, at: i64) -> Claim {
    store
        .claim_idempotency_key(r, Timestamp(at), Timestamp(at - 5 * MINUTE))
        .await
        .unwrap()
}

pub async fn idempotency_keys_are_claimed_once_and_keep_the_response(store: Arc<dyn Store>) {
    let t0 = 1_700_000_000_000;
    let first = record("acme#submitPullRequest#k1", "c1", "h1", t0);
    assert_eq!(claim(store.as_ref(), &first, t0).await, Claim::Claimed);
    assert_eq!(
        claim(store.as_ref(), &first, t0).await,
        Claim::Claimed,
        "the same claim again (its first answer was lost, the SDK sent it again) is this claim"
    );

    let second = record("acme#submitPullRequest#k1", "c2", "h1", t0 + 1);
    let Claim::Taken(running) = claim(store.as_ref(), &second, t0 + 1).await else {
        panic!("a claimed key is taken");
    };
    assert_eq!(running, first, "still running: no response yet");

    let other_org = record("umbrella#submitPullRequest#k1", "c3", "h1", t0);
    assert_eq!(claim(store.as_ref(), &other_org, t0).await, Claim::Claimed);
    let other_endpoint = record("acme#cancelPullRequest#k1", "c4", "h1", t0);
    assert_eq!(
        claim(store.as_ref(), &other_endpoint, t0).await,
        Claim::Claimed
    );

    let answer = response(200, "{\"ok\":1}");
    assert_eq!(
        store
            .complete_idempotency_key(&first.scope, "c2", &answer)
            .await,
        Err(StoreError::Conflict),
        "only the holder of the claim completes it"
    );
    store
        .complete_idempotency_key(&first.scope, "c1", &answer)
        .await
        .unwrap();
    // Answered records are kept, however old, until they expire.
    let later = t0 + 60 * MINUTE;
    let Claim::Taken(done) = claim(
        store.as_ref(),
        &record(&first.scope, "c5", "h2", later),
        later,
    )
    .await
    else {
        panic!("an answered key is taken");
    };
    assert_eq!(done.response, Some(answer));
    assert_eq!(done.body_hash, "h1");

    let expired = t0 + 24 * 60 * MINUTE;
    let after = record(&first.scope, "c6", "h3", expired);
    assert_eq!(
        claim(store.as_ref(), &after, expired).await,
        Claim::Claimed,
        "an expired key is claimed anew"
    );
}

pub async fn idempotency_claims_are_released_or_taken_over_when_stale(store: Arc<dyn Store>) {
    let t0 = 1_700_000_000_000;
    let scope = "acme#createQueue#k2";
    let first = record(scope, "c1", "h1", t0);
    assert_eq!(claim(store.as_ref(), &first, t0).await, Claim::Claimed);
    store.release_idempotency_key(scope, "other").await.unwrap();
    assert!(
        matches!(
            claim(store.as_ref(), &record(scope, "c2", "h1", t0), t0).await,
            Claim::Taken(_)
        ),
        "releasing with another claim id changes nothing"
    );
    store.release_idempotency_key(scope, "c1").await.unwrap();
    let retry = record(scope, "c3", "h1", t0 + 1);
    assert_eq!(claim(store.as_ref(), &retry, t0 + 1).await, Claim::Claimed);

    // The holder of c3 dies: four minutes on the claim holds, after five it is taken over.
    let at = t0 + 4 * MINUTE;
    assert!(matches!(
        claim(store.as_ref(), &record(scope, "c4", "h1", at), at).await,
        Claim::Taken(_)
    ));
    let at = t0 + 5 * MINUTE + 2;
    assert_eq!(
        claim(store.as_ref(), &record(scope, "c5", "h1", at), at).await,
        Claim::Claimed
    );
    assert_eq!(
        store
            .complete_idempotency_key(scope, "c3", &response(200, "{}"))
            .await,
        Err(StoreError::Conflict),
        "the request that lost its claim cannot answer"
    );
    store
        .complete_idempotency_key(scope, "c5", &response(409, "{\"error\":{}}"))
        .await
        .unwrap();
}

pub async fn concurrent_idempotency_claims_have_one_winner(store: Arc<dyn Store>) {
    let t0 = 1_700_000_000_000;
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                let r = record("acme#updateQueue#k3", &format!("c{i}"), "h", t0);
                claim(store.as_ref(), &r, t0).await
            })
        })
        .collect();
    let mut claimed = 0;
    for t in tasks {
        if t.await.unwrap() == Claim::Claimed {
            claimed += 1;
        }
    }
    assert_eq!(claimed, 1);
}
