//! getMergeQueueMetrics over HTTP: exact figures of a realistic hour, organisation scoping,
//! errors, Bearer tokens, `promtool check metrics`, and a real Prometheus scraping it.

use e2e::prometheus::{PrometheusServer, Samples, ScrapeTarget, promtool_check, scrape};
use e2e::timeline::{Event::*, Timeline};
use e2e::{ACME, Auth, Backend, REVOKED, TestEnv, UMBRELLA, on_both_stores, queue_body};
use mq_core::entry::EntryState::{Cancelled, Failed, Merged};
use mq_core::ids::{QueueId, RepoRef};
use mq_core::run::RunStatus::{Cancelled as RunCancelled, Failed as RunFailed, Succeeded};
use mq_core::time::Timestamp;
use serde_json::json;
use std::time::Duration;

on_both_stores!(
    an_afternoon_of_the_queue_in_exact_figures,
    the_output_passes_promtool,
    only_the_callers_queues_are_included,
    a_repository_narrows_the_answer_to_its_queues,
    bad_queries_are_refused_naming_the_field,
    bearer_tokens_work_on_the_metrics_endpoint,
    fifty_queues_answer_in_one_request,
);

/// The moment the metrics are read: 2026-11-18T19:33:20Z.
const NOW: Timestamp = Timestamp(1_795_000_000_000);
const ROCKET: &str = "metrics?repo=acme/rocket&repoHost=github.com";

fn path(query: &str) -> String {
    format!(
        "getMergeQueueMetrics{}",
        query.trim_start_matches("metrics")
    )
}

fn rocket_id() -> QueueId {
    QueueId::new(
        &RepoRef::new("github.com", "acme", "rocket").unwrap(),
        "main",
    )
}

/// acme's rocket/main queue through an afternoon; acme's empty probe/main queue; umbrella's
/// queue on the release branch of its own rocket repository. The queue is paused at the end.
///
/// | minutes ago | what happens |
/// |---|---|
/// | 180 | the queues are created (concurrency 2, bisection concurrency 1) |
/// | 100, 95, 70 | #1 submitted, tested in r1 (passes), merged: all before the hour |
/// | 75, 72, 68 | #2 submitted not ready, ready, tested in r2 |
/// | 65, 64 | r2 cancelled, #2 restarts (before the hour), r3 tests it |
/// | 50, 45 | #3 and #4 submitted, tested as a batch in r4 |
/// | 40 | r3 passes, #2 merges |
/// | 35, 34 | #5 submitted not ready, ready |
/// | 30 | r4 fails; r5-bisection tests #3; r6 tests #5 |
/// | 25, 24 | r6 cancelled, #5 restarts, r7 tests it |
/// | 20 | r5-bisection fails: #3 fails; r8-bisection tests #4 (still running) |
/// | 15, 12 | #6 submitted, cancelled |
/// | 8, 6 | #7 submitted not ready (stays), #8 submitted |
/// | 5 | r7 passes, #5 merges |
/// | 4, 3, 2 | r9 tests #8; #9 submitted; r10 tests #9 |
/// | 1 | a Git host action is queued |
async fn afternoon(env: &TestEnv) {
    env.clock.set(NOW.plus_millis(-180 * 60_000));
    let settings = json!({"concurrency": 2, "bisectionConcurrency": 1});
    env.ok("createQueue", &queue_body("rocket", settings)).await;
    env.ok("createQueue", &queue_body("probe", json!({}))).await;
    let mut release = queue_body("rocket", json!({"targetBranch": "release"}));
    release["repo"]["owner"] = json!("umbrella");
    let r = env.post("createQueue", Some(UMBRELLA), &release).await;
    assert_eq!(r.status, 200, "{:?}", r.body);

    let t = Timeline::new(env.store.as_ref(), rocket_id(), NOW);
    t.at(100, vec![Submit(1)]).await;
    t.at(95, vec![Start("r1", vec![1])]).await;
    t.at(75, vec![SubmitNotReady(2)]).await;
    t.at(72, vec![Ready(2)]).await;
    t.at(70, vec![Finish("r1", Succeeded), Conclude(1, Merged)])
        .await;
    t.at(68, vec![Start("r2", vec![2])]).await;
    t.at(65, vec![Finish("r2", RunCancelled), Restart(2)]).await;
    t.at(64, vec![Start("r3", vec![2])]).await;
    t.at(50, vec![Submit(3), Submit(4)]).await;
    t.at(45, vec![Start("r4", vec![3, 4])]).await;
    t.at(40, vec![Finish("r3", Succeeded), Conclude(2, Merged)])
        .await;
    t.at(35, vec![SubmitNotReady(5)]).await;
    t.at(34, vec![Ready(5)]).await;
    t.at(
        30,
        vec![
            Finish("r4", RunFailed),
            Start("r5-bisection", vec![3]),
            Start("r6", vec![5]),
        ],
    )
    .await;
    t.at(25, vec![Finish("r6", RunCancelled), Restart(5)]).await;
    t.at(24, vec![Start("r7", vec![5])]).await;
    t.at(
        20,
        vec![
            Finish("r5-bisection", RunFailed),
            Conclude(3, Failed),
            Start("r8-bisection", vec![4]),
        ],
    )
    .await;
    t.at(15, vec![Submit(6)]).await;
    t.at(12, vec![Conclude(6, Cancelled)]).await;
    t.at(8, vec![SubmitNotReady(7)]).await;
    t.at(6, vec![Submit(8)]).await;
    t.at(5, vec![Finish("r7", Succeeded), Conclude(5, Merged)])
        .await;
    t.at(4, vec![Start("r9", vec![8])]).await;
    t.at(3, vec![Submit(9)]).await;
    t.at(2, vec![Start("r10", vec![9])]).await;
    t.at(1, vec![Effect("x1")]).await;

    env.clock.set(NOW);
    let paused = queue_body("rocket", json!({"state": "paused"}));
    env.ok("updateQueue", &paused).await;
}

