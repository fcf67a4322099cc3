//! Git host deliveries turned into engine events for the queues they concern.
//!
//! - a status or check run on a commit completes the test runs whose branch tip it is;
//! - a pull request change updates (or cancels) its active entries;
//! - a push to a queue's target branch that the queue did not make restarts its testing;
//! - a `/service merge` or `/service cancel` comment submits or cancels, where the queue
//!   accepts commands and the commenter may write to the repository; once per comment, however
//!   often it is delivered.
//!
//! A delivery only reaches queues of the organisation that owns its repository (see
//! [`super::owners`]), on that repository; a delivery for an owner linked to no organisation
//! reaches none.

use super::drive::{self, Actor, Start};
use super::pull_requests::{EventsFuture, head_checks_passed, pr_facts, submit_with};
use super::shell::{contention_deadline, read_by};
use crate::app::App;
use crate::error::ServiceError;
use mq_core::engine::{CancelReason, Event, Transition};
use mq_core::error::ErrorCode;
use mq_core::ids::{OrgId, PrNumber, QueueId, RepoRef};
use mq_core::priority::Priority;
use mq_core::snapshot::{Queue, QueueSnapshot};
use mq_githost::webhook::{CommentCommand, HostFact, InvalidCommand};
use mq_githost::{CommandComment, GitHost, HostError};
use mq_store::{Claim, IdempotencyRecord, StoredResponse};
use tokio::time::Instant;

/// How long a comment's command is remembered, so that a delivery of it sent again (GitHub
/// redelivers deliveries of the last 3 days, by hand or by a retrying integration) does
/// nothing.
pub const COMMENT_REMEMBERED_MS: i64 = 7 * 24 * 60 * 60 * 1000;

/// A delivery that claimed a comment and did not settle it for this long died: another
/// delivery of the comment acts on it.
const COMMENT_CLAIM_STALE_MS: i64 = 5 * 60 * 1000;

/// What a delivery did: the queues it reached.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delivered {
    pub queues: Vec<QueueId>,
}

/// Applies a verified delivery to the queues it concerns; `account` is the GitHub id of the
/// account owning its repository, as the delivery says (`mq_githost::webhook::owner_account`).
/// Its reads of the Git host and its commits share one deadline, as a request's do, so that
/// it answers within the function's time however slow the Git host and however many queues
/// it reaches.
pub async fn deliver(
    app: &App,
    fact: HostFact,
    account: Option<u64>,
) -> Result<Delivered, ServiceError> {
    let deadline = contention_deadline();
    let Some(repo) = fact.repo() else {
        return Ok(Delivered::default());
    };
    let owner = repo.owner_ref().key();
    let Some(org) = super::owners::organisation_of_delivery(app, &owner, account).await? else {
        return Ok(Delivered::default());
    };
    let to = Owned { org: &org, repo };
    match &fact {
        HostFact::Status { sha, status, .. } => {
            let event = Event::StatusReported {
                sha: sha.clone(),
                status: status.clone(),
            };
            to_owned_runs_of(app, to, sha, event, deadline).await
        }
        HostFact::CheckRun { sha, check, .. } => {
            let event = Event::CheckRunReported {
                sha: sha.clone(),
                check: check.clone(),
            };
            to_owned_runs_of(app, to, sha, event, deadline).await
        }
        HostFact::PullRequest { pr, .. } => pull_request(app, to, pr.clone(), deadline).await,
        HostFact::Push {
            branch,
            after,
            deleted: false,
            ..
        } => {
            let queues = queues_on(app, to, |q| &q.branch == branch).await?;
            if queues.is_empty() {
                return Ok(Delivered::default());
            }
            // A delivery may come late, out of order or again: the queues follow where the
            // branch is now, as the Git host says.
            let head = match app.githost.as_deref() {
                Some(host) => read_by(deadline, host.branch_head(to.repo, branch)).await?,
                None => None,
            };
            let moved = Event::TargetMoved {
                sha: head.unwrap_or_else(|| after.clone()),
            };
            send(app, queues, moved, deadline).await
        }
        HostFact::Command {
            pr,
            author,
            comment_id,
            command,
            ..
        } => {
            let commenter = Commenter { login: author };
            let command = (*comment_id, command.clone());
            comment_command(app, to, *pr, commenter, command, deadline).await
        }
        HostFact::Push { .. }
        | HostFact::Ping { .. }
        | HostFact::CheckSuiteCompleted { .. }
        | HostFact::Ignored { .. } => Ok(Delivered::default()),
    }
}

