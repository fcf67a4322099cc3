//! The fault-injecting wrapper's [`ActivityStore`]: reads, which may be throttled or time out
//! like every other read.

use super::{Call, FaultyStore};
use crate::activity::ActivityStore;
use crate::port::StoreResult;
use async_trait::async_trait;
use mq_core::entry::Entry;
use mq_core::ids::QueueId;
use mq_core::metrics::Window;
use mq_core::run::TestRun;

#[async_trait]
impl ActivityStore for FaultyStore {
    async fn conclusions_between(
        &self,
        id: &QueueId,
        window: Window,
        limit: usize,
    ) -> StoreResult<Vec<Entry>> {
        self.inject(Call::Read).await?;
        self.inner.conclusions_between(id, window, limit).await
    }

    async fn finished_runs_between(
        &self,
        id: &QueueId,
        window: Window,
        limit: usize,
    ) -> StoreResult<Vec<TestRun>> {
        self.inject(Call::Read).await?;
        self.inner.finished_runs_between(id, window, limit).await
    }
}
