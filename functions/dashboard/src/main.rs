//! The `dashboard` Lambda function: the pages served at `GET /` and `GET /ui/{file}`
//! (`mq_http::pages`), with no store and no token.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    mq_lambda::run_pages().await
}