/// Where a delivery may go: the queues of `org`, the owner of `repo`, on `repo`.
#[derive(Debug, Clone, Copy)]
struct Owned<'a> {
    org: &'a OrgId,
    repo: &'a RepoRef,
}

/// Sends a CI result (a status or check run event) to every queue with a run on that commit:
/// for the statuses the service's own local CI records.
pub async fn to_runs_of(
    app: &App,
    sha: &mq_core::ids::Sha,
    event: Event,
) -> Result<Delivered, ServiceError> {
    let queues = queues_with_runs_on(app, sha).await?;
    send(app, queues, event, contention_deadline()).await
}

/// Sends a delivered CI result to the queues of the delivery's owner, on its repository,
/// with a run on that commit.
async fn to_owned_runs_of(
    app: &App,
    to: Owned<'_>,
    sha: &mq_core::ids::Sha,
    event: Event,
    deadline: Instant,
) -> Result<Delivered, ServiceError> {
    let mut queues = queues_with_runs_on(app, sha).await?;
    let on_repo = format!("{}#", to.repo.key());
    queues.retain(|q| q.as_str().starts_with(&on_repo));
    let mut reached = Delivered::default();
    for id in queues {
        let fact = std::slice::from_ref(&event);
        let start = Start::fresh().until(deadline);
        let applied = drive::apply(app, Actor::ServiceFor(to.org), &id, fact, start);
        match applied.await {
            Ok(_) => reached.queues.push(id),
            Err(e) if e.is(ErrorCode::QueueNotFound) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(reached)
}

async fn queues_with_runs_on(
    app: &App,
    sha: &mq_core::ids::Sha,
) -> Result<Vec<QueueId>, ServiceError> {
    let mut queues: Vec<QueueId> = app
        .store
        .runs_by_sha(sha)
        .await?
        .into_iter()
        .map(|l| l.queue)
        .collect();
    queues.dedup();
    Ok(queues)
}

/// A pull request changed: every queue with an active entry for it hears of it. The pull
/// request is read anew: the delivery's view of mergeability is provisional, and a delivery
/// may come late or again (a `closed` one after the pull request was reopened and submitted
/// again). Only a pull request the Git host no longer has is taken as the delivery says.
/// Most deliveries (every push to every pull request) concern no queue: each queue's entry
/// for the pull request is read first, and only a queue where it is active is read whole.
/// A queue that fails (its item unreadable, the store unavailable) is logged and the others
/// still hear of the change; the delivery then fails with the first such error.
async fn pull_request(
    app: &App,
    to: Owned<'_>,
    pr: mq_core::git::PrFacts,
    deadline: Instant,
) -> Result<Delivered, ServiceError> {
    let mut reached = Delivered::default();
    let mut failed = None;
    for queue in queues_on(app, to, |_| true).await? {
        match pull_request_on(app, &queue, &pr, deadline).await {
            Ok(true) => reached.queues.push(queue),
            Ok(false) => {}
            Err(error) => {
                tracing::error!(%queue, %error, "a queue did not hear of a pull request's change");
                failed.get_or_insert(error);
            }
        }
    }
    match failed {
        Some(error) => Err(error),
        None => Ok(reached),
    }
}

/// Applies the change of `pr` to `queue` when it has an active entry for it; whether it had.
async fn pull_request_on(
    app: &App,
    queue: &QueueId,
    pr: &mq_core::git::PrFacts,
    deadline: Instant,
) -> Result<bool, ServiceError> {
    let number = pr.number;
    let latest = app.store.load_entry(queue, number).await?;
    let active = latest
        .and_then(|(_, e)| e)
        .filter(|e| !e.state.is_terminal());
    if active.is_none() {
        return Ok(false);
    }
    let Some(snapshot) = app.store.load(queue).await? else {
        return Ok(false);
    };
    if snapshot.entry_for_pr(number).is_none() {
        return Ok(false);
    }
    let read_at = app.now();
    let facts = match app.githost.as_deref() {
        None => pr.clone(),
        Some(host) => {
            let (repo, branch) = (&snapshot.queue.repo, &snapshot.queue.branch);
            let read =
                async { Ok::<_, ServiceError>(host.pull_request(repo, number, branch).await) };
            match read_by(deadline, read).await? {
                Ok(facts) => facts,
                Err(HostError::NotFound(_)) => pr.clone(),
                Err(e) => return Err(e.into()),
            }
        }
    };
    let update = [Event::PrUpdated { pr: facts }];
    // An entry submitted after this read began came with its own read of the pull request,
    // which may be the newer: it is not cancelled for commits it may already have (as
    // for the tick's reads).
    let step = |snapshot: &QueueSnapshot, now| match snapshot.entry_for_pr(number) {
        Some(e) if e.submitted_at > read_at => Ok(Transition::unchanged(snapshot)),
        _ => drive::apply_in_order(snapshot, &update, now, false),
    };
    let start = Start::from(snapshot).until(deadline);
    drive::apply_step(app, Actor::Service, queue, step, start).await?;
    Ok(true)
}

/// Who wrote a `/service` comment.
struct Commenter<'a> {
    login: &'a str,
}

impl Commenter<'_> {
    /// Whether the commenter may write to `repo`, as the Git host says
    /// ([`mq_githost::GitHost::may_write`]). The delivery's `author_association` is not
    /// trusted either way: GitHub computes it without seeing private organisation
    /// memberships, so a maintainer who writes through a team arrives as `CONTRIBUTOR` or
    /// `NONE`, and an organisation member may only read.
    async fn may_write(&self, host: &dyn GitHost, repo: &RepoRef) -> Result<bool, ServiceError> {
        Ok(host.may_write(repo, self.login).await?)
    }
}

