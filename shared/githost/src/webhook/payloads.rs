//! The payloads of the events the queue reads, and their translation into facts.

use super::WebhookError;
use super::command::parse_command;
use super::facts::{HostFact, PrChange};
use crate::comment::is_marked;
use crate::github_wire::{CheckRunWire, PullWire, StatusWire, User};
use mq_core::git::PrFacts;
use mq_core::ids::{PrNumber, RepoRef, Sha};
use serde::Deserialize;
use serde::de::DeserializeOwned;

#[derive(Deserialize)]
struct Owner {
    login: String,
}

#[derive(Deserialize)]
struct Repository {
    name: String,
    owner: Owner,
}

#[derive(Deserialize)]
struct Ping {
    #[serde(default)]
    zen: String,
    hook_id: Option<u64>,
    repository: Option<Repository>,
}

#[derive(Deserialize)]
struct Named {
    name: String,
}

#[derive(Deserialize)]
struct Status {
    sha: String,
    #[serde(flatten)]
    status: StatusWire,
    #[serde(default)]
    branches: Vec<Named>,
    repository: Repository,
}

#[derive(Deserialize)]
struct CheckRun {
    action: String,
    check_run: CheckRunWire,
    repository: Repository,
}

#[derive(Deserialize)]
struct Suite {
    id: u64,
    head_sha: String,
    head_branch: Option<String>,
    conclusion: Option<String>,
}

#[derive(Deserialize)]
struct CheckSuite {
    action: String,
    check_suite: Suite,
    repository: Repository,
}

#[derive(Deserialize)]
struct From {
    from: String,
}

#[derive(Deserialize)]
struct BaseChange {
    #[serde(rename = "ref")]
    name: From,
}

#[derive(Deserialize, Default)]
struct Changes {
    base: Option<BaseChange>,
}

#[derive(Deserialize)]
struct PullRequest {
    action: String,
    pull_request: PullWire,
    changes: Option<Changes>,
    repository: Repository,
}

/// A review submitted, edited or dismissed. Its pull request is shaped as in `pull_request`
/// deliveries, without `merged` and `mergeable`.
#[derive(Deserialize)]
struct PullRequestReview {
    action: String,
    pull_request: PullWire,
    repository: Repository,
}

