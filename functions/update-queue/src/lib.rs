//! `POST /v1/updateQueue`: partially updates a queue's settings, state and mode.

use lambda_http::{Body, Request, Response};
use mq_api::body::parse_json;
use mq_api::service::queues;
use mq_api::wire::{QueueSettingsRequest, QueueView};
use mq_api::{App, http};

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    mq_api::serve(app, req, "updateQueue", |caller, req| async move {
        let body: QueueSettingsRequest = parse_json(&req)?;
        let id = body.target()?.id();
        let patch = body.patch()?;
        let queue = queues::update(app, &caller.org, &id, &patch).await?;
        Ok(http::ok(&QueueView::from(&queue)))
    })
    .await
}
