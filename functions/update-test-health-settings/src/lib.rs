//! `POST /v1/flaky-tests/update-settings`: quarantine switches, classification thresholds and
//! per-test quarantine overrides of a repository.

use lambda_http::{Body, Request, Response};
use mq_api::body::parse_json;
use mq_api::service::test_health::quarantine;
use mq_api::wire::test_health::UpdateSettingsRequest;
use mq_api::{App, http};

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    mq_api::serve(
        app,
        req,
        "flaky-tests/update-settings",
        |caller, req| async move {
            let body: UpdateSettingsRequest = parse_json(&req)?;
            Ok(http::ok(
                &quarantine::update_settings(app, &caller.org, &body).await?,
            ))
        },
    )
    .await
}
