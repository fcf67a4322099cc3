//! What the dashboard and the advice read of a queue's recent past, whole: the entries that concluded (with
//! their pull request and the reason) and the runs that finished (with what they tested and
//! their CI links). The metrics read projections of the same history (the queue store's
//! `concluded_between` and `runs_finished_between`); these read every attribute. Every
//! [`Store`](crate::Store) is one.
//!
//! Both adapters keep the same contract (`tests/contract/activity.rs`): history as the
//! commits recorded it, newest first (items of the same millisecond in no particular order),
//! at most `limit` items, nothing (and no request) when the window is empty or `limit` is 0.

use crate::error::StoreError;
use async_trait::async_trait;
use mq_core::entry::Entry;
use mq_core::ids::QueueId;
use mq_core::metrics::Window;
use mq_core::run::TestRun;

/// A queue's recent history, whole.
#[async_trait]
pub trait ActivityStore: Send + Sync {
    /// Entries of the queue concluded in `window`, as their conclusion left them, newest first,
    /// at most `limit`. On DynamoDB one `Query` of the conclusion log, read backwards.
    async fn conclusions_between(
        &self,
        id: &QueueId,
        window: Window,
        limit: usize,
    ) -> Result<Vec<Entry>, StoreError>;

    /// Runs of the queue finished in `window`, as last recorded, newest first, at most `limit`.
    /// On DynamoDB one `Query` of the finished-runs index, read backwards.
    async fn finished_runs_between(
        &self,
        id: &QueueId,
        window: Window,
        limit: usize,
    ) -> Result<Vec<TestRun>, StoreError>;
}