/// The `/service` comment `comment_id`: followed when the commenter may write to the
/// repository and a queue of the owner's on it accepts commands, once per comment; otherwise
/// answered in a comment. Whether the commenter may write is asked first, before the pull
/// request is read: a stranger's comment costs one call to the Git host, and is answered
/// once per pull request. `/service cancel` goes to the queue holding the pull request (a
/// pull request may have been submitted to a queue other than its base branch's);
/// `/service merge` to the queue of its base branch, as a submission through the API,
/// with a direct merge when the queue's settings and the head's checks allow it.
async fn comment_command(
    app: &App,
    to: Owned<'_>,
    pr: PrNumber,
    commenter: Commenter<'_>,
    (comment_id, command): (u64, Result<CommentCommand, InvalidCommand>),
    deadline: Instant,
) -> Result<Delivered, ServiceError> {
    let host = app.host()?;
    let repo = to.repo;
    let queues = owned_queues(app, to).await?;
    let commanded = queues.iter().find(|q| q.config.commands_enabled);
    let Some(any) = commanded.cloned() else {
        return Ok(Delivered::default());
    };
    let reply = |queue: &Queue, text: String| {
        let comments = queue.config.comments_enabled;
        async move {
            if comments {
                post_reply(
                    host,
                    repo,
                    CommandComment { pr, id: comment_id },
                    &text,
                    deadline,
                )
                .await;
            }
        }
    };
    if !read_by(deadline, commenter.may_write(host, repo)).await? {
        if first_refusal(app, &any, pr, commenter.login).await? {
            let text = "Only people who can write to this repository may use `/service` commands.";
            reply(&any, text.to_owned()).await;
        }
        return Ok(Delivered::default());
    }
    // The claim's scope is the repository's: any of its queues names it.
    let Some(claim) = claim_comment(app, &any, comment_id).await? else {
        tracing::info!(
            comment_id,
            "comment command followed before; delivery ignored"
        );
        return Ok(Delivered::default());
    };
    let found = match &command {
        Ok(CommentCommand::Cancel) => match queue_holding(app, &queues, pr).await {
            Ok(Some(queue)) => Ok(Ok(queue)),
            Ok(None) => read_by(deadline, queue_of_pull_request(app, &queues, pr)).await,
            Err(e) => Err(e),
        },
        _ => read_by(deadline, queue_of_pull_request(app, &queues, pr)).await,
    };
    let queue = match found {
        Ok(Ok(queue)) if queue.config.commands_enabled => queue,
        Ok(Ok(_)) => {
            settle_comment(app, &claim, true).await;
            return Ok(Delivered::default());
        }
        Ok(Err(base)) => {
            let text = format!("There is no merge queue for `{base}` in this repository.");
            reply(&any, text).await;
            settle_comment(app, &claim, true).await;
            return Ok(Delivered::default());
        }
        Err(e) => {
            settle_comment(app, &claim, e.refusal().is_some()).await;
            return Err(e);
        }
    };
    tracing::info!(
        queue = %queue.id,
        pr,
        comment_id,
        commenter = commenter.login,
        command = ?command.as_ref().ok(),
        "following a comment command"
    );
    let done = match command {
        Ok(CommentCommand::Merge { priority, no_batch }) => {
            let submission = move |now: Queue| -> EventsFuture<'_> {
                Box::pin(async move {
                    let facts = pr_facts(host, &now, pr).await?;
                    Ok(vec![Event::Submit {
                        head_checks_passed: head_checks_passed(host, &now, &facts).await?,
                        pr: facts,
                        priority: priority.unwrap_or(Priority::default_priority()),
                        no_batch: no_batch.then_some(true),
                        force: false,
                    }])
                })
            };
            submit_with(app, &queue.org, &queue.id, pr, deadline, submission).await
        }
        Ok(CommentCommand::Cancel) => {
            let cancel = Event::Cancel {
                pr,
                reason: CancelReason::Comment,
            };
            drive::apply(
                app,
                Actor::Org(&queue.org),
                &queue.id,
                &[cancel],
                Start::fresh().until(deadline),
            )
            .await
            .map(|_| ())
        }
        Err(InvalidCommand(message)) => {
            reply(&queue, message).await;
            settle_comment(app, &claim, true).await;
            return Ok(Delivered::default());
        }
    };
    let followed = !matches!(&done, Err(e) if e.refusal().is_none());
    settle_comment(app, &claim, followed).await;
    match done {
        Ok(()) => Ok(Delivered {
            queues: vec![queue.id],
        }),
        Err(e) if e.refusal().is_some() => {
            let why = e.refusal().unwrap_or_default();
            reply(&queue, format!("The merge queue could not do that: {why}")).await;
            Ok(Delivered::default())
        }
        Err(e) => Err(e),
    }
}

