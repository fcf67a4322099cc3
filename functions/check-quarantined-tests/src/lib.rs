//! `POST /v1/flaky-tests/check-quarantined`: CI sends its failed tests and learns which are
//! quarantined (when all are, it may pass).

use lambda_http::{Body, Request, Response};
use mq_api::body::parse_json;
use mq_api::service::test_health::quarantine;
use mq_api::wire::test_health::CheckQuarantinedRequest;
use mq_api::{App, http};

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    mq_api::serve(
        app,
        req,
        "flaky-tests/check-quarantined",
        |caller, req| async move {
            let body: CheckQuarantinedRequest = parse_json(&req)?;
            Ok(http::ok(&quarantine::check(app, &caller.org, &body).await?))
        },
    )
    .await
}
