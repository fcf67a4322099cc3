//! Organisation isolation: every endpoint, called with the owner's token, another
//! organisation's token, no token and a revoked token, answers with the exact status and
//! error code, and the calls of the others change nothing the owner sees.

use e2e::git_repo::GitRepo;
use e2e::health::{Run, fixture, form, health_body, sha, upload};
use e2e::live::LiveEnv;
use e2e::{ACME, Auth, Backend, REVOKED, UMBRELLA, live_on_both_stores};
use serde_json::{Value, json};

live_on_both_stores!(every_endpoint_keeps_organisations_apart);

/// How a request is made.
#[derive(Clone)]
enum Call {
    Json(&'static str, Value),
    /// `flaky-tests/upload` of a real JUnit file for acme's repository.
    Upload,
    /// `GET getMergeQueueMetrics` for acme's repository.
    Metrics,
    /// An unsigned webhook delivery: tokens do not authenticate webhooks.
    Webhook,
}

/// One endpoint: the call, and the answers (status, error code; "" for none) to the owner,
/// to another organisation, to no token and to a revoked token.
struct Case {
    call: Call,
    own: (u16, &'static str),
    other: (u16, &'static str),
    anonymous: (u16, &'static str),
    revoked: (u16, &'static str),
}

const OK: (u16, &str) = (200, "");
const UNAUTHORIZED: (u16, &str) = (401, "UNAUTHORIZED");
const NO_QUEUE: (u16, &str) = (404, "QUEUE_NOT_FOUND");
const NO_ORG: (u16, &str) = (404, "ORGANIZATION_NOT_FOUND");

fn case(call: Call, own: (u16, &'static str), other: (u16, &'static str)) -> Case {
    Case {
        call,
        own,
        other,
        anonymous: UNAUTHORIZED,
        revoked: UNAUTHORIZED,
    }
}

async fn send(env: &LiveEnv, call: &Call, token: Option<&str>) -> (u16, String) {
    let (status, body) = match call {
        Call::Json(path, body) => {
            let r = env.post(path, token, body).await;
            (r.status, r.body)
        }
        Call::Upload => {
            let commit = sha("other");
            let fields = [
                ("repo", "github.com/acme/rocket"),
                ("commit_sha", commit.as_str()),
                ("branch", "main"),
                ("upload_id", "isolation-upload"),
                ("org_url_slug", "acme"),
            ];
            let files = [("r.xml", fixture("surefire-2.22-rerun-flaky.xml"))];
            let (content_type, bytes) = form(&fields, &files);
            let mut req = env
                .http
                .post(env.url("flaky-tests/upload"))
                .header("content-type", content_type)
                .body(bytes);
            if let Some(t) = token {
                req = req.header("x-api-token", t);
            }
            let r = req.send().await.unwrap();
            (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
        }
        Call::Metrics => {
            let auth = token.map_or(Auth::None, Auth::Bearer);
            let r = env
                .get(
                    "getMergeQueueMetrics?repo=acme/rocket&repoHost=github.com",
                    auth,
                )
                .await;
            (r.status, r.json())
        }
        Call::Webhook => {
            let r = env
                .post("webhooks/github", token, &json!({"action": "closed"}))
                .await;
            (r.status, r.body)
        }
    };
    let code = body["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (status, code)
}

/// What acme sees of its queue, pull request and test health.
async fn acme_view(env: &LiveEnv, repo: &GitRepo) -> Vec<Value> {
    let mut queue = env.queue(repo).await;
    queue
        .as_object_mut()
        .unwrap()
        .remove("enqueuedPullRequests");
    vec![
        queue,
        env.pull_request(repo, 1).await["state"].clone(),
        env.ok(
            "flaky-tests/list-unhealthy-tests",
            &health_body(json!({"status": "FLAKY", "page_query": {"page_size": 50}})),
        )
        .await,
        env.ok(
            "flaky-tests/list-quarantined-tests",
            &health_body(json!({"page_query": {"page_size": 50}})),
        )
        .await,
    ]
}

fn cases(head: &str, test_case: &str) -> Vec<Case> {
    let repo_body = || queue_body_of("rocket", json!({}));
    let pr = |extra: Value| pr_body_of(1, extra);
    vec![
        case(Call::Json("getQueue", repo_body()), OK, NO_QUEUE),
        case(
            Call::Json("getSubmittedPullRequest", pr(json!({}))),
            OK,
            NO_QUEUE,
        ),
        case(
            Call::Json(
                "getMergeQueueTestingDetails",
                queue_body_of("rocket", json!({"testRunId": "no-such-run"})),
            ),
            (404, "TEST_RUN_NOT_FOUND"),
            NO_QUEUE,
        ),
        case(Call::Metrics, OK, NO_QUEUE),
        case(
            Call::Json(
                "flaky-tests/list-unhealthy-tests",
                health_body(json!({"status": "FLAKY", "page_query": {"page_size": 5}})),
            ),
            OK,
            NO_ORG,
        ),
        case(
            Call::Json(
                "flaky-tests/list-quarantined-tests",
                health_body(json!({"page_query": {"page_size": 5}})),
            ),
            OK,
            NO_ORG,
        ),
        case(
            Call::Json(
                "flaky-tests/check-quarantined",
                health_body(json!({"failed_tests": []})),
            ),
            OK,
            NO_ORG,
        ),
        case(
            Call::Json(
                "setImpactedTargets",
                with_sha(pr_body_of(1, json!({"impactedTargets": ["//app"]})), head),
            ),
            OK,
            NO_QUEUE,
        ),
        case(
            Call::Json(
                "updateQueue",
                queue_body_of("rocket", json!({"concurrency": 2})),
            ),
            OK,
            NO_QUEUE,
        ),
        case(
            Call::Json("submitPullRequest", pr(json!({"priority": "high"}))),
            OK,
            NO_QUEUE,
        ),
        case(
            Call::Json("restartTestsOnPullRequest", pr(json!({}))),
            (409, "PULL_REQUEST_NOT_TESTING"),
            NO_QUEUE,
        ),
        case(Call::Json("cancelPullRequest", pr(json!({}))), OK, NO_QUEUE),
        case(
            Call::Json(
                "flaky-tests/update-settings",
                health_body(json!({"quarantining": true})),
            ),
            OK,
            NO_ORG,
        ),
        case(
            Call::Json(
                "flaky-tests/link-ticket",
                health_body(
                    json!({"test_case_id": test_case, "ticket_url": "https://t.example/1"}),
                ),
            ),
            OK,
            NO_ORG,
        ),
        case(Call::Upload, OK, NO_ORG),
        case(
            Call::Json(
                "flaky-tests/upload-url",
                health_body(json!({"commit_sha": sha("u"), "branch": "main", "upload_id": "u1"})),
            ),
            (404, "UPLOADS_NOT_CONFIGURED"),
            NO_ORG,
        ),
        case(
            Call::Json("createQueue", queue_body_of("rocket", json!({}))),
            (409, "QUEUE_ALREADY_EXISTS"),
            (409, "QUEUE_ALREADY_EXISTS"),
        ),
        case(
            // Last: cancelPullRequest emptied the queue.
            Call::Json("deleteQueue", queue_body_of("rocket", json!({}))),
            OK,
            NO_QUEUE,
        ),
        Case {
            call: Call::Webhook,
            own: (401, "BAD_SIGNATURE"),
            other: (401, "BAD_SIGNATURE"),
            anonymous: (401, "BAD_SIGNATURE"),
            revoked: (401, "BAD_SIGNATURE"),
        },
    ]
}

fn queue_body_of(repo: &str, extra: Value) -> Value {
    e2e::queue_body(repo, extra)
}

fn pr_body_of(pr: u32, extra: Value) -> Value {
    let mut b = queue_body_of("rocket", extra);
    b["pr"] = json!({ "number": pr });
    b
}

/// A pull request body with its head sha.
fn with_sha(mut body: Value, sha: &str) -> Value {
    body["pr"]["sha"] = json!(sha);
    body
}

async fn every_endpoint_keeps_organisations_apart(backend: Backend) {
    let env = LiveEnv::options()
        .webhook("isolation-secret")
        .start(backend)
        .await;
    let repo = env.repo("rocket");
    repo.add_prs(1, &[]);
    env.create_queue(&repo, json!({"state": "paused"})).await;
    env.submit(&repo, 1).await;
    let uploaded = upload(
        &env,
        &Run::main("c1", "first-upload"),
        &[],
        &[("r.xml", fixture("surefire-2.22-rerun-flaky.xml"))],
    )
    .await;
    assert_eq!(uploaded.status, 200, "{:?}", uploaded.body);
    let before = acme_view(&env, &repo).await;
    let test_case = before[2]["tests"][0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no flaky test in {}", before[2]))
        .to_owned();
    let head = repo.pr_head(1);
    let cases = cases(&head, &test_case);

    let mut wrong = Vec::new();
    for c in &cases {
        for (who, token, expected) in [
            ("umbrella", Some(UMBRELLA), c.other),
            ("no token", None, c.anonymous),
            ("revoked", Some(REVOKED), c.revoked),
        ] {
            let (status, code) = send(&env, &c.call, token).await;
            if (status, code.as_str()) != expected {
                wrong.push(format!(
                    "{} as {who}: {status} {code}, expected {expected:?}",
                    name(&c.call)
                ));
            }
        }
    }
    assert_eq!(
        acme_view(&env, &repo).await,
        before,
        "others changed nothing"
    );
    for c in &cases {
        let (status, code) = send(&env, &c.call, Some(ACME)).await;
        if (status, code.as_str()) != c.own {
            wrong.push(format!(
                "{} as acme: {status} {code}, expected {:?}",
                name(&c.call),
                c.own
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let gone = env
        .post("getQueue", Some(ACME), &queue_body_of("rocket", json!({})))
        .await;
    assert_eq!(
        (gone.status, gone.code()),
        NO_QUEUE,
        "acme's own calls did act"
    );
}

fn name(call: &Call) -> &'static str {
    match call {
        Call::Json(path, _) => path,
        Call::Upload => "flaky-tests/upload",
        Call::Metrics => "getMergeQueueMetrics",
        Call::Webhook => "webhooks/github",
    }
}