const MAIN: [(&str, &str); 3] = [
    ("repo", "acme/rocket"),
    ("branch", "main"),
    ("queue_type", "main"),
];
const BISECTION: [(&str, &str); 3] = [
    ("repo", "acme/rocket"),
    ("branch", "main"),
    ("queue_type", "bisection"),
];

fn with<'a>(
    base: [(&'a str, &'a str); 3],
    extra: &[(&'a str, &'a str)],
) -> Vec<(&'a str, &'a str)> {
    base.iter().chain(extra).copied().collect()
}

async fn an_afternoon_of_the_queue_in_exact_figures(env: TestEnv) {
    afternoon(&env).await;
    let s = scrape(&env, ROCKET).await;

    // Live: #4 bisecting, #8 and #9 testing, #7 not ready; r9 and r10 main, r8 bisection.
    assert_eq!(s.value("mq_queue_depth_current", &MAIN), 3.0);
    assert_eq!(s.value("mq_awaiting_mergeability", &MAIN), 1.0);
    assert_eq!(s.value("mq_testing_slots_active", &MAIN), 2.0);
    assert_eq!(s.value("mq_testing_slots_active", &BISECTION), 1.0);
    assert_eq!(s.value("mq_test_runs_active", &MAIN), 2.0);
    assert_eq!(s.value("mq_test_runs_active", &BISECTION), 1.0);
    assert_eq!(s.value("mq_test_runs_limit", &MAIN), 2.0);
    assert_eq!(s.value("mq_test_runs_limit", &BISECTION), 1.0);
    assert_eq!(s.value("mq_effects_pending", &MAIN), 1.0);
    for (state, value) in [
        ("running", 0.0),
        ("paused", 1.0),
        ("draining", 0.0),
        ("switching_modes", 0.0),
    ] {
        assert_eq!(
            s.value("mq_queue_state", &with(MAIN, &[("state", state)])),
            value,
            "{state}"
        );
    }

    // The last hour: #2 and #5 merged, #3 failed, #6 cancelled (#1 merged 70 minutes ago).
    let conclusions = |c| {
        s.value(
            "mq_pr_conclusions_1h_total",
            &with(MAIN, &[("conclusion", c)]),
        )
    };
    assert_eq!(
        (
            conclusions("merged"),
            conclusions("failed"),
            conclusions("cancelled")
        ),
        (2.0, 1.0, 1.0)
    );
    assert_eq!(
        s.value("mq_pr_restarts_1h_total", &MAIN),
        1.0,
        "#5's; #2's was 65 minutes ago"
    );
    let runs = |base, status| {
        s.value(
            "mq_test_runs_finished_1h",
            &with(base, &[("status", status)]),
        )
    };
    assert_eq!(
        (
            runs(MAIN, "succeeded"),
            runs(MAIN, "failed"),
            runs(MAIN, "cancelled")
        ),
        (2.0, 1.0, 1.0),
        "r3 and r7, r4, r6"
    );
    assert_eq!(
        (
            runs(BISECTION, "succeeded"),
            runs(BISECTION, "failed"),
            runs(BISECTION, "cancelled")
        ),
        (0.0, 1.0, 0.0)
    );

    // Waits for a first test begun in the hour: #3 and #4 300 s, #5 240 s, #8 120 s, #9 60 s.
    let wait = "mq_pr_wait_duration_1h_seconds";
    s.assert_histogram(wait, &MAIN, [1., 5., 5., 5., 5., 5., 5., 5., 5.], 1020.0);
    // Runs with a result in the hour: r3 1440 s (#2), r4 900 s (#3, #4), r7 1140 s (#5);
    // r5-bisection 600 s (#3). r6 was cancelled.
    let test = "mq_pr_test_duration_1h_seconds";
    s.assert_histogram(test, &MAIN, [0., 0., 0., 2., 4., 4., 4., 4., 4.], 4380.0);
    s.assert_histogram(
        test,
        &BISECTION,
        [0., 0., 1., 1., 1., 1., 1., 1., 1.],
        600.0,
    );
    // Time in queue: #2 2100 s and #5 1800 s merged, #3 1800 s failed, #6 180 s cancelled.
    let tiq = "mq_pr_time_in_queue_1h_seconds";
    let merged = with(MAIN, &[("conclusion", "merged")]);
    let failed = with(MAIN, &[("conclusion", "failed")]);
    let cancelled = with(MAIN, &[("conclusion", "cancelled")]);
    s.assert_histogram(tiq, &merged, [0., 0., 0., 0., 1., 2., 2., 2., 2.], 3900.0);
    s.assert_histogram(tiq, &failed, [0., 0., 0., 0., 1., 1., 1., 1., 1.], 1800.0);
    s.assert_histogram(tiq, &cancelled, [0., 1., 1., 1., 1., 1., 1., 1., 1.], 180.0);
    // CI runs: #2 and #5 two each; #3 two (r4, r5-bisection); #6 none.
    let ci = |labels: &[(&str, &str)], le| {
        let mut l = labels.to_vec();
        l.push(("le", le));
        s.value("mq_pr_ci_runs_1h_bucket", &l)
    };
    assert_eq!(
        (ci(&merged, "1"), ci(&merged, "2"), ci(&merged, "+Inf")),
        (0.0, 2.0, 2.0)
    );
    assert_eq!(s.value("mq_pr_ci_runs_1h_sum", &merged), 4.0);
    assert_eq!(s.value("mq_pr_ci_runs_1h_sum", &failed), 2.0);
    assert_eq!(
        (
            ci(&cancelled, "1"),
            s.value("mq_pr_ci_runs_1h_sum", &cancelled)
        ),
        (1.0, 0.0)
    );
}

