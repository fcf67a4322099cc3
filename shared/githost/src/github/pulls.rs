//! Pull requests, their heads and their comments.

use super::client::JSON;
use super::client::{Client, Reply, Sent, escape, identity, repo_path};
use super::wire::{
    CollaboratorPermission, Compare, IssueComment, Message, Numbered, PullWire, RefWire,
};
use crate::comment::marked_with;
use crate::error::{HostError, HostResult};
use crate::port::TestPullRequest;
use mq_core::git::{PrFacts, PrState, Review};
use mq_core::ids::{PrNumber, RepoRef, Sha};
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::Method;
use reqwest::StatusCode;
use serde_json::{Value, json};

pub(crate) async fn pull(client: &Client, repo: &RepoRef, pr: PrNumber) -> HostResult<PullWire> {
    client
        .get(repo, &format!("{}/pulls/{pr}", repo_path(repo)))
        .await
}

/// What GitHub says about a pull request.
pub(crate) async fn facts(
    client: &Client,
    repo: &RepoRef,
    pr: PrNumber,
    target: &str,
) -> HostResult<PrFacts> {
    let wire = pull(client, repo, pr).await?;
    let open = wire.pr_state() == PrState::Open;
    let based_on_target_head = open && contains(client, repo, target, &wire.head.sha).await?;
    let review = match open {
        true => review(client, repo, pr).await?,
        false => Review::default(),
    };
    Ok(wire.facts(pr, based_on_target_head, review))
}

/// The review query: GitHub's REST API has no field for what the review rules decide.
const REVIEW_QUERY: &str = "query($owner: String!, $name: String!, $number: Int!) { \
    repository(owner: $owner, name: $name) { pullRequest(number: $number) { reviewDecision } } }";

/// What the target branch's review rules say of pull request `pr` (GraphQL's
/// `reviewDecision`): `Approved` when they require no review. A decision this adapter does
/// not know is taken as missing reviews.
pub(crate) async fn review(client: &Client, repo: &RepoRef, pr: PrNumber) -> HostResult<Review> {
    let query = json!({
        "query": REVIEW_QUERY,
        "variables": { "owner": repo.owner, "name": repo.name, "number": pr },
    });
    let url = client.transport.graphql_url();
    let reply = client
        .send_to(repo, Method::POST, url, Some(&query), JSON)
        .await?;
    // `reviewDecision` is `APPROVED`, `CHANGES_REQUESTED`, `REVIEW_REQUIRED`, or null when no
    // review is required; a failed query has no pull request, and says why in `errors`.
    let answer: Value = reply.json()?;
    let pull = answer.pointer("/data/repository/pullRequest");
    match pull.map(|p| &p["reviewDecision"]) {
        Some(Value::Null) => Ok(Review::Approved),
        Some(decision) => Ok(decision
            .as_str()
            .and_then(|d| d.to_ascii_lowercase().parse().ok())
            .unwrap_or(Review::Required)),
        None => match answer.pointer("/errors/0/message").and_then(Value::as_str) {
            Some(error) => Err(HostError::Other(format!(
                "reading the reviews of #{pr}: {error}"
            ))),
            None => Err(HostError::NotFound(format!("pull request #{pr}"))),
        },
    }
}

/// Whether `head` (a branch or a commit) contains `base` (a branch's head, or a commit): the
/// compare API finds it nothing behind.
pub(crate) async fn contains(
    client: &Client,
    repo: &RepoRef,
    base: &str,
    head: &str,
) -> HostResult<bool> {
    let path = format!(
        "{}/compare/{}...{}?per_page=1",
        repo_path(repo),
        escape(base),
        escape(head)
    );
    let compare: Option<Compare> = client.get_optional(repo, &path).await?;
    Ok(compare.is_some_and(|c| c.behind_by == 0))
}

/// The commit a branch points at.
pub(crate) async fn branch_head(
    client: &Client,
    repo: &RepoRef,
    branch: &str,
) -> HostResult<Option<Sha>> {
    let path = format!("{}/git/ref/heads/{}", repo_path(repo), escape(branch));
    let found: Option<RefWire> = client.get_optional(repo, &path).await?;
    Ok(found.map(|r| Sha::new(r.object.sha)))
}

/// Updates the queue's comment that holds `marker` or posts it. A post is never repeated
/// blindly: after a server error or a lost answer, the comments are listed again and the
/// comment is updated if that post made it.
pub(crate) async fn upsert_comment(
    client: &Client,
    repo: &RepoRef,
    pr: PrNumber,
    marker: &str,
    body: &str,
) -> HostResult<()> {
    let listing = format!("{}/issues/{pr}/comments", repo_path(repo));
    let payload = json!({ "body": marked_with(body, marker) });
    let mut attempt = 1;
    loop {
        if let Some(id) = queue_comment(client, repo, &listing, marker).await? {
            let path = format!("{}/issues/comments/{id}", repo_path(repo));
            return client
                .send(repo, Method::PATCH, &path, Some(&payload))
                .await?
                .ok();
        }
        let sent = client
            .send_unrepeated(repo, Method::POST, &listing, Some(&payload))
            .await?;
        match sent {
            Sent::Answered(reply) => return reply.ok(),
            Sent::Unknown(error) if attempt >= client.transport.attempts() => return Err(error),
            Sent::Unknown(error) => {
                tracing::info!(pr, %error, "the comment may have been posted; looking again");
                tokio::time::sleep(client.transport.backoff(attempt)).await;
                attempt += 1;
            }
        }
    }
}

