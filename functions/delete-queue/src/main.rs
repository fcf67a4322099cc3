//! The `deleteQueue` Lambda function.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    mq_api::lambda::run(delete_queue::handle).await
}
