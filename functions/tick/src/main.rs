//! The tick Lambda function, invoked every minute by EventBridge Scheduler. After the tick it
//! prints every queue's gauges in CloudWatch Embedded Metric Format (one JSON object per line
//! on standard output), for CloudWatch alarms and dashboards.

use lambda_runtime::{Error, LambdaEvent, service_fn};
use mq_core::time::Timestamp;
use mq_service::App;
use mq_service::tick::{TickReport, run as run_tick};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), Error> {
    mq_lambda::logging::init_json();
    let app: &'static App = mq_lambda::lambda::deployed_app(mq_lambda::lambda::github).await;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Value>| async move {
        let owner = format!("tick-{}", event.context.request_id);
        let started = app.now();
        let report = run_tick(app, &owner).await?;
        tracing::info!(
            queues = report.queues,
            worked = report.worked,
            failed = report.failed,
            not_reached = report.not_reached,
            recovered_tests = report.recovered_tests,
            tuned = report.tuned.as_ref().map(|id| id.as_str()),
            "tick finished"
        );
        emit_metrics(app, &report, started).await;
        Ok::<_, Error>(json!({
            "queues": report.queues,
            "worked": report.worked,
            "failed": report.failed,
            "notReached": report.not_reached,
        }))
    }))
    .await
}

/// Prints the gauges of every queue the tick worked on, as EMF lines on standard output (not
/// through the JSON logger, which would hide them from CloudWatch), stamped with the tick's
/// start.
async fn emit_metrics(app: &App, report: &TickReport, started: Timestamp) {
    for line in tick::emf_lines_of(app, &report.worked_queues, started).await {
        println!("{line}");
    }
}
