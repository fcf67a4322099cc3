//! The dashboard's read-only operations on a live queue (real git, CI statuses set by the
//! test, the clock moved by the test so durations are known): `listQueues`,
//! `getQueueActivity` (the line, the waiting pull requests with their estimated time to merge,
//! the conclusions with their reasons, the histograms) and `getPullRequestHistory`; and the
//! pages themselves as the gateway serves them.

use e2e::git_repo::GitRepo;
use e2e::live::{CI, LiveEnv, body, pr_body, wait_for};
use e2e::{ACME, Backend, live_on_both_stores};
use mq_core::git::StatusState;
use serde_json::{Value, json};

live_on_both_stores!(the_queue_page_follows_a_pull_request_from_waiting_to_merged_or_failed);

async fn activity(env: &LiveEnv, repo: &GitRepo) -> Value {
    env.ok("getQueueActivity", &body(repo, json!({}))).await
}

fn prs(list: &Value) -> Vec<u64> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|w| w["prNumber"].as_u64().unwrap())
        .collect()
}

async fn only_queue(env: &LiveEnv) -> Value {
    let list = env.ok("listQueues", &json!({})).await;
    assert_eq!(list["organisation"], "acme");
    let queues = list["queues"].as_array().unwrap();
    assert_eq!(queues.len(), 1, "{list}");
    queues[0].clone()
}

