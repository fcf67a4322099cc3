//! `getMergeQueueMetrics`: the figures of the caller's queues in the Prometheus text format;
//! `repo` (`owner/name`) with `repoHost` narrows them to one repository.

use super::Answered;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::http;
use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, RequestExt};
use mq_metrics::prometheus_text;
use mq_service::App;
use mq_service::metrics;
use mq_wire::metrics::MetricsQuery;

pub async fn get(app: &App, caller: Caller, req: Request) -> Answered {
    let params = req.query_string_parameters();
    let query = MetricsQuery::parse(&params.iter().collect::<Vec<_>>())?;
    let (figures, unreadable) = metrics::figures_of(app, &caller.org, query.repo.as_ref()).await?;
    let text = prometheus_text::render(&figures, &unreadable).map_err(ApiError::internal)?;
    Ok(http::with_content_type(
        StatusCode::OK,
        Body::Text(text),
        prometheus_text::CONTENT_TYPE,
    ))
}
