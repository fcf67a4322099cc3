//! The imperative shell around a queue: load the snapshot the caller may see, apply a pure
//! step, commit with the version check, retry when someone else committed first.

use super::owners;
use crate::app::App;
use crate::error::ApiError;
use mq_core::DomainError;
use mq_core::engine::Transition;
use mq_core::entry::UploadedTargets;
use mq_core::ids::{OrgId, PrNumber, QueueId};
use mq_core::snapshot::{Commit, QueueSnapshot};
use mq_core::time::Timestamp;
use mq_store::StoreError;
use std::time::Duration;

/// Attempts before a contended commit gives up with 503.
pub const MAX_COMMIT_ATTEMPTS: u32 = 12;

/// Who acts on a queue: a caller of the API (who must own it), or the service itself (the
/// tick, the result of an effect), or the service on behalf of the organisation owning a
/// repository (a webhook delivery: it reaches only that organisation's queues).
#[derive(Debug, Clone, Copy)]
pub enum Actor<'a> {
    Org(&'a OrgId),
    Service,
    ServiceFor(&'a OrgId),
}

/// The queue, if `org` owns its repository (else 404 `REPOSITORY_NOT_FOUND`) and the queue
/// exists and belongs to `org` (else 404 `QUEUE_NOT_FOUND`); never revealing which.
pub async fn load_owned(app: &App, org: &OrgId, id: &QueueId) -> Result<QueueSnapshot, ApiError> {
    load_for(app, Actor::Org(org), id).await
}

/// The queue as `actor` may see it; 404 when it does not exist or belongs to someone else.
/// An organisation's ownership of the repository is checked as the queue is read.
pub async fn load_for(
    app: &App,
    actor: Actor<'_>,
    id: &QueueId,
) -> Result<QueueSnapshot, ApiError> {
    crate::endpoint::record_queue(id);
    let loaded = match actor {
        Actor::Org(org) => {
            let (owned, loaded) =
                tokio::join!(owners::check_queue(app, org, id), app.store.load(id));
            owned?;
            loaded?
        }
        Actor::Service | Actor::ServiceFor(_) => app.store.load(id).await?,
    };
    match (loaded, actor) {
        (Some(snapshot), Actor::Org(org) | Actor::ServiceFor(org))
            if &snapshot.queue.org == org =>
        {
            Ok(snapshot)
        }
        (Some(snapshot), Actor::Service) => Ok(snapshot),
        _ => Err(DomainError::queue_not_found().into()),
    }
}

/// A committed step: the snapshot it started from and what it did. `transition.snapshot` is
/// the queue as the store now holds it (version and order included): the next step on the
/// queue may start from it instead of reading it again.
#[derive(Debug, Clone)]
pub struct Applied {
    pub before: QueueSnapshot,
    pub transition: Transition,
}

/// What a commit loop starts from: a snapshot already read (the first attempt uses it; a
/// conflict means it was stale, and the loop reads the queue again), and impacted targets to
/// record in the same commit.
#[derive(Debug, Clone, Default)]
pub struct Start {
    pub snapshot: Option<QueueSnapshot>,
    pub uploaded: Vec<(PrNumber, UploadedTargets)>,
}

impl Start {
    /// Reads the queue first.
    pub fn fresh() -> Self {
        Self::default()
    }

    /// Starts from `snapshot`, just read or committed.
    pub fn from(snapshot: QueueSnapshot) -> Self {
        Self {
            snapshot: Some(snapshot),
            uploaded: Vec::new(),
        }
    }

    /// Records `uploaded` impacted targets with the commit (one is made even when the step
    /// changes nothing else).
    pub fn recording(mut self, uploaded: Vec<(PrNumber, UploadedTargets)>) -> Self {
        self.uploaded = uploaded;
        self
    }
}

/// Applies `step` to the caller's queue and commits the result atomically, retrying from a
/// fresh snapshot when the version moved. A domain refusal changes nothing.
pub async fn mutate<F>(
    app: &App,
    org: &OrgId,
    id: &QueueId,
    step: F,
    start: Start,
) -> Result<Applied, ApiError>
where
    F: FnMut(&QueueSnapshot, Timestamp) -> Result<Transition, DomainError>,
{
    mutate_as(app, Actor::Org(org), id, step, start).await
}

/// [`mutate`] for any actor.
pub async fn mutate_as<F>(
    app: &App,
    actor: Actor<'_>,
    id: &QueueId,
    mut step: F,
    start: Start,
) -> Result<Applied, ApiError>
where
    F: FnMut(&QueueSnapshot, Timestamp) -> Result<Transition, DomainError>,
{
    let mut known = start.snapshot;
    for attempt in 0..MAX_COMMIT_ATTEMPTS {
        let before = match known.take() {
            Some(snapshot) => visible_to(snapshot, actor, id)?,
            None => load_for(app, actor, id).await?,
        };
        let now = app.now();
        let mut transition = step(&before, now)?;
        let mut commit = Commit::between(&before, &transition, now);
        if commit.changes_nothing(&before.queue) && start.uploaded.is_empty() {
            // Nothing changed: no write, no version bump.
            return Ok(Applied { before, transition });
        }
        commit.uploaded_targets = start.uploaded.clone();
        commit.queue.record_commit(uuid::Uuid::new_v4().to_string());
        match committed(app, &commit).await {
            Ok(()) => {
                transition.snapshot.mark_committed(commit.queue);
                return Ok(Applied { before, transition });
            }
            Err(StoreError::Conflict) => backoff(attempt).await,
            Err(StoreError::NotFound) => return Err(DomainError::queue_not_found().into()),
            Err(e) => return Err(e.into()),
        }
    }
    Err(StoreError::Conflict.into())
}

/// Commits, and when the store gave no answer (it timed out or was unavailable, so the
/// write may or may not have happened), reads the queue again to find out: the commit
/// landed if the queue item remembers its id. Unknown if that read fails too.
async fn committed(app: &App, commit: &Commit) -> Result<(), StoreError> {
    let error = match app.store.commit(commit).await {
        Err(error @ StoreError::Unavailable { .. }) => error,
        other => return other,
    };
    let id = commit.queue.recent_commits.last().map(String::as_str);
    match app.store.load(&commit.queue.id).await {
        Ok(Some(now)) if id.is_some_and(|id| now.queue.has_commit(id)) => {
            tracing::warn!(%error, "the commit's answer was lost; it landed");
            Ok(())
        }
        Ok(Some(_)) => Err(error),
        Ok(None) => Err(StoreError::NotFound),
        Err(_) => Err(error),
    }
}

/// A snapshot already read, checked as [`load_for`] checks what it reads.
fn visible_to(
    snapshot: QueueSnapshot,
    actor: Actor<'_>,
    id: &QueueId,
) -> Result<QueueSnapshot, ApiError> {
    crate::endpoint::record_queue(id);
    let visible = &snapshot.queue.id == id
        && match actor {
            Actor::Org(org) | Actor::ServiceFor(org) => &snapshot.queue.org == org,
            Actor::Service => true,
        };
    if visible {
        Ok(snapshot)
    } else {
        Err(DomainError::queue_not_found().into())
    }
}

/// Sleeps 5 ms × 2^attempt (at most 250 ms), with full jitter.
pub async fn backoff(attempt: u32) {
    let ceiling = (5u64 << attempt.min(6)).min(250);
    let jitter = (uuid::Uuid::new_v4().as_u128() % u128::from(ceiling + 1)) as u64;
    tokio::time::sleep(Duration::from_millis(jitter)).await;
}
