//! Queue administration: create, read, update, delete.

use super::shell::{MAX_COMMIT_ATTEMPTS, backoff, load_owned, mutate};
use crate::app::App;
use crate::error::ApiError;
use crate::wire::{EnqueuedPullRequest, QueueTarget, QueueView, QueueWithEntries};
use mq_core::engine::view::queue_order;
use mq_core::engine::{Ctx, Event, step};
use mq_core::error::{DomainError, ErrorCode};
use mq_core::ids::{OrgId, QueueId};
use mq_core::settings::SettingsPatch;
use mq_core::snapshot::{Queue, QueueSnapshot};
use mq_store::StoreError;

/// Creates a queue for the caller's organisation; 409 when one exists for the branch.
pub async fn create(
    app: &App,
    org: &OrgId,
    target: QueueTarget,
    patch: &SettingsPatch,
) -> Result<Queue, ApiError> {
    let (config, state) = patch.initial_config()?;
    let queue = Queue::new(
        org.clone(),
        target.repo,
        target.branch,
        config,
        state,
        app.now(),
    );
    crate::endpoint::record_queue(&queue.id);
    match app.store.create_queue(&queue).await {
        Ok(()) => Ok(queue),
        Err(StoreError::AlreadyExists) => Err(DomainError::conflict(
            ErrorCode::QueueAlreadyExists,
            format!(
                "a queue already exists for branch {} of {}",
                queue.branch, queue.repo
            ),
        )
        .into()),
        Err(e) => Err(e.into()),
    }
}

/// The queue with its live entries.
pub async fn get(app: &App, org: &OrgId, id: &QueueId) -> Result<QueueSnapshot, ApiError> {
    load_owned(app, org, id).await
}

/// Applies a partial update: settings, requested state, mode (SEMANTICS §8).
pub async fn update(
    app: &App,
    org: &OrgId,
    id: &QueueId,
    patch: &SettingsPatch,
) -> Result<Queue, ApiError> {
    let event = Event::UpdateSettings {
        patch: patch.clone(),
    };
    let applied = mutate(app, org, id, |snapshot, now| {
        let seed = uuid::Uuid::new_v4().as_u64_pair().0;
        step(snapshot, &event, Ctx { now, seed })
    })
    .await?;
    Ok(applied.transition.snapshot.queue)
}

/// Deletes a queue with no active entries; 409 while any is active.
pub async fn delete(app: &App, org: &OrgId, id: &QueueId) -> Result<(), ApiError> {
    for attempt in 0..MAX_COMMIT_ATTEMPTS {
        let snapshot = load_owned(app, org, id).await?;
        match app.store.delete_queue(&snapshot).await {
            Ok(()) => return Ok(()),
            Err(StoreError::NotEmpty) => return Err(not_empty(&snapshot)),
            Err(StoreError::Conflict) => backoff(attempt).await,
            Err(StoreError::NotFound) => return Err(DomainError::queue_not_found().into()),
            Err(e) => return Err(e.into()),
        }
    }
    Err(StoreError::Conflict.into())
}

fn not_empty(snapshot: &QueueSnapshot) -> ApiError {
    let n = snapshot.entries.len().max(1);
    DomainError::conflict(
        ErrorCode::QueueNotEmpty,
        format!("the queue still has {n} pull request(s) enqueued; cancel or merge them first"),
    )
    .into()
}

/// The `getQueue` response: the queue and its non-terminal entries in queue order.
pub fn view_with_entries(snapshot: &QueueSnapshot) -> QueueWithEntries {
    QueueWithEntries {
        queue: QueueView::from(&snapshot.queue),
        enqueued_pull_requests: queue_order(snapshot)
            .into_iter()
            .map(EnqueuedPullRequest::from)
            .collect(),
    }
}
