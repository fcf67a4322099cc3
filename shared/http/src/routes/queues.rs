//! The queue endpoints: create, read, update and delete a queue.

use super::Answered;
use crate::auth::Caller;
use crate::body::parse_json;
use crate::http;
use lambda_http::Request;
use mq_service::App;
use mq_service::queues;
use mq_wire::{QueueRequest, QueueSettingsRequest, QueueView};

/// `createQueue`: a queue for a branch of a repository, with optional settings.
pub async fn create(app: &App, caller: Caller, req: Request) -> Answered {
    let body: QueueSettingsRequest = parse_json(&req)?;
    let target = body.target()?;
    let patch = body.patch()?;
    let queue = queues::create(app, &caller.org, target, &patch).await?;
    Ok(http::ok(&QueueView::from(&queue)))
}

/// `getQueue`: the queue's state, configuration and enqueued pull requests, in queue order.
pub async fn get(app: &App, caller: Caller, req: Request) -> Answered {
    let body: QueueRequest = parse_json(&req)?;
    let snapshot = queues::get(app, &caller.org, &body.target()?.id()).await?;
    Ok(http::ok(&queues::view_with_entries(&snapshot, app.now())))
}

/// `updateQueue`: a partial update of the queue's settings, state and mode.
pub async fn update(app: &App, caller: Caller, req: Request) -> Answered {
    let body: QueueSettingsRequest = parse_json(&req)?;
    let id = body.target()?.id();
    let patch = body.patch()?;
    let queue = queues::update(app, &caller.org, &id, &patch).await?;
    Ok(http::ok(&QueueView::from(&queue)))
}

/// `deleteQueue`: deletes a queue that has no active pull requests.
pub async fn delete(app: &App, caller: Caller, req: Request) -> Answered {
    let body: QueueRequest = parse_json(&req)?;
    queues::delete(app, &caller.org, &body.target()?.id()).await?;
    Ok(http::empty_ok())
}
