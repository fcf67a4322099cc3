//! What the tick function prints after each tick: every worked queue's gauges in CloudWatch
//! Embedded Metric Format.

use mq_core::ids::QueueId;
use mq_service::App;
use mq_service::metrics;

/// The EMF lines (`mq_metrics::emf`) of the queues `ids` at the app's `now`, one JSON object
/// each. A queue that is gone has none; one that cannot be read is logged and left out (the
/// next tick emits it again).
pub async fn emf_lines_of(app: &App, ids: &[QueueId]) -> Vec<String> {
    let now = app.now();
    let store = app.store.as_ref();
    let mut lines = Vec::new();
    for id in ids {
        let figures = match store.load(id).await {
            Ok(Some(snapshot)) => metrics::figures_of_snapshot(store, snapshot, now)
                .await
                .map(Some),
            Ok(None) => Ok(None),
            Err(e) => Err(e),
        };
        match figures {
            Ok(Some(figures)) => lines.extend(mq_metrics::emf::emf_lines(&figures, now)),
            Ok(None) => {}
            Err(e) => tracing::warn!(queue = %id, error = %e, "metrics not emitted"),
        }
    }
    lines
}
