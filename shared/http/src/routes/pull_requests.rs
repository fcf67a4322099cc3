//! The pull request endpoints: submit, cancel, restart, impacted targets, and reading a
//! submission or a test run.

use super::Answered;
use crate::auth::Caller;
use crate::body::parse_json;
use crate::http;
use lambda_http::Request;
use mq_service::App;
use mq_service::pull_requests;
use mq_wire::{ImpactedTargetsRequest, PrRequest, SubmitRequest, TestingDetailsRequest};

/// `submitPullRequest`: submits a pull request to a queue (or updates the priority of its
/// active entry).
pub async fn submit(app: &App, caller: Caller, req: Request) -> Answered {
    let body: SubmitRequest = parse_json(&req)?;
    let submission = body.submission()?;
    pull_requests::submit(app, &caller.org, &submission).await?;
    Ok(http::empty_ok())
}

/// `cancelPullRequest`: removes a pull request from a queue.
pub async fn cancel(app: &App, caller: Caller, req: Request) -> Answered {
    let body: PrRequest = parse_json(&req)?;
    let (target, pr) = body.target()?;
    pull_requests::cancel(app, &caller.org, &target.id(), pr).await?;
    Ok(http::empty_ok())
}

/// `restartTestsOnPullRequest`: re-runs the tests of a pull request's group in place.
pub async fn restart(app: &App, caller: Caller, req: Request) -> Answered {
    let body: PrRequest = parse_json(&req)?;
    let (target, pr) = body.target()?;
    pull_requests::restart(app, &caller.org, &target.id(), pr).await?;
    Ok(http::empty_ok())
}

/// `getSubmittedPullRequest`: the state of a pull request's latest submission.
pub async fn submitted(app: &App, caller: Caller, req: Request) -> Answered {
    let body: PrRequest = parse_json(&req)?;
    let (target, pr) = body.target()?;
    let view = pull_requests::submitted(app, &caller.org, &target.id(), pr).await?;
    Ok(http::ok(&view))
}

/// `setImpactedTargets`: the targets a pull request's head impacts (parallel queues).
pub async fn set_impacted_targets(app: &App, caller: Caller, req: Request) -> Answered {
    let body: ImpactedTargetsRequest = parse_json(&req)?;
    let upload = body.upload()?;
    pull_requests::set_impacted_targets(app, &caller.org, &upload).await?;
    Ok(http::empty_ok())
}

/// `getMergeQueueTestingDetails`: a test run of a queue, in progress or finished.
pub async fn testing_details(app: &App, caller: Caller, req: Request) -> Answered {
    let body: TestingDetailsRequest = parse_json(&req)?;
    let (target, run_id) = body.target()?;
    let details = pull_requests::testing_details(app, &caller.org, &target, &run_id).await?;
    Ok(http::ok(&details))
}
