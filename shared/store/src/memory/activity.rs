//! The in-memory adapter's [`ActivityStore`]: the conclusions it logs whole, and the finished
//! runs it keeps by id, read through their log by finishing time.

use super::MemoryStore;
use crate::activity::ActivityStore;
use crate::port::StoreResult;
use async_trait::async_trait;
use mq_core::entry::Entry;
use mq_core::ids::QueueId;
use mq_core::run::TestRun;
use mq_core::time::Timestamp;

#[async_trait]
impl ActivityStore for MemoryStore {
    async fn conclusions_between(
        &self,
        id: &QueueId,
        from: Timestamp,
        to: Timestamp,
        limit: usize,
    ) -> StoreResult<Vec<Entry>> {
        if to <= from {
            return Ok(Vec::new());
        }
        let inner = self.lock();
        let Some(log) = inner.conclusions.get(id) else {
            return Ok(Vec::new());
        };
        Ok(log
            .range((from, String::new())..(to, String::new()))
            .rev()
            .take(limit)
            .map(|(_, entry)| entry.clone())
            .collect())
    }

    async fn finished_runs_between(
        &self,
        id: &QueueId,
        from: Timestamp,
        to: Timestamp,
        limit: usize,
    ) -> StoreResult<Vec<TestRun>> {
        if to <= from {
            return Ok(Vec::new());
        }
        let inner = self.lock();
        let Some(history) = inner.history.get(id) else {
            return Ok(Vec::new());
        };
        Ok(history
            .finished_runs
            .range((from, String::new())..(to, String::new()))
            .rev()
            .filter_map(|((_, run_id), _)| inner.finished_runs.get(&(id.clone(), run_id.clone())))
            .take(limit)
            .cloned()
            .collect())
    }
}
