//! `POST /v1/submitPullRequest`: submits a pull request to a queue (or updates the priority
//! of its active entry).

use lambda_http::{Body, Request, Response};
use mq_api::body::parse_json;
use mq_api::service::pull_requests;
use mq_api::wire::SubmitRequest;
use mq_api::{App, http};

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    mq_api::serve(app, req, "submitPullRequest", |caller, req| async move {
        let body: SubmitRequest = parse_json(&req)?;
        let submission = body.submission()?;
        pull_requests::submit(app, &caller.org, &submission).await?;
        Ok(http::empty_ok())
    })
    .await
}
