//! `GET /v1/getMergeQueueMetrics`: the figures of the caller's queues in the Prometheus text
//! format; `repo` (`owner/name`) with `repoHost` narrows them to one repository.

use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, RequestExt, Response};
use mq_api::service::metrics;
use mq_api::wire::metrics::MetricsQuery;
use mq_api::{ApiError, App, http};
use mq_metrics::prometheus_text;

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    mq_api::serve(app, req, "getMergeQueueMetrics", |caller, req| async move {
        let query = MetricsQuery::parse(&req.query_string_parameters())?;
        let figures = metrics::figures_of(app, &caller.org, query.repo.as_ref()).await?;
        let text = prometheus_text::render(&figures).map_err(ApiError::internal)?;
        Ok(http::with_content_type(
            StatusCode::OK,
            Body::Text(text),
            prometheus_text::CONTENT_TYPE,
        ))
    })
    .await
}
