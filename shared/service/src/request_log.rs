//! What the log of a request says about the queue it worked on. The HTTP edge opens a span
//! per request with an empty `queue` field and runs the request in [`scope`]; the service
//! records the queue it loads, once.

use mq_core::ids::QueueId;
use std::cell::Cell;
use std::future::Future;

tokio::task_local! {
    /// Whether the request's span already names its queue.
    static QUEUE_RECORDED: Cell<bool>;
}

/// Runs a request's work so that [`record_queue`] records at most one queue in its span.
pub async fn scope<F: Future>(work: F) -> F::Output {
    QUEUE_RECORDED.scope(Cell::new(false), work).await
}

/// Records the queue a request works on in the current span's `queue` field (once per
/// request; outside [`scope`], every time).
pub fn record_queue(queue: &QueueId) {
    let first = QUEUE_RECORDED
        .try_with(|recorded| !recorded.replace(true))
        .unwrap_or(true);
    if first {
        tracing::Span::current().record("queue", queue.as_str());
    }
}