/// Posts the queue's answer to a command comment: the delivery's last call, bounded as an
/// effect is past a request's deadline. One not posted is logged.
async fn post_reply(
    host: &dyn GitHost,
    repo: &RepoRef,
    to: CommandComment,
    text: &str,
    deadline: Instant,
) {
    let posted = host.reply(repo, to, text);
    match tokio::time::timeout_at(deadline + drive::EFFECT_OVERRUN, posted).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(error = %e, "command reply not posted"),
        Err(_) => tracing::warn!("command reply not posted: the Git host took too long"),
    }
}

/// Whether a commenter who may not write is refused on `pr` for the first time (within
/// [`COMMENT_REMEMBERED_MS`]): each of their later commands there is ignored without a reply,
/// so that comments cannot make the App write comment after comment.
async fn first_refusal(
    app: &App,
    queue: &Queue,
    pr: PrNumber,
    login: &str,
) -> Result<bool, ServiceError> {
    let scope = format!(
        "{}#webhooks/github#refusal/{}/{pr}/{login}",
        queue.org,
        queue.repo.key()
    );
    let Some(claim) = claim_once(app, scope).await? else {
        return Ok(false);
    };
    // Settled at once: an unsettled claim is taken over after a few minutes.
    settle_comment(app, &claim, true).await;
    Ok(true)
}

