//! The DynamoDB adapter's [`HistoryStore`]: the conclusion log (`DONE#<ms>#<entry id>` items
//! of the PullRequests table) and the finished runs (the TestRuns table's `finished-index`),
//! each read backwards from the end of the window, every attribute; the restarts
//! (`RESTART#<ms>#…` items of the PullRequests table), read forwards.

use super::DynamoStore;
use super::codec::from_items;
use super::keys::{done_range, restart_range};
use super::requests::{query_all, query_up_to};
use crate::history::HistoryStore;
use crate::port::StoreResult;
use async_trait::async_trait;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use mq_core::entry::Entry;
use mq_core::history::Restart;
use mq_core::ids::QueueId;
use mq_core::metrics::Window;
use mq_core::run::TestRun;
use serde::de::DeserializeOwned;

#[async_trait]
impl HistoryStore for DynamoStore {
    async fn conclusions_between(
        &self,
        id: &QueueId,
        window: Window,
        limit: usize,
    ) -> StoreResult<Vec<Entry>> {
        let query = self.pull_requests_between(id, done_range(window));
        read_newest(window, limit, query).await
    }

    async fn finished_runs_between(
        &self,
        id: &QueueId,
        window: Window,
        limit: usize,
    ) -> StoreResult<Vec<TestRun>> {
        let query = self.finished_runs_query(id, window);
        read_newest(window, limit, query).await
    }

    async fn restarts_between(&self, id: &QueueId, window: Window) -> StoreResult<Vec<Restart>> {
        if window.to <= window.from {
            return Ok(Vec::new());
        }
        let query = self.pull_requests_between(id, restart_range(window));
        from_items(query_all(query).await?)
    }
}

/// The decoded items of a history query over `window`, read backwards: newest first, at most
/// `limit`; nothing (and no request) when the window is empty or `limit` is 0.
async fn read_newest<T: DeserializeOwned>(
    window: Window,
    limit: usize,
    query: QueryFluentBuilder,
) -> StoreResult<Vec<T>> {
    if window.to <= window.from || limit == 0 {
        return Ok(Vec::new());
    }
    from_items(query_up_to(query.scan_index_forward(false), limit).await?)
}
