//! Clients submit different pull requests to one queue at the same instant (they wait at a
//! barrier, then all send), as a CI fleet does when a release freeze lifts: thirty-two
//! through one local gateway, on both stores; and each client through an instance of the
//! application of its own, sharing only the store, as Lambda runs concurrent requests, so
//! that their commits race each other at the store: thirty-two on the in-memory store, eight
//! on DynamoDB (moto serves one request at a time, slowly: a race of thirty-two writers there
//! is measured by the `contended_submissions` bench, not held to a time here). The service
//! absorbs the contention on the queue:
//!
//! - every submission is answered 200, none 503;
//! - each pull request is in the queue exactly once;
//! - the queue lists them in the order they were accepted: by sequence number and by the time
//!   of acceptance, which falls within the request that was answered.

use e2e::git_repo::GitRepo;
use e2e::live::{LiveEnv, LiveOptions, pr_body, repo_ref};
use e2e::{ACME, Backend, Reply, live_on_both_stores};
use mq_core::ids::QueueId;
use mq_core::time::Timestamp;
use serde_json::json;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::Barrier;

live_on_both_stores!(
    thirty_two_simultaneous_submissions_through_one_gateway_are_all_accepted_in_order
);

mod an_instance_per_client {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn thirty_two_on_the_in_memory_store_are_all_accepted_in_order() {
        all_accepted_in_order(Backend::Memory, 32, 32).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn eight_on_dynamodb_are_all_accepted_in_order() {
        all_accepted_in_order(Backend::DynamoDb, 8, 8).await;
    }
}

/// One client's submission: its pull request, when it was sent and answered (wall clock,
/// milliseconds), and the answer.
struct Submitted {
    pr: u32,
    sent_ms: i64,
    answered_ms: i64,
    took_ms: u128,
    reply: Reply,
}

async fn thirty_two_simultaneous_submissions_through_one_gateway_are_all_accepted_in_order(
    backend: Backend,
) {
    all_accepted_in_order(backend, 32, 1).await;
}

/// The scenarios on DynamoDB take turns: they share the run's moto server, which serves one
/// request at a time, and each should measure its own burst only.
static MOTO: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// `clients` clients submit pull requests 1 to `clients` at once, client `n` through instance
/// `n` modulo `instances`; every submission must be accepted, once, in order.
async fn all_accepted_in_order(backend: Backend, clients: u32, instances: usize) {
    let _moto = match backend {
        Backend::DynamoDb => Some(MOTO.lock().await),
        Backend::Memory => None,
    };
    let options = LiveOptions::default().without_tick().instances(instances);
    let env = Arc::new(options.start(backend).await);
    let repo = env.repo("burst");
    repo.add_prs(clients, &[]);
    env.create_queue(&repo, json!({"requiredStatuses": ["build"]}))
        .await;

    let submitted = submit_at_once(&env, &repo, clients).await;
    let slowest = submitted.iter().map(|s| s.took_ms).max().unwrap_or(0);
    println!(
        "{backend:?}, {instances} instance(s): {clients} simultaneous submissions, slowest \
         answered in {slowest} ms"
    );
    let refused: Vec<String> = submitted
        .iter()
        .filter(|s| s.reply.status != 200)
        .map(|s| format!("#{}: {} {}", s.pr, s.reply.status, s.reply.body))
        .collect();
    assert!(refused.is_empty(), "refused submissions: {refused:#?}");

    let listed: Vec<u64> = env.queue(&repo).await["enqueuedPullRequests"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|p| p["prNumber"].as_u64().expect("a number"))
        .collect();
    let mut distinct = listed.clone();
    distinct.sort_unstable();
    distinct.dedup();
    let expected: Vec<u64> = (1..=u64::from(clients)).collect();
    assert_eq!(
        distinct, expected,
        "every pull request is listed: {listed:?}"
    );
    assert_eq!(listed.len(), expected.len(), "none twice: {listed:?}");

    let id = QueueId::new(&repo_ref(&repo), "main");
    let snapshot = env.store.load(&id).await.unwrap().expect("the queue");
    let mut entries: Vec<_> = snapshot.entries.iter().collect();
    entries.sort_by_key(|e| e.seq);
    let by_acceptance: Vec<u64> = entries.iter().map(|e| u64::from(e.pr)).collect();
    assert_eq!(
        listed, by_acceptance,
        "listed in the order they were accepted"
    );
    for pair in entries.windows(2) {
        assert!(
            pair[0].submitted_at <= pair[1].submitted_at,
            "#{} accepted before #{}, at a later time",
            pair[0].pr,
            pair[1].pr
        );
    }
    for s in &submitted {
        let entry = entries.iter().find(|e| e.pr == s.pr).expect("an entry");
        let Timestamp(at) = entry.submitted_at;
        assert!(
            s.sent_ms <= at && at <= s.answered_ms,
            "#{} accepted at {at}, outside its request ({} to {})",
            s.pr,
            s.sent_ms,
            s.answered_ms
        );
    }
}

/// Submits pull requests 1 to `clients`, one client each, all released by one barrier.
async fn submit_at_once(env: &Arc<LiveEnv>, repo: &GitRepo, clients: u32) -> Vec<Submitted> {
    let barrier = Arc::new(Barrier::new(clients as usize));
    let clients: Vec<_> = (1..=clients)
        .map(|pr| {
            let (env, barrier, body) = (env.clone(), barrier.clone(), pr_body(repo, pr, json!({})));
            tokio::spawn(async move {
                barrier.wait().await;
                let started = Instant::now();
                let sent_ms = wall_ms();
                let instance = env.instance(pr as usize);
                let reply = instance.post("submitPullRequest", Some(ACME), &body).await;
                let answered_ms = wall_ms();
                Submitted {
                    pr,
                    sent_ms,
                    answered_ms,
                    took_ms: started.elapsed().as_millis(),
                    reply,
                }
            })
        })
        .collect();
    let mut submitted = Vec::new();
    for client in clients {
        submitted.push(client.await.expect("client finished"));
    }
    submitted
}

/// The wall clock in milliseconds since the epoch, as the service's clock reads it.
fn wall_ms() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970");
    i64::try_from(since.as_millis()).expect("fits")
}