/// Every family parses; the only lint findings are the `_total` suffix of the two rolling
/// counts, whose names are those of the API users already scrape and whose type is gauge.
async fn the_output_passes_promtool(env: TestEnv) {
    afternoon(&env).await;
    for query in [ROCKET, "metrics"] {
        let r = env.get(&path(query), Auth::ApiToken(ACME)).await;
        let check = promtool_check(&r.text);
        assert!(check.exit_code == 0 || check.exit_code == 3, "{check:?}");
        let expected = [
            r#"mq_pr_conclusions_1h_total non-counter metrics should not have "_total" suffix"#,
            r#"mq_pr_restarts_1h_total non-counter metrics should not have "_total" suffix"#,
        ];
        assert_eq!(
            check.problems, expected,
            "promtool found more than the known names"
        );
    }
}

async fn only_the_callers_queues_are_included(env: TestEnv) {
    afternoon(&env).await;
    let acme = scrape(&env, "metrics").await;
    assert_eq!(acme.label_values("repo"), ["acme/probe", "acme/rocket"]);
    assert_eq!(
        acme.label_values("branch"),
        ["main"],
        "umbrella's release queue is not acme's"
    );
    assert_eq!(acme.value("mq_queue_depth_current", &MAIN), 3.0);
    let probe = [
        ("repo", "acme/probe"),
        ("branch", "main"),
        ("queue_type", "main"),
    ];
    assert_eq!(acme.value("mq_queue_depth_current", &probe), 0.0);
    assert_eq!(
        acme.value("mq_queue_state", &with(probe, &[("state", "running")])),
        1.0
    );

    let r = env.get(&path("metrics"), Auth::ApiToken(UMBRELLA)).await;
    let umbrella = Samples::parse(&r.text);
    assert_eq!(umbrella.label_values("branch"), ["release"]);
    assert_eq!(umbrella.label_values("repo"), ["umbrella/rocket"]);
}

