//! `POST /v1/flaky-tests/list-quarantined-tests`: a page of the repository's quarantined tests.

use lambda_http::{Body, Request, Response};
use mq_api::body::parse_json;
use mq_api::service::test_health::lists;
use mq_api::wire::test_health::ListQuarantinedRequest;
use mq_api::{App, http};

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    mq_api::serve(
        app,
        req,
        "flaky-tests/list-quarantined-tests",
        |caller, req| async move {
            let body: ListQuarantinedRequest = parse_json(&req)?;
            Ok(http::ok(
                &lists::quarantined(app, &caller.org, &body).await?,
            ))
        },
    )
    .await
}
