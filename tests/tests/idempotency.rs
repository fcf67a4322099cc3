//! `Idempotency-Key` on mutating endpoints: a retry with the same key and body replays the
//! first response and does not act again; a different body, a malformed key and a repeat
//! while the first is running are refused.

use e2e::git_repo::GitRepo;
use e2e::live::{LiveEnv, body, pr_body};
use e2e::{ACME, Backend, Reply, UMBRELLA, live_on_both_stores};
use serde_json::{Value, json};

live_on_both_stores!(
    a_repeated_submit_acts_once_and_replays,
    a_kept_error_is_replayed_too,
    keys_are_per_organisation_and_endpoint,
    concurrent_duplicates_act_once,
);

const REPLAYED: &str = "idempotency-replayed";

async fn with_key(env: &LiveEnv, path: &str, token: &str, key: &str, body: &Value) -> Reply {
    env.post_with_headers(path, token, &[("idempotency-key", key)], body)
        .await
}

fn replayed(r: &Reply) -> bool {
    r.headers.get(REPLAYED).is_some_and(|v| v == "true")
}

async fn queue_with_prs(env: &LiveEnv, count: u32) -> GitRepo {
    let repo = env.repo("rocket");
    repo.add_prs(count, &[]);
    env.create_queue(&repo, json!({"state": "paused"})).await;
    repo
}

async fn a_repeated_submit_acts_once_and_replays(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = queue_with_prs(&env, 1).await;
    let submit = pr_body(&repo, 1, json!({}));

    let first = with_key(&env, "submitPullRequest", ACME, "submit-1", &submit).await;
    assert_eq!(first.status, 200, "{:?}", first.body);
    assert!(!replayed(&first));
    assert_eq!(env.pr_call("cancelPullRequest", &repo, 1).await.status, 200);

    let again = with_key(&env, "submitPullRequest", ACME, "submit-1", &submit).await;
    assert_eq!((again.status, &again.body), (200, &first.body));
    assert!(replayed(&again));
    assert_eq!(
        env.pull_request(&repo, 1).await["state"],
        "cancelled",
        "the replay did not submit again"
    );

    let other = pr_body(&repo, 1, json!({"priority": "urgent"}));
    let reused = with_key(&env, "submitPullRequest", ACME, "submit-1", &other).await;
    assert_eq!(
        (reused.status, reused.code()),
        (422, "IDEMPOTENCY_KEY_REUSED")
    );
    assert_eq!(env.pull_request(&repo, 1).await["state"], "cancelled");

    for bad in ["has space", &"k".repeat(256), "caf\u{e9}"] {
        let refused = env
            .http
            .post(env.url("submitPullRequest"))
            .header("x-api-token", ACME)
            .header("idempotency-key", bad.as_bytes())
            .json(&submit)
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status().as_u16(), 400, "{bad:?}");
        let refused: Value = refused.json().await.unwrap();
        assert_eq!(refused["error"]["code"], "INVALID_IDEMPOTENCY_KEY");
    }
    assert_eq!(env.pull_request(&repo, 1).await["state"], "cancelled");
}

async fn a_kept_error_is_replayed_too(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = env.repo("rocket");
    let queue = body(&repo, json!({}));
    let missing = with_key(&env, "deleteQueue", ACME, "delete-1", &queue).await;
    assert_eq!((missing.status, missing.code()), (404, "QUEUE_NOT_FOUND"));

    env.create_queue(&repo, json!({})).await;
    let again = with_key(&env, "deleteQueue", ACME, "delete-1", &queue).await;
    assert_eq!((again.status, again.code()), (404, "QUEUE_NOT_FOUND"));
    assert!(replayed(&again));
    assert_eq!(
        env.queue(&repo).await["branch"],
        "main",
        "the queue is still there"
    );

    let fresh = with_key(&env, "deleteQueue", ACME, "delete-2", &queue).await;
    assert_eq!(fresh.status, 200);
    assert!(!replayed(&fresh));
}

async fn keys_are_per_organisation_and_endpoint(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = env.repo("rocket");
    let queue = body(&repo, json!({}));
    let created = with_key(&env, "createQueue", ACME, "same", &queue).await;
    assert_eq!(created.status, 200);
    // (A repository belongs to one organisation: umbrella uses one of its own.)
    let mut theirs = e2e::queue_body("rocket", json!({}));
    theirs["repo"]["owner"] = json!("umbrella");
    let elsewhere = with_key(&env, "createQueue", UMBRELLA, "same", &theirs).await;
    assert_eq!(elsewhere.status, 200, "umbrella's key is its own");
    assert!(!replayed(&elsewhere));
    let other_endpoint = with_key(&env, "deleteQueue", ACME, "same", &queue).await;
    assert_eq!(other_endpoint.status, 200, "deleteQueue's key is its own");
    assert!(!replayed(&other_endpoint));
    // Without a key, nothing is replayed.
    let plain = env.post("createQueue", Some(ACME), &queue).await;
    assert_eq!(plain.status, 200);
    let plain = env.post("createQueue", Some(ACME), &queue).await;
    assert_eq!((plain.status, plain.code()), (409, "QUEUE_ALREADY_EXISTS"));
}

async fn concurrent_duplicates_act_once(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = env.repo("rocket");
    let queue = body(&repo, json!({"concurrency": 3}));
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let request = env
                .http
                .post(env.url("createQueue"))
                .header("x-api-token", ACME)
                .header("idempotency-key", "create-1")
                .json(&queue);
            tokio::spawn(async move {
                let r = request.send().await.unwrap();
                let replayed = r.headers().get(REPLAYED).is_some_and(|v| v == "true");
                let status = r.status().as_u16();
                let body: Value = r.json().await.unwrap();
                (status, replayed, body)
            })
        })
        .collect();
    let mut acted = 0;
    for task in tasks {
        let (status, replayed, body) = task.await.unwrap();
        acted += usize::from(status == 200 && !replayed);
        let in_use = status == 409 && body["error"]["code"] == "IDEMPOTENCY_KEY_IN_USE";
        assert!(status == 200 || in_use, "{status} {body}");
    }
    assert_eq!(acted, 1, "exactly one request created the queue");
    assert_eq!(env.queue(&repo).await["concurrency"], 3);
}
