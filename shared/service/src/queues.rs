//! Queue administration: create, read, update, delete.

use super::drive::{self, Actor, Start};
use super::effects;
use super::pull_requests::{apply_uploaded_targets, uploaded_targets_events};
use super::shell::{Retry, contention_deadline};
use crate::app::App;
use crate::error::ServiceError;
use mq_core::effects::PendingEffect;
use mq_core::engine::{Event, view};
use mq_core::error::{DomainError, ErrorCode};
use mq_core::git::PrFacts;
use mq_core::ids::{OrgId, PrNumber, QueueId};
use mq_core::settings::{QueueMode, SettingsPatch};
use mq_core::snapshot::{Queue, QueueSnapshot};
use mq_core::time::Timestamp;
use mq_githost::HostError;
use mq_store::StoreError;
use mq_wire::{EnqueuedPullRequest, QueueTarget, QueueView, QueueWithEntries};
use std::collections::BTreeSet;
use tokio::time::Instant;

/// Creates a queue for the caller's organisation, which must own the repository (404
/// otherwise); 409 when one exists for the branch.
pub async fn create(
    app: &App,
    org: &OrgId,
    target: QueueTarget,
    patch: &SettingsPatch,
) -> Result<Queue, ServiceError> {
    let (config, state) = patch.initial_config()?;
    super::owners::check_repo(app, org, &target.repo).await?;
    let mut queue = Queue::new(
        org.clone(),
        target.repo,
        target.branch,
        config,
        state,
        app.now(),
    );
    let creation = uuid::Uuid::new_v4().to_string();
    queue.record_commit(creation.clone());
    crate::request_log::record_queue(&queue.id);
    let error = match app.store.create_queue(&queue).await {
        Ok(()) => return Ok(queue),
        Err(e @ (StoreError::AlreadyExists | StoreError::Unavailable { .. })) => e,
        Err(e) => return Err(e.into()),
    };
    // The queue may be this request's own, made by an attempt whose answer was lost (the
    // SDK sent it again, and found it there): its first commit id says so.
    match app.store.load(&queue.id).await {
        Ok(Some(found)) if found.queue.has_commit(&creation) => Ok(found.queue),
        _ if error == StoreError::AlreadyExists => Err(DomainError::conflict(
            ErrorCode::QueueAlreadyExists,
            format!(
                "a queue already exists for branch {} of {}",
                queue.branch, queue.repo
            ),
        )
        .into()),
        _ => Err(error.into()),
    }
}

/// The queue with its live entries.
pub async fn get(app: &App, org: &OrgId, id: &QueueId) -> Result<QueueSnapshot, ServiceError> {
    drive::read(app, org, id).await
}

/// Applies a partial update: settings, requested state, mode (docs/queue-semantics.md §8), through
/// the engine, which starts or stops testing as the new settings say.
pub async fn update(
    app: &App,
    org: &OrgId,
    id: &QueueId,
    patch: &SettingsPatch,
) -> Result<Queue, ServiceError> {
    let snapshot = drive::read(app, org, id).await?;
    let mut events = vec![Event::UpdateSettings {
        patch: patch.clone(),
    }];
    let to_parallel = patch.mode == Some(QueueMode::Parallel)
        && snapshot.queue.config.mode != QueueMode::Parallel;
    let mut waiting = Vec::new();
    if to_parallel {
        // Targets uploaded before submission were not needed until now.
        waiting = without_targets(&snapshot, &BTreeSet::new());
        events.extend(uploaded_targets_events(app, &snapshot.queue, &waiting).await?);
    }
    let start = Start::from(snapshot);
    let queue = drive::apply(app, Actor::Org(org), id, &events, start).await?;
    if to_parallel {
        let seen = waiting.iter().map(|pr| pr.number).collect();
        targets_submitted_meanwhile(app, org, id, &seen).await?;
    }
    Ok(queue)
}

/// The facts of the entries of `snapshot` that have no impacted targets, but those in `seen`.
fn without_targets(snapshot: &QueueSnapshot, seen: &BTreeSet<PrNumber>) -> Vec<PrFacts> {
    snapshot
        .entries
        .iter()
        .filter(|e| !e.has_impacted_targets() && !seen.contains(&e.pr))
        .map(|e| e.pr_facts.clone())
        .collect()
}

/// After a switch to parallel mode: targets uploaded for pull requests submitted while the
/// switch was being made. A single-mode submission reads no targets, and the switch read the
/// targets of the entries it saw (`seen`) before its commit; an entry committed in between
/// would wait for targets already uploaded. Read after the switch's commit, the queue holds
/// every such entry, and any submission committed later is in parallel mode and reads its
/// own.
async fn targets_submitted_meanwhile(
    app: &App,
    org: &OrgId,
    id: &QueueId,
    seen: &BTreeSet<PrNumber>,
) -> Result<(), ServiceError> {
    let now = drive::read(app, org, id).await?;
    let prs = without_targets(&now, seen);
    apply_uploaded_targets(app, org, &now.queue, &prs, contention_deadline()).await
}