/// The queue of `queues` with an active entry for `pr`, if one has.
async fn queue_holding(
    app: &App,
    queues: &[Queue],
    pr: PrNumber,
) -> Result<Option<Queue>, ServiceError> {
    for queue in queues {
        let latest = app.store.load_entry(&queue.id, pr).await?;
        if latest
            .and_then(|(_, e)| e)
            .is_some_and(|e| !e.state.is_terminal())
        {
            return Ok(Some(queue.clone()));
        }
    }
    Ok(None)
}

/// Claims the command of comment `id` on `queue`'s repository: `None` when a delivery of the
/// same comment followed it already, or is following it.
async fn claim_comment(
    app: &App,
    queue: &Queue,
    id: u64,
) -> Result<Option<IdempotencyRecord>, ServiceError> {
    let scope = format!(
        "{}#webhooks/github#comment/{}/{id}",
        queue.org,
        queue.repo.key()
    );
    claim_once(app, scope).await
}

/// Claims `scope` for [`COMMENT_REMEMBERED_MS`]: `None` when it is claimed already (a claim
/// left unsettled for [`COMMENT_CLAIM_STALE_MS`] is taken over).
async fn claim_once(app: &App, scope: String) -> Result<Option<IdempotencyRecord>, ServiceError> {
    let now = app.now();
    let record = IdempotencyRecord::claim(scope, String::new(), now, COMMENT_REMEMBERED_MS);
    let stale_before = now.plus_millis(-COMMENT_CLAIM_STALE_MS);
    match app
        .store
        .claim_idempotency_key(&record, now, stale_before)
        .await?
    {
        Claim::Claimed => Ok(Some(record)),
        Claim::Taken(_) => Ok(None),
    }
}

/// Records that a comment's command was followed (or refused, or answered), or, when it
/// failed on an outage (`followed` false), gives the claim up so that a delivery of the
/// comment sent again acts.
async fn settle_comment(app: &App, claim: &IdempotencyRecord, followed: bool) {
    let settled = if followed {
        let done = StoredResponse {
            status: 200,
            content_type: "text/plain".to_owned(),
            body: String::new(),
        };
        app.store
            .complete_idempotency_key(&claim.scope, &claim.claim_id, &done)
            .await
    } else {
        app.store
            .release_idempotency_key(&claim.scope, &claim.claim_id)
            .await
    };
    if let Err(e) = settled {
        tracing::warn!(error = %e, "the claim on a comment's command was not settled");
    }
}

/// The queue of `queues` on the pull request's base branch, or that base branch's name when
/// none is.
async fn queue_of_pull_request(
    app: &App,
    queues: &[Queue],
    pr: PrNumber,
) -> Result<Result<Queue, String>, ServiceError> {
    let host = app.host()?;
    let Some(any) = queues.first() else {
        return Err(ServiceError::internal(
            "no queue to read the pull request for",
        ));
    };
    let facts = pr_facts(host, any, pr).await?;
    let on_base = queues.iter().find(|q| q.branch == facts.base_branch);
    Ok(on_base.cloned().ok_or(facts.base_branch))
}

/// The owner's queues on the repository that `keep` selects.
async fn queues_on(
    app: &App,
    to: Owned<'_>,
    keep: impl Fn(&Queue) -> bool,
) -> Result<Vec<QueueId>, ServiceError> {
    let queues = owned_queues(app, to).await?;
    Ok(queues.into_iter().filter(keep).map(|q| q.id).collect())
}

/// The owner's queues on the repository.
async fn owned_queues(app: &App, to: Owned<'_>) -> Result<Vec<Queue>, ServiceError> {
    let mut queues = app.store.queues_of_repo(&to.repo.key()).await?;
    queues.retain(|q| &q.org == to.org);
    Ok(queues)
}

/// Applies a fact to each queue and executes what follows.
async fn send(
    app: &App,
    queues: Vec<QueueId>,
    event: Event,
    deadline: Instant,
) -> Result<Delivered, ServiceError> {
    for id in &queues {
        let fact = std::slice::from_ref(&event);
        let start = Start::fresh().until(deadline);
        drive::apply(app, Actor::Service, id, fact, start).await?;
    }
    Ok(Delivered { queues })
}