#[derive(Deserialize)]
struct Issue {
    number: u64,
    pull_request: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Comment {
    id: u64,
    #[serde(default)]
    body: String,
    user: User,
    #[serde(default)]
    author_association: String,
}

#[derive(Deserialize)]
struct IssueComment {
    action: String,
    issue: Issue,
    comment: Comment,
    repository: Repository,
}

#[derive(Deserialize)]
struct Push {
    #[serde(rename = "ref")]
    name: String,
    before: String,
    after: String,
    #[serde(default)]
    created: bool,
    #[serde(default)]
    deleted: bool,
    #[serde(default)]
    forced: bool,
    repository: Repository,
}

/// Reads a verified delivery of `event`.
pub(crate) fn parse(event: &str, body: &[u8], host: &str) -> Result<HostFact, WebhookError> {
    let repo = |r: &Repository| -> Result<RepoRef, WebhookError> {
        RepoRef::new(host, &r.owner.login, &r.name)
            .map_err(|e| WebhookError::Malformed(e.to_string()))
    };
    match event {
        "ping" => {
            let ping: Ping = read(body)?;
            Ok(HostFact::Ping {
                repo: ping.repository.as_ref().map(repo).transpose()?,
                hook_id: ping.hook_id,
                zen: ping.zen,
            })
        }
        "status" => {
            let delivery: Status = read(body)?;
            let Some(status) = delivery.status.report() else {
                return Ok(ignored(event, None));
            };
            Ok(HostFact::Status {
                repo: repo(&delivery.repository)?,
                sha: Sha::new(delivery.sha),
                status,
                branches: delivery.branches.into_iter().map(|b| b.name).collect(),
            })
        }
        "check_run" => {
            let delivery: CheckRun = read(body)?;
            let report = delivery.check_run.report();
            match (delivery.action.as_str(), report) {
                ("created" | "completed", Some(check)) => Ok(HostFact::CheckRun {
                    repo: repo(&delivery.repository)?,
                    sha: Sha::new(delivery.check_run.head_sha),
                    check,
                }),
                _ => Ok(ignored(event, Some(delivery.action))),
            }
        }
        "check_suite" => {
            let delivery: CheckSuite = read(body)?;
            if delivery.action != "completed" {
                return Ok(ignored(event, Some(delivery.action)));
            }
            let suite = delivery.check_suite;
            Ok(HostFact::CheckSuiteCompleted {
                repo: repo(&delivery.repository)?,
                sha: Sha::new(suite.head_sha),
                suite_id: suite.id,
                branch: suite.head_branch,
                conclusion: suite.conclusion.and_then(|c| c.parse().ok()),
            })
        }
        "pull_request" => {
            let delivery: PullRequest = read(body)?;
            let Some(change) = pr_change(&delivery) else {
                return Ok(ignored(event, Some(delivery.action)));
            };
            Ok(HostFact::PullRequest {
                repo: repo(&delivery.repository)?,
                change,
                pr: pr_facts(delivery.pull_request)?,
            })
        }
        "pull_request_review" => {
            let delivery: PullRequestReview = read(body)?;
            if !matches!(delivery.action.as_str(), "submitted" | "dismissed") {
                return Ok(ignored(event, Some(delivery.action)));
            }
            Ok(HostFact::PullRequest {
                repo: repo(&delivery.repository)?,
                change: PrChange::Reviewed,
                pr: pr_facts(delivery.pull_request)?,
            })
        }
        "issue_comment" => {
            let delivery: IssueComment = read(body)?;
            let on_pr = delivery.issue.pull_request.is_some();
            let command =
                (delivery.action == "created" && on_pr && !is_marked(&delivery.comment.body))
                    .then(|| parse_command(&delivery.comment.body))
                    .flatten();
            let Some(command) = command else {
                return Ok(ignored(event, Some(delivery.action)));
            };
            Ok(HostFact::Command {
                repo: repo(&delivery.repository)?,
                pr: pr_number(delivery.issue.number)?,
                author: delivery.comment.user.login,
                author_association: delivery.comment.author_association,
                comment_id: delivery.comment.id,
                command,
            })
        }
        "push" => {
            let delivery: Push = read(body)?;
            let Some(branch) = delivery.name.strip_prefix("refs/heads/") else {
                return Ok(ignored(event, None));
            };
            Ok(HostFact::Push {
                repo: repo(&delivery.repository)?,
                branch: branch.to_owned(),
                before: Sha::new(delivery.before),
                after: Sha::new(delivery.after),
                created: delivery.created,
                deleted: delivery.deleted,
                forced: delivery.forced,
            })
        }
        _ => Ok(ignored(event, action_of(body))),
    }
}

fn read<T: DeserializeOwned>(body: &[u8]) -> Result<T, WebhookError> {
    serde_json::from_slice(body).map_err(|e| WebhookError::Malformed(e.to_string()))
}

fn ignored(event: &str, action: Option<String>) -> HostFact {
    HostFact::Ignored {
        event: event.to_owned(),
        action,
    }
}

/// The `action` of any payload, for the record of what was ignored.
fn action_of(body: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Action {
        action: Option<String>,
    }
    serde_json::from_slice::<Action>(body).ok()?.action
}

fn pr_change(delivery: &PullRequest) -> Option<PrChange> {
    Some(match delivery.action.as_str() {
        "opened" => PrChange::Opened,
        "reopened" => PrChange::Reopened,
        "synchronize" => PrChange::Synchronized,
        "closed" => PrChange::Closed,
        "converted_to_draft" => PrChange::ConvertedToDraft,
        "ready_for_review" => PrChange::ReadyForReview,
        "edited" => match delivery.changes.as_ref().and_then(|c| c.base.as_ref()) {
            Some(base) => PrChange::BaseChanged {
                from: base.name.from.clone(),
            },
            None => PrChange::Edited,
        },
        _ => return None,
    })
}

/// The pull request as the delivery shows it. A delivery does not say what the review rules
/// decide: the pull request is taken as not approved until read from the host.
fn pr_facts(wire: PullWire) -> Result<PrFacts, WebhookError> {
    let number = pr_number(wire.number)?;
    Ok(wire.facts(number, false, mq_core::git::Review::Required))
}

fn pr_number(number: u64) -> Result<PrNumber, WebhookError> {
    PrNumber::try_from(number).map_err(|_| {
        WebhookError::Malformed(format!("pull request number {number} is out of range"))
    })
}
