//! The `restartTestsOnPullRequest` Lambda function.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    mq_api::lambda::run_with(
        mq_api::lambda::github,
        restart_tests_on_pull_request::handle,
    )
    .await
}
