//! The tick Lambda function, invoked every minute by EventBridge Scheduler.

use lambda_runtime::{Error, LambdaEvent, service_fn};
use mq_api::App;
use mq_api::service::tick;
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), Error> {
    mq_api::logging::init_json();
    let app: &'static App = Box::leak(Box::new(App::from_env().await));
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        let owner = format!("tick-{}", event.context.request_id);
        let report = tick::run(app, &owner).await?;
        tracing::info!(
            queues = report.queues,
            worked = report.worked,
            failed = report.failed,
            "tick finished"
        );
        Ok::<_, Error>(
            json!({ "queues": report.queues, "worked": report.worked, "failed": report.failed }),
        )
    }))
    .await
}
