//! `POST /v1/getMergeQueueTestingDetails`: a test run of a queue, in progress or finished.

use lambda_http::{Body, Request, Response};
use mq_api::body::parse_json;
use mq_api::service::pull_requests;
use mq_api::wire::TestingDetailsRequest;
use mq_api::{App, http};

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    mq_api::serve(
        app,
        req,
        "getMergeQueueTestingDetails",
        |caller, req| async move {
            let body: TestingDetailsRequest = parse_json(&req)?;
            let (target, run_id) = body.target()?;
            let details =
                pull_requests::testing_details(app, &caller.org, &target, &run_id).await?;
            Ok(http::ok(&details))
        },
    )
    .await
}
