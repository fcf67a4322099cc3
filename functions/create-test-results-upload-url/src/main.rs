//! The `flaky-tests/upload-url` Lambda function.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    mq_api::lambda::run_with(
        mq_api::lambda::uploads,
        create_test_results_upload_url::handle,
    )
    .await
}
