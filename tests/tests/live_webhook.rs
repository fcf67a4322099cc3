//! GitHub deliveries to `POST /v1/webhooks/github`: signed `status` and `check_run` events,
//! shaped as GitHub sends them, complete the runs of a live queue; a delivery with a bad
//! signature gets 401 and changes nothing. The statuses exist only in the deliveries (the
//! Git host never records them), so nothing but the webhook can complete a run.

use e2e::git_repo::GitRepo;
use e2e::live::{LiveEnv, Run, wait_for};
use e2e::{Backend, Reply, live_on_both_stores};
use mq_api::{Clock, SystemClock};
use mq_githost::webhook::sign;
use serde_json::{Value, json};

live_on_both_stores!(
    signed_deliveries_complete_runs,
    a_bad_signature_is_refused_and_changes_nothing,
);

const SECRET: &str = "webhook-secret";

async fn signed_deliveries_complete_runs(backend: Backend) {
    let env = LiveEnv::options().webhook(SECRET).start(backend).await;
    let repo = queue_requiring_build_and_lint(&env).await;
    env.submit(&repo, 1).await;
    let run = env.wait_for_run(&repo, 1).await;

    let status = status_event(&repo, &run, "build", "success");
    assert_eq!(deliver(&env, "status", &status, SECRET).await.status, 200);
    let partial = wait_for_details(&env, &repo, &run, |d| d["statusChecks"] != json!([])).await;
    assert_eq!(
        partial["statusChecks"],
        json!([{"context": "build", "url": "https://ci.example.com/build/1"}])
    );
    assert_eq!(partial["status"], "in_progress", "lint has not reported");

    let check = check_run_event(&repo, &run, "lint", "success");
    assert_eq!(deliver(&env, "check_run", &check, SECRET).await.status, 200);
    env.wait_for_state(&repo, 1, "merged").await;
    let finished = env.details(&repo, &run.id).await;
    assert_eq!(finished["status"], "succeeded");
    assert_eq!(
        finished["checkSuites"],
        json!([{"checkRuns": [{"name": "lint",
                               "url": "https://github.com/acme/rocket/runs/4001"}]}])
    );
    assert_eq!(repo.history_subjects("main"), ["Change 1 (#1)"]);

    env.submit(&repo, 2).await;
    let second = env.wait_for_run(&repo, 2).await;
    let failing = check_run_event(&repo, &second, "lint", "failure");
    assert_eq!(
        deliver(&env, "check_run", &failing, SECRET).await.status,
        200
    );
    env.wait_for_state(&repo, 2, "failed").await;
    assert_eq!(env.details(&repo, &second.id).await["status"], "failed");
    assert_eq!(repo.history_subjects("main"), ["Change 1 (#1)"]);
}

async fn a_bad_signature_is_refused_and_changes_nothing(backend: Backend) {
    let env = LiveEnv::options().webhook(SECRET).start(backend).await;
    let repo = queue_requiring_build_and_lint(&env).await;
    env.submit(&repo, 1).await;
    let run = env.wait_for_run(&repo, 1).await;
    let before = env.details(&repo, &run.id).await;

    let failing = status_event(&repo, &run, "build", "failure");
    let forged = deliver(&env, "status", &failing, "not-the-secret").await;
    assert_eq!((forged.status, forged.code()), (401, "BAD_SIGNATURE"));
    let unsigned = env
        .http
        .post(env.url("webhooks/github"))
        .header("X-GitHub-Event", "status")
        .header("content-type", "application/json")
        .body(failing.to_string())
        .send()
        .await
        .expect("request sent");
    assert_eq!(unsigned.status().as_u16(), 401);
    let mut altered = failing.clone();
    let signature = sign(SECRET.as_bytes(), failing.to_string().as_bytes());
    altered["state"] = json!("success");
    let tampered = post_delivery(&env, "status", &altered, &signature).await;
    assert_eq!(tampered.status, 401, "a signature covers the exact body");

    env.tick().await;
    assert_eq!(env.details(&repo, &run.id).await, before);
    assert_eq!(env.pull_request(&repo, 1).await["state"], "testing");
}

