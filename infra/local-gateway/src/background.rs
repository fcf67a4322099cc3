//! What the deployment's schedule and webhooks do, done in process: the tick every few
//! seconds, and the local CI's statuses delivered as they are recorded.

use mq_core::engine::Event;
use mq_githost::local::StatusRecorded;
use mq_service::App;
use mq_service::{tick, webhook};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

/// The lease owner name of the in-process tick.
pub const TICK_OWNER: &str = "local-gateway";

/// Runs the tick every `every` until the task is aborted.
pub fn spawn_tick(app: Arc<App>, every: Duration) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut interval = tokio::time::interval(every);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            interval.tick().await;
            match tick::run(&app, TICK_OWNER).await {
                Ok(report) if report.worked > 0 => {
                    tracing::debug!(worked = report.worked, "tick")
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "tick failed"),
            }
        }
    })
}

/// Delivers every status the local Git host records (the local CI's results) to the queues
/// testing that commit, as a webhook would.
pub fn spawn_status_listener(
    app: Arc<App>,
    mut statuses: broadcast::Receiver<StatusRecorded>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let recorded = match statuses.recv().await {
                Ok(recorded) => recorded,
                // Missed statuses are read by the tick from the repository.
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return,
            };
            let event = Event::StatusReported {
                sha: recorded.sha.clone(),
                status: recorded.status,
            };
            if let Err(e) = webhook::to_runs_of(&app, &recorded.sha, event).await {
                tracing::warn!(error = %e, "status not delivered; the tick reads it");
            }
        }
    })
}
