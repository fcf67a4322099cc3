//! The `flaky-tests/list-quarantined-tests` Lambda function.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    mq_api::lambda::run(list_quarantined_tests::handle).await
}
