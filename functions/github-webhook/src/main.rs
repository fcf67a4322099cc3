//! The GitHub webhook Lambda function.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    mq_api::lambda::run(github_webhook::handle).await
}
