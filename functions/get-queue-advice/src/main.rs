//! The `getQueueAdvice` Lambda function: it serves its row of the route table (`mq_http::routes`).

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    mq_lambda::run_route(&mq_http::routes::GET_QUEUE_ADVICE).await
}
