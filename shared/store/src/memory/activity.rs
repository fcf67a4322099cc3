//! The in-memory adapter's [`ActivityStore`]: the conclusions it logs whole, and the finished
//! runs it keeps by id, read through their log by finishing time.

use super::MemoryStore;
use crate::activity::ActivityStore;
use crate::port::StoreResult;
use async_trait::async_trait;
use mq_core::entry::Entry;
use mq_core::ids::QueueId;
use mq_core::metrics::Window;
use mq_core::run::TestRun;
use mq_core::time::Timestamp;
use std::collections::BTreeMap;

#[async_trait]
impl ActivityStore for MemoryStore {
    async fn conclusions_between(
        &self,
        id: &QueueId,
        window: Window,
        limit: usize,
    ) -> StoreResult<Vec<Entry>> {
        let inner = self.lock();
        let log = inner.conclusions.get(id);
        Ok(newest_between(log, window)
            .take(limit)
            .map(|(_, entry)| entry.clone())
            .collect())
    }

    async fn finished_runs_between(
        &self,
        id: &QueueId,
        window: Window,
        limit: usize,
    ) -> StoreResult<Vec<TestRun>> {
        let inner = self.lock();
        let log = inner.history.get(id).map(|h| &h.finished_runs);
        Ok(newest_between(log, window)
            .filter_map(|(run_id, _)| inner.finished_runs.get(&(id.clone(), run_id.clone())))
            .take(limit)
            .cloned()
            .collect())
    }
}

/// The records of a log by time and id whose time is in the window, newest first, each as
/// its id and value; none without a log or when the window is empty.
fn newest_between<V>(
    log: Option<&BTreeMap<(Timestamp, String), V>>,
    window: Window,
) -> impl Iterator<Item = (&String, &V)> {
    let Window { from, to } = window;
    log.filter(|_| from < to)
        .map(|log| log.range((from, String::new())..(to, String::new())).rev())
        .into_iter()
        .flatten()
        .map(|((_, id), value)| (id, value))
}
