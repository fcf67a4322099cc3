//! The `flaky-tests/check-quarantined` Lambda function.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    mq_api::lambda::run(check_quarantined_tests::handle).await
}
