//! Organisation isolation and repository ownership.
//!
//! acme owns `github.com/acme`, umbrella owns `github.com/umbrella`, and `github.com/nobody` is
//! linked to no one. Every endpoint is called on acme's repository with acme's token, with
//! umbrella's, with none and with a revoked one; and, with acme's token, on umbrella's
//! repository (where umbrella has a queue, a pull request and test results) and on the unlinked
//! owner's (where acme has a queue made before owners were linked). Each answers with the exact
//! status and error code, and the calls that are refused change nothing either organisation
//! sees.

use e2e::git_repo::GitRepo;
use e2e::health::{Run, fixture, form, health_body, sha, upload};
use e2e::live::{LiveEnv, body, repo_ref};
use e2e::{ACME, Auth, Backend, REVOKED, UMBRELLA, live_on_both_stores};
use mq_core::git::StatusState;
use mq_core::ids::{OrgId, OwnerRef};
use mq_core::settings::{QueueConfig, QueueState};
use mq_core::snapshot::Queue;
use mq_service::Clock;
use mq_service::tick;
use mq_store::OwnerLink;
use serde_json::{Value, json};

live_on_both_stores!(
    every_endpoint_answers_only_for_the_owners_repositories,
    a_queue_whose_owner_moved_to_another_organisation_is_left_alone,
);

