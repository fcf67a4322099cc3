//! The `setImpactedTargets` Lambda function.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    mq_api::lambda::run_with(mq_api::lambda::github, set_impacted_targets::handle).await
}