/// Deletes a queue with no active entries; 409 while any is active. The effects still in its
/// outbox (a run's branch to delete and its CI to cancel, a draft pull request to close, the
/// last comment or status of a pull request) are carried out first: deleted with the queue,
/// they would leave branches, CI and pull requests behind (a `merge-queue` status pending on
/// a head for good). While the Git host fails one for now, or time runs out, the queue is not
/// deleted (503, to be tried again); one the host refuses for good is logged and dropped.
pub async fn delete(app: &App, org: &OrgId, id: &QueueId) -> Result<(), ServiceError> {
    let deadline = contention_deadline();
    let mut retry = Retry::until(deadline);
    loop {
        let attempt = Instant::now();
        let snapshot = drive::read(app, org, id).await?;
        if snapshot.entries.is_empty() {
            finish_effects(app, &snapshot, deadline).await?;
        }
        match app.store.delete_queue(&snapshot).await {
            Ok(()) => return Ok(()),
            Err(StoreError::NotEmpty) => return Err(not_empty(&snapshot)),
            Err(StoreError::Conflict) if retry.wait(attempt.elapsed()).await => {}
            Err(StoreError::NotFound) => return Err(DomainError::queue_not_found().into()),
            Err(e @ StoreError::Unavailable { .. }) => return gone_after(app, id, e).await,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Carries out the effects left in the outbox of a queue about to be deleted, in order, until
/// `deadline`. One the host refuses for good is logged; one that failed for now, or time
/// running out, makes the delete unavailable (it is tried again whole, and effects already
/// carried out are repeated harmlessly). The work of a run no longer in the snapshot (a test
/// branch whose creation waited to be tried again when its pull request was cancelled) is
/// not done: its branch is deleted instead, as the tick does.
async fn finish_effects(
    app: &App,
    snapshot: &QueueSnapshot,
    deadline: Instant,
) -> Result<(), ServiceError> {
    let Ok(host) = app.host() else {
        return Ok(());
    };
    for (done, pending) in snapshot.outbox.iter().enumerate() {
        if Instant::now() >= deadline {
            let left = snapshot.outbox.len() - done;
            return Err(not_yet(format!("{left} effects left undone: time is up")));
        }
        let Some(pending) = still_to_do(snapshot, pending) else {
            continue;
        };
        let cut = Some(deadline + drive::EFFECT_OVERRUN);
        match effects::execute(host, &snapshot.queue, &pending, cut).await {
            Event::EffectFailed {
                error,
                permanent: true,
                ..
            } => {
                let effect = &pending.id;
                tracing::warn!(%effect, error, "an effect of a deleted queue was refused");
            }
            Event::EffectFailed { error, .. } => return Err(not_yet(error)),
            _ => {}
        }
    }
    Ok(())
}

/// What an effect left in the outbox still comes to: itself, unless it is the work of a run
/// gone from the snapshot or over ([`mq_core::effects::Effect::work_of_run`]).
fn still_to_do(snapshot: &QueueSnapshot, pending: &PendingEffect) -> Option<PendingEffect> {
    let stale = pending
        .effect
        .work_of_run()
        .is_some_and(|run| !snapshot.run_in_progress(run));
    if !stale {
        return Some(pending.clone());
    }
    let effect = pending.effect.clone().once_its_run_is_gone()?;
    Some(PendingEffect {
        effect,
        ..pending.clone()
    })
}

/// The delete waits: the Git host did not carry out the queue's last effects yet.
fn not_yet(message: String) -> ServiceError {
    let message = format!("a queue about to be deleted: {message}");
    HostError::Transient {
        message,
        retry_after: None,
    }
    .into()
}

/// After a delete the store did not answer (it may have happened): the queue is deleted if
/// it is gone now, and the answer is unknown (503) otherwise.
async fn gone_after(app: &App, id: &QueueId, error: StoreError) -> Result<(), ServiceError> {
    match app.store.load(id).await {
        Ok(None) => {
            tracing::warn!(%error, "the delete's answer was lost; the queue is gone");
            Ok(())
        }
        _ => Err(error.into()),
    }
}

fn not_empty(snapshot: &QueueSnapshot) -> ServiceError {
    let n = snapshot.entries.len().max(1);
    DomainError::conflict(
        ErrorCode::QueueNotEmpty,
        format!("the queue still has {n} pull request(s) enqueued; cancel or merge them first"),
    )
    .into()
}

/// The `getQueue` response: the queue and its non-terminal entries in queue order, those that
/// are stuck at `now` marked.
pub fn view_with_entries(snapshot: &QueueSnapshot, now: Timestamp) -> QueueWithEntries<'_> {
    let stuck = view::stuck_entries(snapshot, now);
    QueueWithEntries {
        queue: QueueView::from(&snapshot.queue),
        enqueued_pull_requests: view::queue_order(snapshot)
            .into_iter()
            .map(|e| EnqueuedPullRequest::of(e, stuck.contains(&e.pr)))
            .collect(),
    }
}
