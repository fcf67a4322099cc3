//! The `getMergeQueueMetrics` Lambda function.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    mq_api::lambda::run(get_merge_queue_metrics::handle).await
}
