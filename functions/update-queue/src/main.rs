//! The `updateQueue` Lambda function. It holds no Git host credentials: what an update sets
//! off on the Git host (test branches once a paused queue resumes, say) is carried out by the
//! tick, within a minute.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    mq_api::lambda::run(update_queue::handle).await
}
