//! A commit whose answer is lost: the store applied it, but the request saw a timeout (as
//! when DynamoDB applied a transaction and its response never arrived). The request reads
//! the queue again, finds its commit there and answers as if the answer had come: the change
//! happened once and the client is told so, instead of a 503 for a change that happened. A
//! deleted queue whose answer was lost is found gone.

use e2e::live::{LiveEnv, body};
use e2e::{ACME, Backend, live_on_both_stores};
use mq_store::FaultyStore;
use mq_store::faults::FaultKind;
use serde_json::json;
use std::sync::Arc;

live_on_both_stores!(
    a_creation_whose_answer_is_lost_is_found_and_answered,
    every_commit_whose_answer_is_lost_is_found_and_answered,
    a_delete_whose_answer_is_lost_is_answered_by_the_queue_being_gone,
);

/// The application over a store that can lose answers, and that store.
async fn env_losing_answers(backend: Backend) -> (LiveEnv, Arc<FaultyStore>) {
    LiveEnv::options()
        .without_tick()
        .start_with_faulty_store(backend, 7)
        .await
}

/// A queue created once, whose answer was lost (or which the SDK sent again and found
/// there): the request finds its own queue, by its first commit id, and answers 200; another
/// request's creation of it is still 409.
async fn a_creation_whose_answer_is_lost_is_found_and_answered(backend: Backend) {
    let (env, faulty) = env_losing_answers(backend).await;
    let repo = env.repo("rocket");
    faulty.set_lost_answer_rate(1.0);
    let created = env
        .post("createQueue", Some(ACME), &body(&repo, json!({})))
        .await;
    faulty.set_lost_answer_rate(0.0);
    assert_eq!(created.status, 200, "{}", created.body);
    assert_eq!(
        faulty.counts().injected.get(&FaultKind::AnswerLost),
        Some(&1)
    );
    let again = env
        .post("createQueue", Some(ACME), &body(&repo, json!({})))
        .await;
    assert_eq!((again.status, again.code()), (409, "QUEUE_ALREADY_EXISTS"));
}

async fn a_delete_whose_answer_is_lost_is_answered_by_the_queue_being_gone(backend: Backend) {
    let (env, faulty) = env_losing_answers(backend).await;
    let repo = env.repo("rocket");
    env.create_queue(&repo, json!({})).await;
    faulty.set_lost_answer_rate(1.0);
    let deleted = env
        .post("deleteQueue", Some(ACME), &body(&repo, json!({})))
        .await;
    faulty.set_lost_answer_rate(0.0);
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    assert_eq!(
        faulty.counts().injected.get(&FaultKind::AnswerLost),
        Some(&1)
    );
    let read = env
        .post("getQueue", Some(ACME), &body(&repo, json!({})))
        .await;
    assert_eq!((read.status, read.code()), (404, "QUEUE_NOT_FOUND"));
}

async fn every_commit_whose_answer_is_lost_is_found_and_answered(backend: Backend) {
    let (env, faulty) = env_losing_answers(backend).await;
    let repo = env.repo("rocket");
    repo.add_prs(2, &[]);
    env.create_queue(&repo, json!({"state": "paused"})).await;

    faulty.set_lost_answer_rate(1.0);
    for pr in 1..=2 {
        let submitted = env.submit_with(&repo, pr, json!({})).await;
        assert_eq!(submitted.status, 200, "submit #{pr}: {}", submitted.body);
    }
    let cancelled = env.pr_call("cancelPullRequest", &repo, 1).await;
    assert_eq!(cancelled.status, 200, "cancel: {}", cancelled.body);
    faulty.set_lost_answer_rate(0.0);

    let lost = faulty
        .counts()
        .injected
        .get(&FaultKind::AnswerLost)
        .copied();
    assert!(lost >= Some(3), "every commit lost its answer: {lost:?}");
    assert_eq!(env.pull_request(&repo, 1).await["state"], "cancelled");
    assert_eq!(env.pull_request(&repo, 2).await["state"], "pending");
    let queue = env.queue(&repo).await;
    let listed: Vec<u64> = queue["enqueuedPullRequests"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|e| e["prNumber"].as_u64().expect("a number"))
        .collect();
    assert_eq!(listed, [2], "each submission made one entry");
}
