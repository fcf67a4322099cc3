//! Every endpoint sends the DynamoDB requests BENCHMARKS.md lists, no more: the requests are
//! logged by an SDK interceptor on the store's client, against moto.

use e2e::requests::measure;

/// (endpoint, call, token lookups, owner lookups, the call's own requests, effect rounds).
const EXPECTED: &[(&str, &str, usize, usize, &str, usize)] = &[
    ("createQueue", "a queue", 1, 1, "PutItem Queues", 0),
    (
        "updateQueue",
        "settings of an empty queue",
        1,
        1,
        "Query Queues, TransactWriteItems Queues",
        0,
    ),
    (
        "setImpactedTargets",
        "#3, not submitted yet",
        1,
        1,
        "Query Queues, PutItem PullRequests, BatchGetItem PullRequests+Queues",
        0,
    ),
    (
        "submitPullRequest",
        "#1 into an empty queue (it starts testing)",
        1,
        1,
        "BatchGetItem PullRequests+Queues, Query Queues, TransactWriteItems Queues",
        2,
    ),
    (
        "submitPullRequest",
        "#2 behind #1 (it starts testing on top of #1)",
        1,
        1,
        "BatchGetItem PullRequests+Queues, Query Queues, TransactWriteItems Queues",
        2,
    ),
    ("getQueue", "two pull requests", 1, 1, "Query Queues", 0),
    (
        "getSubmittedPullRequest",
        "#1",
        1,
        1,
        "BatchGetItem PullRequests+Queues",
        0,
    ),
    (
        "getMergeQueueTestingDetails",
        "#1's run",
        1,
        1,
        "BatchGetItem Queues+TestRuns",
        0,
    ),
    (
        "setImpactedTargets",
        "#1, testing",
        1,
        1,
        "Query Queues, TransactWriteItems PullRequests+Queues",
        0,
    ),
    (
        "restartTestsOnPullRequest",
        "#1 (its run and #2's are cancelled and rebuilt)",
        1,
        1,
        "Query Queues, TransactWriteItems PullRequests+Queues+TestRuns",
        2,
    ),
    (
        "cancelPullRequest",
        "#2 (its run is cancelled)",
        1,
        1,
        "Query Queues, TransactWriteItems PullRequests+Queues+TestRuns",
        1,
    ),
    (
        "webhooks/github",
        "`build` passed on #1's run (it merges)",
        0,
        1,
        "Query Queues ×2, TransactWriteItems Queues, GetItem Queues",
        2,
    ),
    (
        "webhooks/github",
        "#3 edited (in no queue)",
        0,
        1,
        "Query Queues, BatchGetItem PullRequests+Queues",
        0,
    ),
    (
        "webhooks/github",
        "`/service merge` on #3 (it starts testing)",
        0,
        2,
        "Query Queues ×2, PutItem IdempotencyKeys, BatchGetItem PullRequests+Queues, \
         TransactWriteItems Queues, UpdateItem IdempotencyKeys",
        2,
    ),
    (
        "webhooks/github",
        "a push to #3 (it leaves the queue)",
        0,
        1,
        "Query Queues ×2, BatchGetItem PullRequests+Queues, \
         TransactWriteItems PullRequests+Queues+TestRuns",
        1,
    ),
    (
        "getMergeQueueMetrics",
        "one queue",
        1,
        1,
        "Query Queues ×2, Query PullRequests ×2, Query TestRuns",
        0,
    ),
    (
        "listQueues",
        "the organisation's queues (one)",
        1,
        1,
        "Query Queues ×2, Query PullRequests ×2, Query TestRuns",
        0,
    ),
    (
        "getQueueActivity",
        "the queue, #1 merged",
        1,
        1,
        "Query Queues, Query PullRequests ×2, Query TestRuns",
        0,
    ),
    (
        "getPullRequestHistory",
        "#1, merged",
        1,
        1,
        "Query Queues, BatchGetItem PullRequests+Queues, Query TestRuns, Query PullRequests",
        0,
    ),
    (
        "getQueueAdvice",
        "a history too short for advice",
        1,
        1,
        "Query Queues, Query PullRequests, Query TestRuns",
        0,
    ),
    (
        "tick",
        "one queue has work (#1 testing)",
        0,
        1,
        "Query Queues ×2, TransactWriteItems Queues, DeleteItem Queues, Query TestHealth",
        0,
    ),
    (
        "tick",
        "no queue has work",
        0,
        0,
        "Query Queues, Query TestHealth",
        0,
    ),
    ("createQueue", "a second queue", 1, 1, "PutItem Queues", 0),
    (
        "deleteQueue",
        "the empty second queue",
        1,
        1,
        "Query Queues ×2, TransactWriteItems Queues",
        0,
    ),
    (
        "flaky-tests/upload",
        "a report of a few test cases, all new",
        1,
        1,
        "BatchGetItem TestHealth ×2, PutItem TestHealth ×2, BatchWriteItem TestHealth, TransactWriteItems TestHealth",
        0,
    ),
    (
        "flaky-tests/list-unhealthy-tests",
        "one page",
        1,
        1,
        "Query TestHealth ×2, GetItem TestHealth",
        0,
    ),
    (
        "flaky-tests/list-quarantined-tests",
        "one page",
        1,
        1,
        "GetItem TestHealth",
        0,
    ),
    (
        "flaky-tests/update-settings",
        "turn quarantining on",
        1,
        1,
        "GetItem TestHealth, TransactWriteItems TestHealth",
        0,
    ),
    (
        "flaky-tests/check-quarantined",
        "one failed test",
        1,
        1,
        "BatchGetItem TestHealth",
        0,
    ),
    (
        "flaky-tests/link-ticket",
        "one test case",
        1,
        1,
        "BatchGetItem TestHealth, TransactWriteItems TestHealth",
        0,
    ),
    (
        "flaky-tests/upload-url",
        "a presigned URL (signed locally; no S3 request)",
        1,
        1,
        "PutItem TestHealth",
        0,
    ),
];

/// The requests of a summary, in any order: the parts of a call that run at once send theirs
/// in an order that varies (the tick's test-health recovery runs beside its queues).
fn requests(summary: &str) -> Vec<&str> {
    let mut requests: Vec<&str> = summary.split(", ").collect();
    requests.sort_unstable();
    requests
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_request_counts_on_moto() {
    let measured = measure().await;
    let mut differences = Vec::new();
    for m in &measured {
        let expected = EXPECTED
            .iter()
            .find(|(endpoint, case, ..)| *endpoint == m.endpoint && *case == m.case);
        let actual = (
            usize::from(m.authenticated()),
            m.owner_lookups(),
            m.own_summary(),
            m.effect_rounds(),
        );
        match expected {
            Some((_, _, token, owner, own, rounds))
                if (*token, *owner, requests(own), *rounds)
                    == (actual.0, actual.1, requests(&actual.2), actual.3) => {}
            _ => differences.push(format!("{m:#?}\n    {:?}", actual)),
        }
    }
    assert_eq!(
        measured.len(),
        EXPECTED.len(),
        "every call of BENCHMARKS.md's table is measured"
    );
    assert!(
        differences.is_empty(),
        "requests differ from BENCHMARKS.md:\n{}",
        differences.join("\n")
    );
}