/// The id of the queue's comment holding `marker` on the pull request whose comments are at
/// `listing`. Only a comment the adapter's own account wrote counts: anyone may paste a
/// marker into a comment of theirs, which the queue would then keep its word in, and they
/// could edit afterwards.
async fn queue_comment(
    client: &Client,
    repo: &RepoRef,
    listing: &str,
    marker: &str,
) -> HostResult<Option<u64>> {
    let ours = identity(client, repo).await?.login;
    let comments: Vec<IssueComment> = client.get_all(repo, listing, None).await?;
    Ok(comments
        .into_iter()
        .filter(|c| {
            c.user
                .as_ref()
                .is_some_and(|u| u.login.eq_ignore_ascii_case(&ours))
        })
        .find(|c| c.body.as_deref().is_some_and(|b| b.contains(marker)))
        .map(|c| c.id))
}

/// Closes a pull request whose changes reached the target as new commits.
pub(crate) async fn close(client: &Client, repo: &RepoRef, pr: PrNumber) -> HostResult<()> {
    let path = format!("{}/pulls/{pr}", repo_path(repo));
    let payload = json!({ "state": "closed" });
    client
        .send(repo, Method::PATCH, &path, Some(&payload))
        .await?
        .ok()
}

/// Opens a draft pull request from a test branch; one already open from it is kept. Where the
/// repository's plan has no draft pull requests, a ready one is opened instead. A branch GitHub
/// does not know is `NotFound`; GitHub also answers so for a branch pushed moments before
/// (its `head` "invalid" for a while), which is then `Transient`: tried again, it opens.
pub(crate) async fn open_test_pull(
    client: &Client,
    repo: &RepoRef,
    request: &TestPullRequest,
) -> HostResult<()> {
    let path = format!("{}/pulls", repo_path(repo));
    let mut payload = json!({
        "title": request.title,
        "head": request.branch,
        "base": request.target,
        "body": request.body,
        "draft": true,
    });
    let mut reply = client
        .send(repo, Method::POST, &path, Some(&payload))
        .await?;
    if refusal(&reply) == Some(PullRefusal::NoDrafts) {
        payload["draft"] = json!(false);
        reply = client
            .send(repo, Method::POST, &path, Some(&payload))
            .await?;
    }
    match refusal(&reply) {
        Some(PullRefusal::AlreadyOpen) => Ok(()),
        Some(PullRefusal::NoSuchHead) => {
            let answer = format!("branch {} ({})", request.branch, reply.message());
            match branch_head(client, repo, &request.branch).await? {
                Some(_) => Err(HostError::Transient {
                    message: format!("GitHub does not see {answer} yet"),
                    retry_after: None,
                }),
                None => Err(HostError::NotFound(answer)),
            }
        }
        _ => reply.ok(),
    }
}

/// Why GitHub refused to open a pull request, as far as the queue acts on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PullRefusal {
    /// "Draft pull requests are not supported in this repository."
    NoDrafts,
    /// "A pull request already exists for {owner}:{branch}."
    AlreadyOpen,
    /// The head branch does not exist (`field: head`, `code: invalid`).
    NoSuchHead,
}

fn refusal(reply: &Reply) -> Option<PullRefusal> {
    if reply.status != StatusCode::UNPROCESSABLE_ENTITY {
        return None;
    }
    let body: Message = serde_json::from_slice(&reply.body).ok()?;
    if body
        .message
        .contains("Draft pull requests are not supported")
    {
        return Some(PullRefusal::NoDrafts);
    }
    body.errors.iter().find_map(|error| {
        let text = |key: &str| error.get(key).and_then(Value::as_str);
        if text("message").is_some_and(|m| m.contains("already exists")) {
            Some(PullRefusal::AlreadyOpen)
        } else if text("field") == Some("head") && text("code") == Some("invalid") {
            Some(PullRefusal::NoSuchHead)
        } else {
            None
        }
    })
}

/// Closes every pull request open from `branch` (a test branch of this repository).
pub(crate) async fn close_test_pulls(
    client: &Client,
    repo: &RepoRef,
    branch: &str,
) -> HostResult<()> {
    let head = format!("{}:{branch}", repo.owner);
    let listing = format!(
        "{}/pulls?state=open&head={}",
        repo_path(repo),
        utf8_percent_encode(&head, NON_ALPHANUMERIC)
    );
    let open: Vec<Numbered> = client.get_all(repo, &listing, None).await?;
    for pr in open {
        close(client, repo, pr.number).await?;
    }
    Ok(())
}

/// Whether `login` may write to `repo`: its role there is `write`, `maintain` or `admin` (the
/// legacy `permission` GitHub answers is `write` or `admin`). An account GitHub does not know
/// (404) may not.
pub(crate) async fn may_write(client: &Client, repo: &RepoRef, login: &str) -> HostResult<bool> {
    let path = format!(
        "{}/collaborators/{}/permission",
        repo_path(repo),
        escape(login)
    );
    let found: Option<CollaboratorPermission> = client.get_optional(repo, &path).await?;
    Ok(found.is_some_and(|p| matches!(p.permission.as_str(), "write" | "admin")))
}
