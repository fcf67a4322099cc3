//! `POST /v1/createQueue`: creates a queue for a branch of a repository, with optional settings.

use lambda_http::{Body, Request, Response};
use mq_api::body::parse_json;
use mq_api::service::queues;
use mq_api::wire::{QueueSettingsRequest, QueueView};
use mq_api::{App, http};

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    mq_api::serve(app, req, "createQueue", |caller, req| async move {
        let body: QueueSettingsRequest = parse_json(&req)?;
        let target = body.target()?;
        let patch = body.patch()?;
        let queue = queues::create(app, &caller.org, target, &patch).await?;
        Ok(http::ok(&QueueView::from(&queue)))
    })
    .await
}
