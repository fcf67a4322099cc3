//! The `flaky-tests/link-ticket` Lambda function.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    mq_api::lambda::run(link_test_ticket::handle).await
}
