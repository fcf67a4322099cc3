//! The read-only endpoints of the dashboard pages: the organisation's queues, one queue's
//! activity, one pull request's history.

use super::Answered;
use crate::auth::Caller;
use crate::body::parse_json;
use crate::http;
use lambda_http::Request;
use mq_service::App;
use mq_service::dashboard;
use mq_wire::dashboard::ListQueuesRequest;
use mq_wire::{PrRequest, QueueRequest};

/// `listQueues`: every queue of the caller's organisation (or its queues on `repo`), with its
/// state, depth, runs in flight and last hour's conclusions.
pub async fn list_queues(app: &App, caller: Caller, req: Request) -> Answered {
    let body: ListQueuesRequest = parse_json(&req)?;
    let repo = body.repo()?;
    let list = dashboard::list_queues(app, &caller.org, repo.as_ref()).await?;
    Ok(http::ok(&list))
}

/// `getQueueActivity`: the line, the waiting pull requests with their estimates, the last
/// conclusions and the last hour's histograms of a queue.
pub async fn queue_activity(app: &App, caller: Caller, req: Request) -> Answered {
    let body: QueueRequest = parse_json(&req)?;
    let activity = dashboard::queue_activity(app, &caller.org, &body.target()?.id()).await?;
    Ok(http::ok(&activity))
}

/// `getPullRequestHistory`: a pull request's latest submission, its state history and the
/// runs that tested it.
pub async fn pull_request_history(app: &App, caller: Caller, req: Request) -> Answered {
    let body: PrRequest = parse_json(&req)?;
    let (target, pr) = body.target()?;
    let history = dashboard::pull_request_history(app, &caller.org, &target.id(), pr).await?;
    Ok(http::ok(&history))
}
