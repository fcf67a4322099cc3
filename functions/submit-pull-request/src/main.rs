//! The `submitPullRequest` Lambda function.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    mq_api::lambda::run(submit_pull_request::handle).await
}
