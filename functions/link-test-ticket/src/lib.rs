//! `POST /v1/flaky-tests/link-ticket`: links a ticket URL to a test case (empty: unlinks).

use lambda_http::{Body, Request, Response};
use mq_api::body::parse_json;
use mq_api::service::test_health::quarantine;
use mq_api::wire::test_health::LinkTicketRequest;
use mq_api::{App, http};

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    mq_api::serve(
        app,
        req,
        "flaky-tests/link-ticket",
        |caller, req| async move {
            let body: LinkTicketRequest = parse_json(&req)?;
            Ok(http::ok(
                &quarantine::link_ticket(app, &caller.org, &body).await?,
            ))
        },
    )
    .await
}
