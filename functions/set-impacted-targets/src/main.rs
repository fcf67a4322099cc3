//! The `setImpactedTargets` Lambda function.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    mq_api::lambda::run(set_impacted_targets::handle).await
}
