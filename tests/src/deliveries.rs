//! GitHub webhook deliveries as GitHub shapes and signs them: pull request, comment, push,
//! status and check run events for the test repositories, and posting them to the gateway.

use crate::git_repo::GitRepo;
use crate::live::Run;
use crate::{Reply, TestEnv};
use mq_githost::webhook::sign;
use mq_service::{Clock, SystemClock};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};

/// The id of the next comment a test delivers: each comment its own, as on GitHub.
static NEXT_COMMENT_ID: AtomicU64 = AtomicU64::new(90_000);

/// Signs `payload` with `secret` and delivers it as GitHub does.
pub async fn deliver(env: &TestEnv, event: &str, payload: &Value, secret: &str) -> Reply {
    let signature = sign(secret.as_bytes(), payload.to_string().as_bytes());
    post_delivery(env, event, payload, &signature).await
}

pub async fn post_delivery(env: &TestEnv, event: &str, payload: &Value, signature: &str) -> Reply {
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
        "full_name": format!("{}/{}", repo.owner, repo.name),
        "private": false,
        "owner": {"login": repo.owner, "id": 1, "type": "Organization"},
        "html_url": format!("https://github.com/{}/{}", repo.owner, repo.name),
        "default_branch": "main",
    })
}

fn sender() -> Value {
    json!({"login": "ci-bot[bot]", "id": 41898282, "type": "Bot"})
}

/// A `pull_request` delivery for pull request `pr` of `repo`.
pub fn pull_request_event(repo: &GitRepo, pr: u32, action: &str) -> Value {
    let head = repo.pr_head(pr);
    let closed = action == "closed";
    json!({
        "action": action,
        "number": pr,
        "pull_request": {
            "url": format!("https://api.github.com/repos/{}/{}/pulls/{pr}", repo.owner, repo.name),
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
            "head": {"label": format!("{}:change-{pr}", repo.owner), "ref": format!("change-{pr}"), "sha": head},
            "base": {"label": format!("{}:main", repo.owner), "ref": "main", "sha": repo.head("main")},
            "merged": false,
            "mergeable": null,
        },
        "repository": repository(repo),
        "sender": sender(),
    })
}

/// An `issue_comment` delivery: `body` commented on pull request `pr` by `hubot`, with
/// `association` to the repository.
pub fn comment_event(repo: &GitRepo, pr: u32, body: &str, association: &str) -> Value {
    comment_event_by(repo, pr, body, association, "hubot")
}

/// [`comment_event`] by the account `login`.
pub fn comment_event_by(
    repo: &GitRepo,
    pr: u32,
    body: &str,
    association: &str,
    login: &str,
) -> Value {
    json!({
        "action": "created",
        "issue": {
            "number": pr,
            "title": format!("Change {pr}"),
            "state": "open",
            "pull_request": {"url": format!("https://api.github.com/repos/{}/{}/pulls/{pr}", repo.owner, repo.name)},
        },
        "comment": {
            "id": NEXT_COMMENT_ID.fetch_add(1, Ordering::Relaxed),
            "body": body,
            "user": {"login": login, "id": 2, "type": "User"},
            "author_association": association,
            "created_at": now(),
        },
        "repository": repository(repo),
        "sender": {"login": "hubot", "id": 2, "type": "User"},
    })
}

/// A `push` delivery moving `main` from `before` to `after`.
pub fn push_event(repo: &GitRepo, before: &str, after: &str) -> Value {
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
pub fn status_event(repo: &GitRepo, run: &Run, context: &str, state: &str) -> Value {
    let branch = run.details["testBranch"].as_str().unwrap_or_default();
    status_on(repo, &run.sha, branch, context, state)
}

/// A `status` delivery for commit `sha`, the tip of `branch`.
pub fn status_on(repo: &GitRepo, sha: &str, branch: &str, context: &str, state: &str) -> Value {
    json!({
        "id": 6805126730u64,
        "sha": sha,
        "name": format!("{}/{}", repo.owner, repo.name),
        "target_url": format!("https://ci.example.com/{context}/1"),
        "context": context,
        "description": format!("{context}: {state}"),
        "state": state,
        "commit": {"sha": sha, "commit": {"message": "Merge pull request"}},
        "branches": [{"name": branch, "commit": {"sha": sha}, "protected": false}],
        "created_at": now(),
        "updated_at": now(),
        "repository": repository(repo),
        "sender": sender(),
    })
}

/// A completed `check_run` delivery for the tip of a run's test branch.
pub fn check_run_event(repo: &GitRepo, run: &Run, name: &str, conclusion: &str) -> Value {
    let branch = run.details["testBranch"].as_str().unwrap_or_default();
    check_run_on(repo, &run.sha, branch, name, conclusion)
}

/// A completed `check_run` delivery for commit `sha`, the tip of `branch`.
pub fn check_run_on(
    repo: &GitRepo,
    sha: &str,
    branch: &str,
    name: &str,
    conclusion: &str,
) -> Value {
    json!({
        "action": "completed",
        "check_run": {
            "id": 4001,
            "node_id": "MDg6Q2hlY2tSdW40MDAx",
            "name": name,
            "head_sha": sha,
            "external_id": "",
            "url": format!("https://api.github.com/repos/{}/{}/check-runs/4001", repo.owner, repo.name),
            "html_url": format!("https://github.com/{}/{}/runs/4001", repo.owner, repo.name),
            "details_url": format!("https://ci.example.com/{name}/4001"),
            "status": "completed",
            "conclusion": conclusion,
            "started_at": now(),
            "completed_at": now(),
            "output": {"title": name, "summary": conclusion, "annotations_count": 0},
            "check_suite": {
                "id": 5001,
                "head_branch": branch,
                "head_sha": sha,
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