async fn the_queue_page_follows_a_pull_request_from_waiting_to_merged_or_failed(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = env.repo("dashboard");
    repo.add_prs(3, &[]);
    env.create_queue(&repo, json!({"requiredStatuses": [CI]}))
        .await;
    let fresh = only_queue(&env).await;
    assert_eq!(fresh["state"], "running");
    assert_eq!(
        (fresh["depth"].as_u64(), fresh["runsInFlight"].as_u64()),
        (Some(0), Some(0))
    );

    for pr in 1..=3 {
        env.submit(&repo, pr).await;
    }
    let first = env.wait_for_run(&repo, 1).await;
    let seen = activity(&env, &repo).await;
    let line = seen["line"].as_array().unwrap();
    assert_eq!(line.len(), 1, "{seen}");
    assert_eq!(line[0]["testRunId"], first.id);
    assert_eq!(line[0]["status"], "in_progress");
    assert_eq!(prs(&line[0]["pullRequests"]), [1]);
    assert_eq!(line[0]["pullRequests"][0]["state"], "testing");
    assert_eq!(line[0]["testBranchSha"], first.sha);
    assert_eq!(prs(&seen["waiting"]), [2, 3]);
    assert_eq!(seen["waiting"][0]["position"], 1);
    assert_eq!(seen["waiting"][0]["state"], "pending");
    assert_eq!(seen["estimate"]["runs"], 0);
    assert!(
        seen["waiting"][0].get("estimatedMergeSeconds").is_none(),
        "no run finished yet, so no estimate: {seen}"
    );

    // #1 tests for ten minutes, then passes and merges; #2 starts.
    env.clock.advance_minutes(10);
    env.pass(&repo, 1).await;
    env.wait_for_state(&repo, 1, "merged").await;
    let second = env.wait_for_run(&repo, 2).await;
    env.clock.advance_minutes(2);
    let seen = activity(&env, &repo).await;
    assert_eq!(seen["estimate"]["runs"], 1);
    let mean = seen["estimate"]["meanTestSeconds"].as_f64().unwrap();
    // Ten minutes of the test's clock, and the real time the steps took.
    assert!((600.0..610.0).contains(&mean), "{mean}");
    assert_eq!(seen["estimate"]["failureRate"], 0.0);
    assert_eq!(prs(&seen["line"][0]["pullRequests"]), [2]);
    assert!(seen["line"][0]["ageSeconds"].as_u64().unwrap() >= 120);
    assert_eq!(prs(&seen["waiting"]), [3]);
    // #3 is next behind the group testing #2, at concurrency 1: two waves of ten minutes,
    // two of the first already spent.
    let estimate = seen["waiting"][0]["estimatedMergeSeconds"]
        .as_u64()
        .unwrap();
    let age = seen["line"][0]["ageSeconds"].as_f64().unwrap();
    let expected = 2.0 * mean - age;
    assert!((1070.0..1100.0).contains(&expected), "{expected}: {seen}");
    assert!(
        (estimate as f64 - expected).abs() <= 2.0,
        "{estimate}, expected {expected}: {seen}"
    );
    assert!(seen["waiting"][0]["estimatedMergeAt"].is_string());
    let merged = &seen["conclusions"][0];
    assert_eq!(
        (merged["prNumber"].as_u64(), merged["state"].as_str()),
        (Some(1), Some("merged"))
    );
    assert_eq!(merged["testRunId"], first.id);

    // A paused queue starts nothing: no estimate.
    env.update_queue(&repo, json!({"state": "paused"})).await;
    let paused = activity(&env, &repo).await;
    assert_eq!(paused["queue"]["state"], "paused");
    assert!(
        paused["waiting"][0].get("estimatedMergeSeconds").is_none(),
        "{paused}"
    );
    env.update_queue(&repo, json!({"state": "running"})).await;

    // #2 fails its required status. The group behind it (#3 on top of #2) has its result
    // too, which closes the pending-failure window: #2 leaves the queue failed, with its
    // reason, and #3 is tested again without it.
    env.set_status(&repo, &second.sha, CI, StatusState::Failure)
        .await;
    env.wait_for_state(&repo, 2, "pending_failure").await;
    env.pass(&repo, 3).await;
    env.wait_for_state(&repo, 2, "failed").await;
    let seen = wait_for("#2 among the conclusions", || async {
        let seen = activity(&env, &repo).await;
        match seen["conclusions"].as_array().map(Vec::len) {
            Some(2) => Ok(seen),
            _ => Err(seen.to_string()),
        }
    })
    .await;
    assert_eq!(prs(&seen["conclusions"]), [2, 1], "newest first");
    let failed = &seen["conclusions"][0];
    assert_eq!(failed["state"], "failed");
    assert_eq!(failed["reason"], "tests_failed");
    assert!(failed["detail"].as_str().unwrap().contains(CI), "{failed}");
    // #1's run, #2's, and #3's on top of #2.
    assert_eq!(seen["histograms"]["testSeconds"]["count"], 3);
    let counts: u64 = seen["histograms"]["testSeconds"]["counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .sum();
    assert_eq!(counts, 3);
    assert_eq!(seen["histograms"]["timeInQueueSeconds"]["count"], 2);

    let summary = only_queue(&env).await;
    assert_eq!(summary["mergedLastHour"], 1);
    assert_eq!(summary["failedLastHour"], 1);

    let history = env
        .ok("getPullRequestHistory", &pr_body(&repo, 2, json!({})))
        .await;
    let states: Vec<&str> = history["states"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["state"].as_str().unwrap())
        .collect();
    assert_eq!(
        states,
        [
            "not_ready",
            "pending",
            "testing",
            "pending_failure",
            "failed"
        ],
        "{history}"
    );
    assert_eq!(history["conclusion"]["reason"], "tests_failed");
    let runs = history["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{history}");
    assert_eq!(runs[0]["testRunId"], second.id);
    assert_eq!(runs[0]["status"], "failed");
    assert_eq!(runs[0]["ci"][0]["name"], CI);
    assert_eq!(runs[0]["ci"][0]["state"], "failure");
    assert!(
        runs[0]["ci"][0]["url"]
            .as_str()
            .unwrap()
            .starts_with("https://ci.example.com/")
    );

    let merged = env
        .ok("getPullRequestHistory", &pr_body(&repo, 1, json!({})))
        .await;
    assert_eq!(merged["pullRequest"]["state"], "merged");
    assert!(
        merged.get("conclusion").is_none(),
        "a merge has no reason: {merged}"
    );
    assert_eq!(merged["runs"][0]["testRunId"], first.id);

    let never = env
        .post(
            "getPullRequestHistory",
            Some(ACME),
            &pr_body(&repo, 42, json!({})),
        )
        .await;
    assert_eq!(
        (never.status, never.code()),
        (404, "PULL_REQUEST_NOT_FOUND")
    );
    let bad = env
        .post(
            "getQueueActivity",
            Some(ACME),
            &json!({"repo": {"host": "github.com"}}),
        )
        .await;
    assert_eq!(bad.status, 400, "{:?}", bad.body);
    assert!(bad.message().contains("repo"), "{}", bad.message());
}

/// The pages, through the gateway: the application at `/`, its files under `/ui/`, every
/// answer with the security headers; nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_serves_the_pages_with_a_strict_policy() {
    let env = e2e::TestEnv::start(Backend::Memory).await;
    let base = format!("http://{}", env.gateway.addr);
    let get = |path: &str| env.http.get(format!("{base}{path}")).send();
    let page = get("/").await.unwrap();
    assert_eq!(page.status(), 200);
    let header = |r: &reqwest::Response, name: &str| {
        r.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    assert_eq!(header(&page, "content-type"), "text/html; charset=utf-8");
    assert_eq!(
        header(&page, "content-security-policy"),
        mq_http::pages::CONTENT_SECURITY_POLICY
    );
    assert_eq!(header(&page, "x-content-type-options"), "nosniff");
    assert_eq!(header(&page, "referrer-policy"), "no-referrer");
    let html = page.text().await.unwrap();
    assert!(html.contains(r#"<script type="module" src="/ui/app.js"></script>"#));
    for asset in ["/ui/app.js", "/ui/style.css", "/ui/vendor/uPlot.esm.js"] {
        let r = get(asset).await.unwrap();
        assert_eq!(r.status(), 200, "{asset}");
        assert!(!header(&r, "etag").is_empty(), "{asset}");
    }
    for missing in ["/ui/secret", "/ui/../openapi/openapi.json", "/dashboard"] {
        let r = get(missing).await.unwrap();
        assert_eq!(r.status(), 404, "{missing}");
    }
    let post = env.http.post(format!("{base}/")).send().await.unwrap();
    assert_eq!(post.status(), 405);
    // The API keeps answering JSON under /v1.
    let no_token = env.post("listQueues", None, &json!({})).await;
    assert_eq!((no_token.status, no_token.code()), (401, "UNAUTHORIZED"));
}
