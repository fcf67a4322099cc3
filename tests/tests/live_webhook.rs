//! GitHub deliveries to `POST /v1/webhooks/github`: signed `status` and `check_run` events,
//! shaped as GitHub sends them, complete the runs of a live queue; a delivery with a bad
//! signature gets 401 and changes nothing. The statuses exist only in the deliveries (the
//! Git host never records them), so nothing but the webhook can complete a run.

use e2e::git_repo::GitRepo;
use e2e::live::{LiveEnv, Run, wait_for, wait_until};
use e2e::{Backend, Reply, live_on_both_stores};
use mq_api::{Clock, SystemClock};
use mq_githost::webhook::sign;
use serde_json::{Value, json};

live_on_both_stores!(
    signed_deliveries_complete_runs,
    a_bad_signature_is_refused_and_changes_nothing,
    a_closed_pull_request_leaves_the_queue,
    comment_commands_submit_and_cancel_for_writers_only,
    a_push_to_main_restarts_testing_on_the_new_head,
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

async fn a_closed_pull_request_leaves_the_queue(backend: Backend) {
    let env = LiveEnv::options().webhook(SECRET).start(backend).await;
    let repo = queue_requiring_build_and_lint(&env).await;
    env.submit(&repo, 1).await;
    env.wait_for_run(&repo, 1).await;
    let closed = pull_request_event(&repo, 1, "closed");
    assert_eq!(
        deliver(&env, "pull_request", &closed, SECRET).await.status,
        200
    );
    env.wait_for_state(&repo, 1, "cancelled").await;
    assert!(env.current_run(&repo, 1).await.is_none(), "its run stopped");
}

async fn comment_commands_submit_and_cancel_for_writers_only(backend: Backend) {
    let env = LiveEnv::options().webhook(SECRET).start(backend).await;
    let repo = queue_requiring_build_and_lint(&env).await;

    let stranger = comment_event(&repo, 1, "/service merge", "NONE");
    assert_eq!(
        deliver(&env, "issue_comment", &stranger, SECRET)
            .await
            .status,
        200
    );
    env.wait_for_comment(&repo, 1, "Only people who can write")
        .await;
    let never = env.pr_call("getSubmittedPullRequest", &repo, 1).await;
    assert_eq!(never.status, 404, "a stranger's command submits nothing");

    let merge = comment_event(
        &repo,
        1,
        "Looks good.\n/service merge --priority high",
        "MEMBER",
    );
    assert_eq!(
        deliver(&env, "issue_comment", &merge, SECRET).await.status,
        200
    );
    let submitted = env.pull_request(&repo, 1).await;
    assert_eq!(submitted["priorityName"], "high");
    assert_eq!(submitted["isCurrentlySubmittedToQueue"], true);

    let cancel = comment_event(&repo, 1, "/service cancel", "OWNER");
    assert_eq!(
        deliver(&env, "issue_comment", &cancel, SECRET).await.status,
        200
    );
    env.wait_for_state(&repo, 1, "cancelled").await;
}

async fn a_push_to_main_restarts_testing_on_the_new_head(backend: Backend) {
    let env = LiveEnv::options().webhook(SECRET).start(backend).await;
    let repo = queue_requiring_build_and_lint(&env).await;
    env.submit(&repo, 1).await;
    let first = env.wait_for_run(&repo, 1).await;
    let before = repo.head("main").expect("main exists");
    let after = repo.push_commit("main", "hotfix.txt");
    let push = push_event(&repo, &before, &after);
    assert_eq!(deliver(&env, "push", &push, SECRET).await.status, 200);
    let second = wait_until("a new run on the pushed head", || async {
        env.current_run(&repo, 1)
            .await
            .filter(|run| run.id != first.id)
    })
    .await;
    let tested = repo.git(&["rev-list", &second.sha]);
    assert!(
        tested.contains(&after),
        "the new run contains the pushed commit"
    );
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

/// A `pull_request` delivery for pull request `pr` of `repo`.
fn pull_request_event(repo: &GitRepo, pr: u32, action: &str) -> Value {
    let head = repo.pr_head(pr);
    let closed = action == "closed";
    json!({
        "action": action,
        "number": pr,
        "pull_request": {
            "url": format!("https://api.github.com/repos/acme/{}/pulls/{pr}", repo.name),
            "id": 1000 + pr,
            "number": pr,
            "state": if closed { "closed" } else { "open" },
            "locked": false,
            "title": format!("Change {pr}"),
            "user": {"login": "octocat", "id": 583231, "type": "User"},
            "body": null,
            "created_at": now(),
            "updated_at": now(),
            "closed_at": if closed { json!(now()) } else { Value::Null },
            "merged_at": null,
            "draft": false,
            "head": {"label": format!("acme:change-{pr}"), "ref": format!("change-{pr}"), "sha": head},
            "base": {"label": "acme:main", "ref": "main", "sha": repo.head("main")},
            "merged": false,
            "mergeable": null,
        },
        "repository": repository(repo),
        "sender": sender(),
    })
}

/// An `issue_comment` delivery: `body` commented on pull request `pr` by someone with
/// `association` to the repository.
fn comment_event(repo: &GitRepo, pr: u32, body: &str, association: &str) -> Value {
    json!({
        "action": "created",
        "issue": {
            "number": pr,
            "title": format!("Change {pr}"),
            "state": "open",
            "pull_request": {"url": format!("https://api.github.com/repos/acme/{}/pulls/{pr}", repo.name)},
        },
        "comment": {
            "id": 90000 + pr,
            "body": body,
            "user": {"login": "hubot", "id": 2, "type": "User"},
            "author_association": association,
            "created_at": now(),
        },
        "repository": repository(repo),
        "sender": {"login": "hubot", "id": 2, "type": "User"},
    })
}

/// A `push` delivery moving `main` from `before` to `after`.
fn push_event(repo: &GitRepo, before: &str, after: &str) -> Value {
    json!({
        "ref": "refs/heads/main",
        "before": before,
        "after": after,
        "created": false,
        "deleted": false,
        "forced": false,
        "commits": [],
        "head_commit": {"id": after, "message": "Hotfix"},
        "repository": repository(repo),
        "pusher": {"name": "octocat"},
        "sender": sender(),
    })
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
