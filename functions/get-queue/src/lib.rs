//! `POST /v1/getQueue`: the queue's state, configuration and enqueued pull requests, in queue order.

use lambda_http::{Body, Request, Response};
use mq_api::body::parse_json;
use mq_api::service::queues;
use mq_api::wire::QueueRequest;
use mq_api::{App, http};

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    mq_api::serve(app, req, "getQueue", |caller, req| async move {
        let body: QueueRequest = parse_json(&req)?;
        let snapshot = queues::get(app, &caller.org, &body.target()?.id()).await?;
        Ok(http::ok(&queues::view_with_entries(&snapshot, app.now())))
    })
    .await
}
