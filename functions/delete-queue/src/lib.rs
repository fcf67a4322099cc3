//! `POST /v1/deleteQueue`: deletes a queue that has no active pull requests.

use lambda_http::{Body, Request, Response};
use mq_api::body::parse_json;
use mq_api::service::queues;
use mq_api::wire::QueueRequest;
use mq_api::{App, http};

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    mq_api::serve(app, req, "deleteQueue", |caller, req| async move {
        let body: QueueRequest = parse_json(&req)?;
        queues::delete(app, &caller.org, &body.target()?.id()).await?;
        Ok(http::empty_ok())
    })
    .await
}
