//! The `getMergeQueueTestingDetails` Lambda function: it serves its row of the route table
//! (`mq_api::routes`).

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    mq_api::lambda::run_route(&mq_api::routes::GET_MERGE_QUEUE_TESTING_DETAILS).await
}