/// How a request is made, on the repository `rocket` of an owner.
#[derive(Clone)]
enum Call {
    Json(&'static str, Value),
    /// `flaky-tests/upload` of a real JUnit file.
    Upload,
    /// `GET getMergeQueueMetrics` for the repository.
    Metrics,
    /// An unsigned webhook delivery: tokens do not authenticate webhooks.
    Webhook,
}

/// One endpoint: the call, and the answers (status, error code; "" for none) to the owner,
/// to another organisation on the owner's repository, to no token and to a revoked token.
/// With the owner's token on another organisation's repository or an unlinked owner's, every
/// endpoint answers [`NO_REPO`] (the webhook excepted: it takes no token).
struct Case {
    call: Call,
    own: (u16, &'static str),
    other: (u16, &'static str),
    anonymous: (u16, &'static str),
    revoked: (u16, &'static str),
}

const OK: (u16, &str) = (200, "");
const UNAUTHORIZED: (u16, &str) = (401, "UNAUTHORIZED");
const NO_REPO: (u16, &str) = (404, "REPOSITORY_NOT_FOUND");
const NO_ORG: (u16, &str) = (404, "ORGANIZATION_NOT_FOUND");
const BAD_SIGNATURE: (u16, &str) = (401, "BAD_SIGNATURE");

fn case(call: Call, own: (u16, &'static str), other: (u16, &'static str)) -> Case {
    Case {
        call,
        own,
        other,
        anonymous: UNAUTHORIZED,
        revoked: UNAUTHORIZED,
    }
}

/// Sends `call` for the repository `<owner>/rocket`, as `token`.
async fn send(env: &LiveEnv, call: &Call, owner: &str, token: Option<&str>) -> (u16, String) {
    let (status, body) = match call {
        Call::Json(path, body) => {
            let mut body = body.clone();
            body["repo"]["owner"] = json!(owner);
            let r = env.post(path, token, &body).await;
            (r.status, r.body)
        }
        Call::Upload => {
            let commit = sha("other");
            let repo = format!("github.com/{owner}/rocket");
            let fields = [
                ("repo", repo.as_str()),
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
            let path = format!("getMergeQueueMetrics?repo={owner}/rocket&repoHost=github.com");
            let r = env.get(&path, auth).await;
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

/// What an organisation sees of its queue on `repo`, its pull request #1 and its test health.
async fn view(env: &LiveEnv, repo: &GitRepo, token: &str) -> Vec<Value> {
    let mut queue = env
        .post("getQueue", Some(token), &body(repo, json!({})))
        .await
        .body;
    queue
        .as_object_mut()
        .unwrap()
        .remove("enqueuedPullRequests");
    let mut pr = body(repo, json!({}));
    pr["pr"] = json!({"number": 1});
    let health = |extra: Value| {
        let mut b = health_body(extra);
        b["repo"]["owner"] = json!(repo.owner);
        b["org_url_slug"] = json!(repo.owner);
        b
    };
    let post =
        |path: &'static str, b: Value| async move { env.post(path, Some(token), &b).await.body };
    vec![
        queue,
        post("getSubmittedPullRequest", pr).await["state"].clone(),
        post(
            "flaky-tests/list-unhealthy-tests",
            health(json!({"status": "FLAKY", "page_query": {"page_size": 50}})),
        )
        .await,
        post(
            "flaky-tests/list-quarantined-tests",
            health(json!({"page_query": {"page_size": 50}})),
        )
        .await,
    ]
}

fn cases(head: &str, test_case: &str) -> Vec<Case> {
    let queue = |extra: Value| e2e::queue_body("rocket", extra);
    let pr = |extra: Value| {
        let mut b = queue(extra);
        b["pr"] = json!({ "number": 1 });
        b
    };
    let mut targets = pr(json!({"impactedTargets": ["//app"]}));
    targets["pr"]["sha"] = json!(head);
    vec![
        case(Call::Json("getQueue", queue(json!({}))), OK, NO_REPO),
        case(
            Call::Json("getSubmittedPullRequest", pr(json!({}))),
            OK,
            NO_REPO,
        ),
        case(
            Call::Json(
                "getMergeQueueTestingDetails",
                queue(json!({"testRunId": "no-such-run"})),
            ),
            (404, "TEST_RUN_NOT_FOUND"),
            NO_REPO,
        ),
        case(Call::Metrics, OK, NO_REPO),
        case(
            Call::Json("listQueues", json!({"repo": queue(json!({}))["repo"]})),
            OK,
            NO_REPO,
        ),
        case(
            Call::Json("getQueueActivity", queue(json!({}))),
            OK,
            NO_REPO,
        ),
        case(
            Call::Json("getPullRequestHistory", pr(json!({}))),
            OK,
            NO_REPO,
        ),
        case(Call::Json("getQueueAdvice", queue(json!({}))), OK, NO_REPO),
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
        case(Call::Json("setImpactedTargets", targets), OK, NO_REPO),
        case(
            Call::Json("updateQueue", queue(json!({"concurrency": 2}))),
            OK,
            NO_REPO,
        ),
        case(
            Call::Json("submitPullRequest", pr(json!({"priority": "high"}))),
            OK,
            NO_REPO,
        ),
        case(
            Call::Json("restartTestsOnPullRequest", pr(json!({}))),
            (409, "PULL_REQUEST_NOT_TESTING"),
            NO_REPO,
        ),
        case(Call::Json("cancelPullRequest", pr(json!({}))), OK, NO_REPO),
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
            Call::Json("createQueue", queue(json!({}))),
            (409, "QUEUE_ALREADY_EXISTS"),
            NO_REPO,
        ),
        case(
            // Last: cancelPullRequest emptied the queue.
            Call::Json("deleteQueue", queue(json!({}))),
            OK,
            NO_REPO,
        ),
        Case {
            call: Call::Webhook,
            own: BAD_SIGNATURE,
            other: BAD_SIGNATURE,
            anonymous: BAD_SIGNATURE,
            revoked: BAD_SIGNATURE,
        },
    ]
}

/// A queue with pull request #1 and test results, on `repo`, of the organisation of `token`.
async fn queue_with_a_pull_request(env: &LiveEnv, repo: &GitRepo, token: &str) {
    repo.add_prs(1, &[]);
    let created = env
        .post(
            "createQueue",
            Some(token),
            &body(repo, json!({"state": "paused"})),
        )
        .await;
    assert_eq!(created.status, 200, "{:?}", created.body);
    let mut pr = body(repo, json!({}));
    pr["pr"] = json!({"number": 1});
    let submitted = env.post("submitPullRequest", Some(token), &pr).await;
    assert_eq!(submitted.status, 200, "{:?}", submitted.body);
}

/// A queue of acme on a repository of the unlinked owner, as it would be had acme created it
/// before owners were linked.
async fn queue_made_before_links(env: &LiveEnv, repo: &GitRepo) {
    let queue = Queue::new(
        OrgId::parse("acme").unwrap(),
        repo_ref(repo),
        "main".to_owned(),
        QueueConfig::default(),
        QueueState::Paused,
        env.clock.now(),
    );
    env.store.create_queue(&queue).await.unwrap();
}

async fn every_endpoint_answers_only_for_the_owners_repositories(backend: Backend) {
    let env = LiveEnv::options()
        .webhook("isolation-secret")
        .start(backend)
        .await;
    let acme = env.repo("rocket");
    queue_with_a_pull_request(&env, &acme, ACME).await;
    let theirs = env.repo_of("umbrella", "rocket");
    queue_with_a_pull_request(&env, &theirs, UMBRELLA).await;
    queue_made_before_links(&env, &env.repo_of("nobody", "rocket")).await;
    let uploaded = upload(
        &env,
        &Run::main("c1", "first-upload"),
        &[],
        &[("r.xml", fixture("surefire-2.22-rerun-flaky.xml"))],
    )
    .await;
    assert_eq!(uploaded.status, 200, "{:?}", uploaded.body);
    let before = (
        view(&env, &acme, ACME).await,
        view(&env, &theirs, UMBRELLA).await,
    );
    for (token, expected) in [(ACME, "acme/rocket"), (UMBRELLA, "umbrella/rocket")] {
        let listed = env.post("listQueues", Some(token), &json!({})).await;
        assert_eq!(listed.status, 200, "{:?}", listed.body);
        let names: Vec<String> = listed.body["queues"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| {
                format!(
                    "{}/{}",
                    q["repo"]["owner"].as_str().unwrap(),
                    q["repo"]["name"].as_str().unwrap()
                )
            })
            .collect();
        assert_eq!(
            names,
            [expected],
            "listQueues as {token}: only its own repositories' queues"
        );
    }
    let test_case = before.0[2]["tests"][0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no flaky test in {}", before.0[2]))
        .to_owned();
    let cases = cases(&acme.pr_head(1), &test_case);

    let mut wrong = Vec::new();
    for c in &cases {
        let not_owned = match c.call {
            Call::Webhook => c.own,
            _ => NO_REPO,
        };
        for (who, owner, token, expected) in [
            ("umbrella", "acme", Some(UMBRELLA), c.other),
            ("no token", "acme", None, c.anonymous),
            ("revoked", "acme", Some(REVOKED), c.revoked),
            (
                "acme on umbrella's repository",
                "umbrella",
                Some(ACME),
                not_owned,
            ),
            (
                "acme on an unlinked owner's",
                "nobody",
                Some(ACME),
                not_owned,
            ),
        ] {
            let (status, code) = send(&env, &c.call, owner, token).await;
            if (status, code.as_str()) != expected {
                wrong.push(format!(
                    "{} as {who}: {status} {code}, expected {expected:?}",
                    name(&c.call)
                ));
            }
        }
    }
    let after = (
        view(&env, &acme, ACME).await,
        view(&env, &theirs, UMBRELLA).await,
    );
    assert_eq!(after, before, "the refused calls changed nothing");
    for c in &cases {
        let (status, code) = send(&env, &c.call, "acme", Some(ACME)).await;
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
        .post("getQueue", Some(ACME), &body(&acme, json!({})))
        .await;
    assert_eq!(
        (gone.status, gone.code()),
        (404, "QUEUE_NOT_FOUND"),
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

/// acme tests a pull request on its repository; then the operator moves the owner
/// `github.com/acme` to umbrella. CI passes, and the tick does not merge into what is now
/// umbrella's repository for acme's queue, nor touch it otherwise; linked back to acme, the
/// queue goes on and merges.
async fn a_queue_whose_owner_moved_to_another_organisation_is_left_alone(backend: Backend) {
    let env = LiveEnv::options()
        .webhook("isolation-secret")
        .without_tick()
        .start(backend)
        .await;
    let repo = env.repo("rocket");
    repo.add_prs(1, &[]);
    env.create_queue(&repo, json!({"requiredStatuses": [e2e::live::CI]}))
        .await;
    env.submit(&repo, 1).await;
    let run = env.wait_for_run(&repo, 1).await;
    let (main, branches) = (repo.head("main"), repo.test_branches());
    let owner = OwnerRef::parse("owner", "github.com/acme").unwrap();
    let (acme, umbrella) = (
        OrgId::parse("acme").unwrap(),
        OrgId::parse("umbrella").unwrap(),
    );
    let link = |org: &OrgId| OwnerLink {
        owner: owner.clone(),
        org: org.clone(),
        linked_at: env.clock.now(),
        account_id: None,
    };
    env.store.unlink_owner(&owner, &acme).await.unwrap();
    env.store.link_owner(&link(&umbrella)).await.unwrap();

    env.set_status(&repo, &run.sha, e2e::live::CI, StatusState::Success)
        .await;
    let report = tick::run(&env.app, "e2e").await.unwrap();
    assert_eq!(report.failed, 0);
    assert_eq!(repo.head("main"), main, "nothing merged for acme's queue");
    assert_eq!(repo.test_branches(), branches, "no test branch pushed");

    env.store.unlink_owner(&owner, &umbrella).await.unwrap();
    env.store.link_owner(&link(&acme)).await.unwrap();
    env.tick().await;
    env.wait_for_state(&repo, 1, "merged").await;
    assert_ne!(repo.head("main"), main, "linked back, the queue merges");
}
