//! The `cancelPullRequest` Lambda function.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    mq_api::lambda::run(cancel_pull_request::handle).await
}