async fn a_repository_narrows_the_answer_to_its_queues(env: TestEnv) {
    afternoon(&env).await;
    let rocket = scrape(&env, ROCKET).await;
    assert_eq!(rocket.label_values("repo"), ["acme/rocket"]);
    assert_eq!(rocket.label_values("branch"), ["main"]);
    let upper = scrape(&env, "metrics?repo=ACME/Rocket&repoHost=GitHub.com").await;
    assert_eq!(upper.len(), rocket.len(), "repository names ignore case");

    // A repository of the caller's without a queue (deleted, or not created yet): nothing to
    // show, and the scrape succeeds, so it does not read as the endpoint down.
    let r = env
        .get(
            &path("metrics?repo=acme/hive&repoHost=github.com"),
            Auth::ApiToken(ACME),
        )
        .await;
    assert_eq!((r.status, r.text.as_str()), (200, ""));
    // Another host's repository is not the caller's: 404, as for another organisation's.
    let r = env
        .get(
            &path("metrics?repo=acme/rocket&repoHost=gitlab.com"),
            Auth::ApiToken(ACME),
        )
        .await;
    assert_eq!(r.status, 404);
}

async fn bad_queries_are_refused_naming_the_field(env: TestEnv) {
    env.ok("createQueue", &queue_body("rocket", json!({})))
        .await;
    for (query, field) in [
        ("metrics?repo=acme/rocket", "repoHost"),
        ("metrics?repoHost=github.com", "repo"),
        ("metrics?repo=rocket&repoHost=github.com", "repo"),
        ("metrics?repo=acme/rocket/x&repoHost=github.com", "repo"),
        ("metrics?repo=acme/rocket&repoHost=git%20hub", "repoHost"),
        (
            "metrics?repo=acme/a&repo=acme/b&repoHost=github.com",
            "repo",
        ),
    ] {
        let r = env.get(&path(query), Auth::ApiToken(ACME)).await;
        assert_eq!(r.status, 400, "{query}: {}", r.text);
        assert_eq!(r.header("content-type"), "application/json");
        let body = r.json();
        assert_eq!(body["error"]["code"], "INVALID_FIELD", "{query}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with(&format!("{field} ")),
            "{query}: {message}"
        );
        assert!(!r.header("x-request-id").is_empty());
    }
    for auth in [
        Auth::None,
        Auth::ApiToken("wrong"),
        Auth::ApiToken(REVOKED),
        Auth::Bearer("wrong"),
    ] {
        let r = env.get(&path(ROCKET), auth).await;
        assert_eq!(
            (r.status, r.json()["error"]["code"].as_str()),
            (401, Some("UNAUTHORIZED"))
        );
    }
    let r = env.post(&path(ROCKET), Some(ACME), &json!({})).await;
    assert_eq!((r.status, r.code()), (405, "METHOD_NOT_ALLOWED"));
    assert!(
        r.headers.get("x-request-id").is_some(),
        "also on answers of the router"
    );
}

