//! The `flaky-tests/link-ticket` Lambda function: it serves its row of the route table
//! (`mq_api::routes`).

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    mq_api::lambda::run_route(&mq_api::routes::FLAKY_TESTS_LINK_TICKET).await
}