async fn queue_requiring_build_and_lint(env: &LiveEnv) -> GitRepo {
    let repo = env.repo("rocket");
    repo.add_prs(2, &[]);
    env.create_queue(&repo, json!({"requiredStatuses": ["build", "lint"]}))
        .await;
    repo
}

async fn wait_for_details(
    env: &LiveEnv,
    repo: &GitRepo,
    run: &Run,
    done: impl Fn(&Value) -> bool,
) -> Value {
    wait_for("the delivery in the run's details", || async {
        let details = env.details(repo, &run.id).await;
        if done(&details) {
            Ok(details)
        } else {
            Err(details.to_string())
        }
    })
    .await
}

/// Signs `payload` with `secret` and delivers it as GitHub does.
async fn deliver(env: &LiveEnv, event: &str, payload: &Value, secret: &str) -> Reply {
    let signature = sign(secret.as_bytes(), payload.to_string().as_bytes());
    post_delivery(env, event, payload, &signature).await
}

async fn post_delivery(env: &LiveEnv, event: &str, payload: &Value, signature: &str) -> Reply {
    let response = env
        .http
        .post(env.url("webhooks/github"))
        .header("X-GitHub-Event", event)
        .header("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
        .header("X-Hub-Signature-256", signature)
        .header("content-type", "application/json")
        .body(payload.to_string())
        .send()
        .await
        .expect("delivery sent");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.json().await.unwrap_or(Value::Null);
    Reply {
        status,
        body,
        headers,
    }
}

fn now() -> String {
    SystemClock.now().to_rfc3339()
}

fn repository(repo: &GitRepo) -> Value {
    json!({
        "id": 1296269,
        "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5",
        "name": repo.name,
        "full_name": format!("acme/{}", repo.name),
        "private": false,
        "owner": {"login": "acme", "id": 1, "type": "Organization"},
        "html_url": format!("https://github.com/acme/{}", repo.name),
        "default_branch": "main",
    })
}

fn sender() -> Value {
    json!({"login": "ci-bot[bot]", "id": 41898282, "type": "Bot"})
}

/// A `status` delivery for the tip of a run's test branch.
fn status_event(repo: &GitRepo, run: &Run, context: &str, state: &str) -> Value {
    let branch = run.details["testBranch"].clone();
    json!({
        "id": 6805126730u64,
        "sha": run.sha,
        "name": format!("acme/{}", repo.name),
        "target_url": format!("https://ci.example.com/{context}/1"),
        "context": context,
        "description": format!("{context}: {state}"),
        "state": state,
        "commit": {"sha": run.sha, "commit": {"message": "Merge pull request"}},
        "branches": [{"name": branch, "commit": {"sha": run.sha}, "protected": false}],
        "created_at": now(),
        "updated_at": now(),
        "repository": repository(repo),
        "sender": sender(),
    })
}

/// A completed `check_run` delivery for the tip of a run's test branch.
fn check_run_event(repo: &GitRepo, run: &Run, name: &str, conclusion: &str) -> Value {
    json!({
        "action": "completed",
        "check_run": {
            "id": 4001,
            "node_id": "MDg6Q2hlY2tSdW40MDAx",
            "name": name,
            "head_sha": run.sha,
            "external_id": "",
            "url": format!("https://api.github.com/repos/acme/{}/check-runs/4001", repo.name),
            "html_url": format!("https://github.com/acme/{}/runs/4001", repo.name),
            "details_url": format!("https://ci.example.com/{name}/4001"),
            "status": "completed",
            "conclusion": conclusion,
            "started_at": now(),
            "completed_at": now(),
            "output": {"title": name, "summary": conclusion, "annotations_count": 0},
            "check_suite": {
                "id": 5001,
                "head_branch": run.details["testBranch"],
                "head_sha": run.sha,
                "status": "completed",
                "conclusion": conclusion,
            },
            "app": {"id": 15368, "slug": "ci", "name": "CI"},
            "pull_requests": [],
        },
        "repository": repository(repo),
        "sender": sender(),
    })
}
