//! `webhooks/github`: GitHub's deliveries. The signature (`X-Hub-Signature-256`, HMAC-SHA256
//! of the raw body with the webhook secret) authenticates them, checked before the body is
//! read; a bad one gets 401 and changes nothing.

use super::Answered;
use crate::body::MAX_BODY_BYTES;
use crate::error::ApiError;
use crate::http;
use lambda_http::Request;
use lambda_http::http::StatusCode;
use mq_githost::webhook::{EVENT_HEADER, SIGNATURE_HEADER, WebhookError};
use mq_service::App;
use mq_service::webhook;

pub async fn github(app: &App, req: Request) -> Answered {
    let receiver = app.webhook.as_ref().ok_or_else(not_configured)?;
    let body = req.body().as_ref();
    if body.len() > MAX_BODY_BYTES {
        return Err(ApiError::payload_too_large(MAX_BODY_BYTES));
    }
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    let event = header(EVENT_HEADER).unwrap_or_default();
    let fact = receiver
        .receive_or_read_again(event, header(SIGNATURE_HEADER), body)
        .await
        .map_err(refusal)?;
    let account = mq_githost::webhook::owner_account(body);
    let delivered = webhook::deliver(app, fact, account).await?;
    tracing::info!(event, queues = delivered.queues.len(), "delivery applied");
    Ok(http::empty_ok())
}

/// A deployment without a webhook secret takes no deliveries: 404, as for an unknown path.
fn not_configured() -> ApiError {
    ApiError::not_found(
        "WEBHOOKS_NOT_CONFIGURED",
        "this deployment has no webhook secret; it takes no deliveries",
    )
}

fn refusal(e: WebhookError) -> ApiError {
    match e.http_status() {
        401 => ApiError::new(StatusCode::UNAUTHORIZED, "BAD_SIGNATURE", e.to_string()),
        400 => ApiError::bad_request(e.to_string()),
        _ => ApiError::internal(e),
    }
}
