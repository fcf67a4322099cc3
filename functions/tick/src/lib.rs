//! What the tick function prints after each tick: every worked queue's gauges in CloudWatch
//! Embedded Metric Format.

use futures_util::StreamExt;
use mq_core::ids::QueueId;
use mq_core::time::Timestamp;
use mq_service::App;
use mq_service::metrics;
use mq_service::tick::QUEUES_AT_ONCE;

/// The EMF lines (`mq_metrics::emf`) of the queues `ids` as they are at the app's `now`, one
/// JSON object each, in the order of `ids` (their figures read [`QUEUES_AT_ONCE`] queues at a
/// time, as the tick works them), stamped `at`: the tick's start, so that every tick's points
/// fall in the minute it was scheduled for. Stamped when printed, a tick that ran long would
/// leave a minute without a point, which the queue-depth alarm takes as not breaching. A queue
/// that is gone has none; one that cannot be read is logged and left out (the next tick emits
/// it again).
pub async fn emf_lines_of(app: &App, ids: &[QueueId], at: Timestamp) -> Vec<String> {
    let now = app.now();
    let store = app.store.as_ref();
    let figures = futures_util::stream::iter(ids)
        .map(|id| async move {
            let figures = match store.load(id).await {
                Ok(Some(snapshot)) => metrics::figures_of_snapshot(store, snapshot, now)
                    .await
                    .map(Some),
                Ok(None) => Ok(None),
                Err(e) => Err(e),
            };
            (id, figures)
        })
        .buffered(QUEUES_AT_ONCE)
        .collect::<Vec<_>>()
        .await;
    let mut lines = Vec::new();
    for (id, figures) in figures {
        match figures {
            Ok(Some(figures)) => lines.extend(mq_metrics::emf::emf_lines(&figures, at)),
            Ok(None) => {}
            Err(e) => tracing::warn!(queue = %id, error = %e, "metrics not emitted"),
        }
    }
    lines
}
