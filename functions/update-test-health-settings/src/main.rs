//! The `flaky-tests/update-settings` Lambda function.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    mq_api::lambda::run(update_test_health_settings::handle).await
}
