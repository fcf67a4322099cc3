//! The DynamoDB adapter's [`ActivityStore`]: the conclusion log (`DONE#<ms>#<entry id>` items
//! of the PullRequests table) and the finished runs (the TestRuns table's `finished-index`),
//! each read backwards from the end of the window, every attribute.

use super::DynamoStore;
use super::codec::{from_items, s};
use super::keys::{PK, SK, done_range};
use super::requests::query_up_to;
use crate::activity::ActivityStore;
use crate::port::StoreResult;
use async_trait::async_trait;
use mq_core::entry::Entry;
use mq_core::ids::QueueId;
use mq_core::run::TestRun;
use mq_core::time::Timestamp;

#[async_trait]
impl ActivityStore for DynamoStore {
    async fn conclusions_between(
        &self,
        id: &QueueId,
        from: Timestamp,
        to: Timestamp,
        limit: usize,
    ) -> StoreResult<Vec<Entry>> {
        if to <= from || limit == 0 {
            return Ok(Vec::new());
        }
        let (lo, hi) = done_range(from, to);
        let query = self
            .client
            .query()
            .table_name(&self.tables.pull_requests)
            .consistent_read(true)
            .scan_index_forward(false)
            .key_condition_expression("#pk = :pk AND #sk BETWEEN :lo AND :hi")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_names("#sk", SK)
            .expression_attribute_values(":pk", s(id.as_str()))
            .expression_attribute_values(":lo", s(lo))
            .expression_attribute_values(":hi", s(hi));
        from_items(query_up_to(query, limit).await?)
    }

    async fn finished_runs_between(
        &self,
        id: &QueueId,
        from: Timestamp,
        to: Timestamp,
        limit: usize,
    ) -> StoreResult<Vec<TestRun>> {
        if to <= from || limit == 0 {
            return Ok(Vec::new());
        }
        let newest_first = self
            .finished_runs_query(id, from, to)
            .scan_index_forward(false);
        from_items(query_up_to(newest_first, limit).await?)
    }
}
