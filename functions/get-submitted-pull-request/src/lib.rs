//! `POST /v1/getSubmittedPullRequest`: the state of a pull request's latest submission.

use lambda_http::{Body, Request, Response};
use mq_api::body::parse_json;
use mq_api::service::pull_requests;
use mq_api::wire::PrRequest;
use mq_api::{App, http};

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    mq_api::serve(
        app,
        req,
        "getSubmittedPullRequest",
        |caller, req| async move {
            let body: PrRequest = parse_json(&req)?;
            let (target, pr) = body.target()?;
            let view = pull_requests::submitted(app, &caller.org, &target.id(), pr).await?;
            Ok(http::ok(&view))
        },
    )
    .await
}
