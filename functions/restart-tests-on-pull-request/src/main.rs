//! The `restartTestsOnPullRequest` Lambda function.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    mq_api::lambda::run(restart_tests_on_pull_request::handle).await
}