async fn bearer_tokens_work_on_the_metrics_endpoint(env: TestEnv) {
    env.ok("createQueue", &queue_body("rocket", json!({})))
        .await;
    let r = env.get(&path(ROCKET), Auth::Bearer(ACME)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let s = Samples::parse(&r.text);
    assert_eq!(s.value("mq_queue_depth_current", &MAIN), 0.0);
    let r = env.get(&path(ROCKET), Auth::Bearer(UMBRELLA)).await;
    assert_eq!(
        (r.status, r.json()["error"]["code"].as_str()),
        (404, Some("REPOSITORY_NOT_FOUND")),
        "acme/rocket is not umbrella's"
    );
}

async fn fifty_queues_answer_in_one_request(env: TestEnv) {
    for i in 0..50 {
        let branch = format!("release/{i:02}");
        env.ok(
            "createQueue",
            &queue_body("rocket", json!({"targetBranch": branch})),
        )
        .await;
    }
    let s = scrape(&env, "metrics").await;
    assert_eq!(s.label_values("branch").len(), 50);
    assert_eq!(s.family("mq_queue_depth_current").len(), 50);
}

/// A Prometheus server on loopback scrapes the gateway (Bearer token, repository in the
/// query) and answers `mq_queue_depth_current` with the queue's depth.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_prometheus_scrapes_the_endpoint() {
    let env = TestEnv::start(Backend::Memory).await;
    afternoon(&env).await;
    let prometheus = PrometheusServer::start(&ScrapeTarget {
        address: env.gateway.addr.to_string(),
        metrics_path: "/v1/getMergeQueueMetrics".into(),
        params: vec![
            ("repo".into(), "acme/rocket".into()),
            ("repoHost".into(), "github.com".into()),
        ],
        bearer_token: ACME.into(),
    })
    .await;
    let found = prometheus
        .query_until_found("mq_queue_depth_current", Duration::from_secs(30))
        .await;
    assert_eq!(found.len(), 1, "{found:?}");
    let (labels, value) = &found[0];
    assert_eq!(*value, 3.0);
    for (k, v) in [
        ("repo", "acme/rocket"),
        ("branch", "main"),
        ("queue_type", "main"),
        ("job", "merge-queue"),
    ] {
        assert_eq!(labels.get(k).map(String::as_str), Some(v), "{labels:?}");
    }
    let up = prometheus.query("up{job=\"merge-queue\"}").await;
    assert_eq!(up.iter().map(|(_, v)| *v).collect::<Vec<_>>(), [1.0]);
    let bisection = prometheus
        .query("mq_testing_slots_active{queue_type=\"bisection\"}")
        .await;
    assert_eq!(bisection.iter().map(|(_, v)| *v).collect::<Vec<_>>(), [1.0]);
}

/// On DynamoDB, a queue holding an item this version cannot decode (written by a newer
/// version, then rolled back; or edited by hand) does not take the organisation's other
/// queues' figures with it: the scrape answers 200 with the others' series and
/// `mq_queue_read_failed` at 1 for that queue alone, and `listQueues` names it apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_queue_leaves_the_others_figures_and_is_named() {
    use aws_sdk_dynamodb::types::AttributeValue;
    use mq_store::dynamo::keys::{PK, SK, entry_sk};
    use std::collections::HashMap;
    use std::sync::Arc;

    let store = e2e::new_dynamo_store().await;
    let clock = Arc::new(e2e::TestClock::default());
    let app = Arc::new(mq_service::App::new(store.clone(), clock.clone()));
    let env = TestEnv::serve(Backend::DynamoDb, store.clone(), app, clock).await;
    env.ok("createQueue", &queue_body("rocket", json!({})))
        .await;
    env.ok("createQueue", &queue_body("probe", json!({}))).await;
    let undecodable = HashMap::from([
        (
            PK.to_owned(),
            AttributeValue::S(rocket_id().as_str().to_owned()),
        ),
        (SK.to_owned(), AttributeValue::S(entry_sk(7))),
        ("state".to_owned(), AttributeValue::N("5".into())),
    ]);
    store
        .client()
        .put_item()
        .table_name(&store.tables().queues)
        .set_item(Some(undecodable))
        .send()
        .await
        .unwrap();

    let acme = scrape(&env, "metrics").await;
    assert_eq!(acme.value("mq_queue_read_failed", &MAIN), 1.0);
    let probe = [
        ("repo", "acme/probe"),
        ("branch", "main"),
        ("queue_type", "main"),
    ];
    assert_eq!(acme.value("mq_queue_read_failed", &probe), 0.0);
    assert_eq!(acme.value("mq_queue_depth_current", &probe), 0.0);
    let rocket_series: Vec<String> = acme
        .family("mq_")
        .into_iter()
        .filter(|s| s.contains(r#"repo="acme/rocket""#))
        .collect();
    assert_eq!(
        rocket_series,
        [r#"mq_queue_read_failed{branch="main",queue_type="main",repo="acme/rocket"} 1"#]
    );

    let list = env.ok("listQueues", &json!({})).await;
    let listed: Vec<&str> = list["queues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["repo"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["probe"]);
    assert_eq!(
        list["unreadableQueues"],
        json!([{"repo": {"host": "github.com", "owner": "acme", "name": "rocket"},
                "targetBranch": "main"}])
    );
}
