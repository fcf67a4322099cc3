//! The `getSubmittedPullRequest` Lambda function.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    mq_api::lambda::run(get_submitted_pull_request::handle).await
}
