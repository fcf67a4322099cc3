//! `getQueueAdvice`: a queue's workload estimated from its history, and the settings the
//! simulator finds best for the caller's goal (docs/queue-semantics.md §13).

use super::Answered;
use crate::auth::Caller;
use crate::body::parse_json;
use crate::http;
use lambda_http::Request;
use mq_service::App;
use mq_service::advice::{self, AdviceRequest};
use mq_wire::advice::QueueAdviceRequest;

pub async fn get(app: &App, caller: Caller, req: Request) -> Answered {
    let body: QueueAdviceRequest = parse_json(&req)?;
    let id = body.target()?.id();
    let request = AdviceRequest {
        goal: body.goal()?,
        window_ms: body.window_ms()?,
    };
    let answer = advice::queue_advice(app, &caller.org, &id, request).await?;
    Ok(http::ok(&answer))
}
