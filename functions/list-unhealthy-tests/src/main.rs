//! The `flaky-tests/list-unhealthy-tests` Lambda function.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    mq_api::lambda::run(list_unhealthy_tests::handle).await
}
