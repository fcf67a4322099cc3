//! `POST /v1/flaky-tests/list-unhealthy-tests`: a page of the repository's FLAKY or BROKEN tests.

use lambda_http::{Body, Request, Response};
use mq_api::body::parse_json;
use mq_api::service::test_health::lists;
use mq_api::wire::test_health::ListUnhealthyRequest;
use mq_api::{App, http};

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    mq_api::serve(
        app,
        req,
        "flaky-tests/list-unhealthy-tests",
        |caller, req| async move {
            let body: ListUnhealthyRequest = parse_json(&req)?;
            Ok(http::ok(&lists::unhealthy(app, &caller.org, &body).await?))
        },
    )
    .await
}
