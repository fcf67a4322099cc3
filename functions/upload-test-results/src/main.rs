//! The `flaky-tests/upload` Lambda function.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    mq_api::lambda::run(upload_test_results::handle).await
}
