//! `POST /v1/setImpactedTargets`: the targets a pull request's head impacts (parallel queues).

use lambda_http::{Body, Request, Response};
use mq_api::body::parse_json;
use mq_api::service::pull_requests;
use mq_api::wire::ImpactedTargetsRequest;
use mq_api::{App, http};

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    mq_api::serve(app, req, "setImpactedTargets", |caller, req| async move {
        let body: ImpactedTargetsRequest = parse_json(&req)?;
        let upload = body.upload()?;
        pull_requests::set_impacted_targets(app, &caller.org, &upload).await?;
        Ok(http::empty_ok())
    })
    .await
}
