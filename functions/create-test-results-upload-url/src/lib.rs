//! `POST /v1/flaky-tests/upload-url`: registers an upload and returns a presigned S3 URL to PUT
//! a large report to; the `ingest-test-results-object` function ingests it when it lands.

use lambda_http::{Body, Request, Response};
use mq_api::body::parse_json;
use mq_api::service::test_health::objects;
use mq_api::wire::test_health::UploadFields;
use mq_api::{App, http};

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    mq_api::serve(
        app,
        req,
        "flaky-tests/upload-url",
        |caller, req| async move {
            let body: UploadFields = parse_json(&req)?;
            Ok(http::ok(&objects::start(app, &caller.org, &body).await?))
        },
    )
    .await
}
