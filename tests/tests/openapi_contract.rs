//! The OpenAPI document against the handlers: every response of real flows (a queue testing and
//! merging pull requests on a real repository, test-health uploads and lists, webhook
//! deliveries, metrics, refusals) must have a documented status, the documented content type and
//! a body valid under the documented schema; and every operation of the document must have
//! answered `200` at least once. A field a handler adds, drops or renames fails this test.

use e2e::git_repo::GitRepo;
use e2e::health::{fixture, form, sha};
use e2e::live::{LiveEnv, body, pr_body};
use e2e::openapi::Contract;
use e2e::{ACME, Backend, TestEnv, UMBRELLA};
use mq_githost::webhook::{WebhookReceiver, sign};
use mq_lambda::s3::UploadBucket;
use serde_json::{Value, json};

const WEBHOOK_SECRET: &str = "contract-secret";

/// Sends requests and checks every answer against the document.
struct Checked<'a> {
    env: &'a TestEnv,
    contract: &'a Contract,
}

/// What came back.
struct Answer {
    status: u16,
    body: Value,
}

impl Checked<'_> {
    async fn post(&self, path: &str, token: Option<&str>, body: &Value) -> Answer {
        let bytes = serde_json::to_vec(body).unwrap();
        self.send("POST", path, token, "application/json", bytes, &[])
            .await
    }

    async fn send(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        content_type: &str,
        bytes: Vec<u8>,
        headers: &[(&str, &str)],
    ) -> Answer {
        let url = self.env.url(path);
        let mut req = match method {
            "GET" => self.env.http.get(url),
            _ => self
                .env
                .http
                .post(url)
                .header("content-type", content_type)
                .body(bytes),
        };
        if let Some(t) = token {
            req = req.header("x-api-token", t);
        }
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let response = req.send().await.expect("request sent");
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let bytes = response.bytes().await.expect("body read");
        let documented_path = format!("/{}", path.split('?').next().unwrap_or_default());
        if let Err(drift) =
            self.contract
                .check(method, &documented_path, status, &content_type, &bytes)
        {
            panic!("the response drifted from openapi/openapi.json: {drift}");
        }
        Answer {
            status,
            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        }
    }

    async fn ok(&self, path: &str, body: &Value) -> Value {
        let a = self.post(path, Some(ACME), body).await;
        assert_eq!(a.status, 200, "{path}: {}", a.body);
        a.body
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_response_matches_the_openapi_document() {
    let contract = Contract::load();
    let live = LiveEnv::options()
        .ci("test ! -e FAIL")
        .start(Backend::Memory)
        .await;
    let api = Checked {
        env: &live.env,
        contract: &contract,
    };
    queue_flow(&live, &api).await;
    test_health_flow(&api, false).await;
    refusals(&api).await;
    let no_secret = api
        .send(
            "POST",
            "webhooks/github",
            None,
            "application/json",
            b"{}".to_vec(),
            &[],
        )
        .await;
    assert_eq!(no_secret.body["error"]["code"], "WEBHOOKS_NOT_CONFIGURED");
    // The DynamoDB store (moto), with a webhook secret and an uploads bucket.
    let dynamo = with_hooks_and_bucket(Backend::DynamoDb).await;
    let api = Checked {
        env: &dynamo,
        contract: &contract,
    };
    webhook_flow(&api).await;
    test_health_flow(&api, true).await;
    refusals(&api).await;

    let missing = contract.unchecked_successes();
    assert!(
        missing.is_empty(),
        "operations never answered 200: {missing:?}"
    );
    let checked = contract.checked();
    let responses: usize = checked.values().map(|s| s.len()).sum();
    println!(
        "openapi contract: {} operations, {responses} (operation, status) pairs checked: {checked:?}",
        checked.len()
    );
}

/// A gateway with a webhook secret and an uploads bucket on moto.
async fn with_hooks_and_bucket(backend: Backend) -> TestEnv {
    let name = format!("mq-contract-uploads-{}", std::process::id());
    let bucket = UploadBucket::local(
        &mq_tables::local_config(&mq_tables::moto::endpoint()).await,
        &name,
    );
    bucket.create().await.expect("bucket created on moto");
    TestEnv::start_with(backend, |app| {
        app.with_webhook(WebhookReceiver::new(WEBHOOK_SECRET, "github.com"))
            .with_uploads(std::sync::Arc::new(bucket))
    })
    .await
}

async fn queue_flow(live: &LiveEnv, api: &Checked<'_>) {
    let repo = live.repo("contract");
    repo.add_prs(3, &[3]);
    api.ok(
        "createQueue",
        &body(&repo, json!({"requiredStatuses": ["local-ci"]})),
    )
    .await;
    assert_eq!(
        api.post("createQueue", Some(ACME), &body(&repo, json!({})))
            .await
            .status,
        409
    );
    api.ok(
        "updateQueue",
        &body(
            &repo,
            json!({"state": "PAUSED", "mergeMethod": "Merge_Commit"}),
        ),
    )
    .await;
    for pr in 1..=3 {
        api.ok(
            "submitPullRequest",
            &pr_body(&repo, pr, json!({"priority": "high"})),
        )
        .await;
    }
    let queue = api.ok("getQueue", &body(&repo, json!({}))).await;
    assert_eq!(
        queue["enqueuedPullRequests"].as_array().map(Vec::len),
        Some(3)
    );
    api.ok("updateQueue", &body(&repo, json!({"state": "running"})))
        .await;
    let run = live.wait_for_tested_run(&repo, 1).await;
    api.ok(
        "getMergeQueueTestingDetails",
        &body(&repo, json!({"testRunId": run})),
    )
    .await;
    live.wait_for_state(&repo, 1, "merged").await;
    live.wait_for_state(&repo, 3, "failed").await;
    let merged = api
        .ok("getSubmittedPullRequest", &pr_body(&repo, 1, json!({})))
        .await;
    assert_eq!(merged["state"], "merged");
    dashboard_reads(api, &repo).await;
    api.ok(
        "getMergeQueueTestingDetails",
        &body(&repo, json!({"testRunId": run})),
    )
    .await;
    restart_and_cancel(live, api, &repo).await;
    parallel_targets(live, api, &repo).await;
    let metrics = api
        .send("GET", "getMergeQueueMetrics", Some(ACME), "", vec![], &[])
        .await;
    assert_eq!(metrics.status, 200);
    let one = "getMergeQueueMetrics?repo=acme/contract&repoHost=github.com";
    assert_eq!(
        api.send("GET", one, Some(ACME), "", vec![], &[])
            .await
            .status,
        200
    );
    let doc = api.send("GET", "openapi.json", None, "", vec![], &[]).await;
    assert_eq!(doc.body["openapi"], "3.1.0");
    api.ok("deleteQueue", &body(&repo, json!({}))).await;
}

/// The dashboard's read-only operations, once #1 merged and #3 failed.
async fn dashboard_reads(api: &Checked<'_>, repo: &GitRepo) {
    let all = api.ok("listQueues", &json!({})).await;
    assert_eq!(all["organisation"], "acme");
    let one = api
        .ok(
            "listQueues",
            &json!({"repo": body(repo, json!({}))["repo"]}),
        )
        .await;
    assert_eq!(one["queues"].as_array().map(Vec::len), Some(1), "{one}");
    let activity = api.ok("getQueueActivity", &body(repo, json!({}))).await;
    let failed = activity["conclusions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["prNumber"] == 3))
        .unwrap_or_else(|| panic!("#3 among the conclusions: {activity}"));
    assert_eq!(failed["reason"], "tests_failed");
    let history = api
        .ok("getPullRequestHistory", &pr_body(repo, 3, json!({})))
        .await;
    assert_eq!(history["conclusion"]["reason"], "tests_failed");
    let advice = api.ok("getQueueAdvice", &body(repo, json!({}))).await;
    assert_eq!(
        advice["noAdvice"]["reason"], "not_enough_history",
        "{advice}"
    );
    let budget = json!({"goal": "fastestWithinBudget", "ciRunsPerHour": 4.5});
    let advice = api.ok("getQueueAdvice", &body(repo, budget)).await;
    assert_eq!(advice["ciRunsPerHour"], 4.5, "{advice}");
    let never = api
        .post(
            "getPullRequestHistory",
            Some(ACME),
            &pr_body(repo, 99, json!({})),
        )
        .await;
    assert_eq!(never.status, 404);
    assert_eq!(never.body["error"]["code"], "PULL_REQUEST_NOT_FOUND");
}

/// Restart a testing pull request, cancel it, and the refusals of both once it is gone.
async fn restart_and_cancel(live: &LiveEnv, api: &Checked<'_>, repo: &GitRepo) {
    repo.add_pr(e2e::git_repo::PrSpec::new(4));
    api.ok("submitPullRequest", &pr_body(repo, 4, json!({})))
        .await;
    live.wait_for_testing_to_start(repo, 4).await;
    let restarted = api
        .post(
            "restartTestsOnPullRequest",
            Some(ACME),
            &pr_body(repo, 4, json!({})),
        )
        .await;
    assert!(
        [200, 409].contains(&restarted.status),
        "restart: {}",
        restarted.body
    );
    let cancelled = api
        .post(
            "cancelPullRequest",
            Some(ACME),
            &pr_body(repo, 4, json!({})),
        )
        .await;
    if cancelled.status == 409 {
        // It merged first: cancel and restart of a finished entry are refused alike.
        live.wait_for_state(repo, 4, "merged").await;
    }
    let refused = api
        .post(
            "cancelPullRequest",
            Some(ACME),
            &pr_body(repo, 4, json!({})),
        )
        .await;
    assert_eq!(refused.status, 409);
    if restarted.status == 409 || cancelled.status == 409 {
        // Both 200s are needed for the document's coverage: a quiet second attempt.
        repo.add_pr(e2e::git_repo::PrSpec::new(5));
        api.ok("updateQueue", &body(repo, json!({"state": "paused"})))
            .await;
        api.ok("submitPullRequest", &pr_body(repo, 5, json!({})))
            .await;
        api.ok("cancelPullRequest", &pr_body(repo, 5, json!({})))
            .await;
        api.ok("updateQueue", &body(repo, json!({"state": "running"})))
            .await;
    }
    let gone = api
        .post(
            "restartTestsOnPullRequest",
            Some(ACME),
            &pr_body(repo, 4, json!({})),
        )
        .await;
    assert_eq!(gone.status, 409);
}

/// Impacted targets of a pull request in a parallel queue.
async fn parallel_targets(live: &LiveEnv, api: &Checked<'_>, repo: &GitRepo) {
    let _ = live;
    api.ok("updateQueue", &body(repo, json!({"mode": "parallel"})))
        .await;
    let head = repo.add_pr(e2e::git_repo::PrSpec::new(6));
    let mut targets = pr_body(repo, 6, json!({"impactedTargets": ["//app", "//lib"]}));
    targets["pr"]["sha"] = json!(head);
    api.ok("setImpactedTargets", &targets).await;
    targets["impactedTargets"] = json!("ALL");
    api.ok("setImpactedTargets", &targets).await;
}

/// Uploads, settings, lists and tickets; `upload-url` answers 200 with a bucket, 404 without.
async fn test_health_flow(api: &Checked<'_>, bucket: bool) {
    let commit = sha("c1");
    let fields = [
        ("repo", "github.com/acme/rocket"),
        ("org_url_slug", "acme"),
        ("commit_sha", commit.as_str()),
        ("branch", "main"),
        ("pr_number", "7"),
        ("upload_id", "contract-1"),
    ];
    let files = [("junit.xml", fixture("nextest-flakyfail-reportskipped.xml"))];
    let (content_type, bytes) = form(&fields, &files);
    let upload = api
        .send(
            "POST",
            "flaky-tests/upload",
            Some(ACME),
            &content_type,
            bytes,
            &[],
        )
        .await;
    assert_eq!(upload.status, 200, "{}", upload.body);
    let scope = json!({"repo": {"host": "github.com", "owner": "acme", "name": "rocket"},
                       "org_url_slug": "acme"});
    let with = |extra: Value| {
        let mut b = scope.clone();
        for (k, v) in extra.as_object().unwrap() {
            b[k] = v.clone();
        }
        b
    };
    let settings = api
        .ok(
            "flaky-tests/update-settings",
            &with(json!({"quarantining": true, "auto_quarantine": true,
                         "thresholds": {"stable_branches": ["main"]}})),
        )
        .await;
    assert_eq!(settings["quarantining"], true);
    let page = json!({"page_size": 10});
    let flaky = api
        .ok(
            "flaky-tests/list-unhealthy-tests",
            &with(json!({"status": "flaky", "page_query": page})),
        )
        .await;
    let id = flaky["tests"][0]["id"]
        .as_str()
        .expect("a flaky test")
        .to_owned();
    api.ok(
        "flaky-tests/link-ticket",
        &with(json!({"test_case_id": id, "ticket_url": "https://tracker.example/T-1"})),
    )
    .await;
    api.ok(
        "flaky-tests/list-quarantined-tests",
        &with(json!({"page_query": page})),
    )
    .await;
    api.ok(
        "flaky-tests/check-quarantined",
        &with(json!({"failed_tests": [{"test_case_id": id}, {"name": "unknown"}]})),
    )
    .await;
    api.ok(
        "flaky-tests/update-settings",
        &with(json!({"test_overrides": [{"test_case_id": id, "quarantine": "never_quarantine"}]})),
    )
    .await;
    let url_body = with(json!({"commit_sha": commit, "branch": "main", "upload_id": "big-1"}));
    let url = api
        .post("flaky-tests/upload-url", Some(ACME), &url_body)
        .await;
    assert_eq!(url.status, if bucket { 200 } else { 404 }, "{}", url.body);
}

/// Refusals every endpoint shares: no token, another organisation, bad fields, wrong media.
async fn refusals(api: &Checked<'_>) {
    let queue = json!({"repo": {"host": "github.com", "owner": "acme", "name": "contract"},
                       "targetBranch": "main"});
    assert_eq!(api.post("getQueue", None, &queue).await.status, 401);
    assert_eq!(
        api.post("getQueue", Some(UMBRELLA), &queue).await.status,
        404
    );
    let bad = api
        .post(
            "updateQueue",
            Some(ACME),
            &json!({"repo": queue["repo"], "targetBranch": "main",
                                                  "concurrency": 0}),
        )
        .await;
    assert_eq!(bad.status, 400);
    let text = api
        .send(
            "POST",
            "getQueue",
            Some(ACME),
            "text/plain",
            b"{}".to_vec(),
            &[],
        )
        .await;
    assert_eq!(text.status, 415);
    let big = vec![b' '; mq_http::body::MAX_BODY_BYTES + 1];
    let too_large = api
        .send(
            "POST",
            "submitPullRequest",
            Some(ACME),
            "application/json",
            big,
            &[],
        )
        .await;
    assert_eq!(too_large.status, 413);
    let metrics = api
        .send(
            "GET",
            "getMergeQueueMetrics?repo=acme/rocket",
            Some(ACME),
            "",
            vec![],
            &[],
        )
        .await;
    assert_eq!(metrics.status, 400);
}

async fn webhook_flow(api: &Checked<'_>) {
    let payload =
        serde_json::to_vec(&json!({"zen": "Keep it logically awesome.", "hook_id": 1})).unwrap();
    let signature = sign(WEBHOOK_SECRET.as_bytes(), &payload);
    let delivered = api
        .send(
            "POST",
            "webhooks/github",
            None,
            "application/json",
            payload.clone(),
            &[
                ("x-github-event", "ping"),
                ("x-hub-signature-256", &signature),
            ],
        )
        .await;
    assert_eq!(delivered.status, 200, "{}", delivered.body);
    let forged = api
        .send(
            "POST",
            "webhooks/github",
            None,
            "application/json",
            payload,
            &[
                ("x-github-event", "ping"),
                ("x-hub-signature-256", "sha256=00"),
            ],
        )
        .await;
    assert_eq!(forged.status, 401);
}
