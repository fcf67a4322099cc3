//! The `ingest-test-results-object` Lambda function (S3 ObjectCreated events).

use aws_lambda_events::event::s3::S3Event;
use lambda_runtime::{LambdaEvent, service_fn};
use mq_service::App;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    mq_lambda::logging::init_json();
    let app: &'static App = mq_lambda::lambda::deployed_app(mq_lambda::lambda::uploads).await;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<S3Event>| async move {
        let outcomes = ingest_test_results_object::handle(app, event.payload)
            .await
            .map_err(|e| e.to_string())?;
        Ok::<_, lambda_runtime::Error>(outcomes.len())
    }))
    .await
}
