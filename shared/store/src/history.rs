//! A queue's history: what its commits kept of its past (the entries that concluded, the runs
//! that finished, the restarts), read by time window. The metrics read the last hour of it,
//! the dashboard the last hour or a page, the advisor a week. Every
//! [`QueueStore`](crate::QueueStore) is one.
//!
//! Both adapters keep the same contract (`tests/contract/history.rs`): history as the commits
//! recorded it, items whole (or, where asked for and in [`HistoryStore::history`], their
//! summaries); nothing (and no request) when the window is empty or `limit` is
//! 0; only the queue asked for.

use crate::error::StoreError;
use async_trait::async_trait;
use mq_core::entry::Entry;
use mq_core::history::{History, Restart};
use mq_core::ids::QueueId;
use mq_core::metrics::Window;
use mq_core::run::TestRun;

/// What a history read answers.
type HistoryResult<T> = Result<T, StoreError>;

/// A queue's history, by time window.
#[async_trait]
pub trait HistoryStore: Send + Sync {
    /// Entries of the queue concluded in `window`, as their conclusion left them, newest first
    /// (items of the same millisecond in no particular order), at most `limit`. On DynamoDB
    /// one `Query` of the conclusion log, read backwards (more pages beyond 1,000 items).
    async fn conclusions_between(
        &self,
        id: &QueueId,
        window: Window,
        limit: usize,
    ) -> HistoryResult<Vec<Entry>>;

    /// Runs of the queue finished in `window`, as last recorded, newest first, at most
    /// `limit`. On DynamoDB one `Query` of the finished-runs index, read backwards.
    async fn finished_runs_between(
        &self,
        id: &QueueId,
        window: Window,
        limit: usize,
    ) -> HistoryResult<Vec<TestRun>>;

    /// [`Self::conclusions_between`], each entry as its [`Entry::summary`]: a read of many
    /// entries (the advisor's window) costs a fraction of theirs. On DynamoDB the same query,
    /// of the summary's attributes only.
    async fn conclusion_summaries_between(
        &self,
        id: &QueueId,
        window: Window,
        limit: usize,
    ) -> HistoryResult<Vec<Entry>> {
        let whole = self.conclusions_between(id, window, limit).await?;
        Ok(whole.into_iter().map(Entry::summary).collect())
    }

    /// [`Self::finished_runs_between`], each run as its [`TestRun::summary`]: a read of many
    /// runs (the advisor's window) costs a fraction of theirs. On DynamoDB the same query, of
    /// the summary's attributes only.
    async fn finished_run_summaries_between(
        &self,
        id: &QueueId,
        window: Window,
        limit: usize,
    ) -> HistoryResult<Vec<TestRun>> {
        let whole = self.finished_runs_between(id, window, limit).await?;
        Ok(whole.into_iter().map(TestRun::summary).collect())
    }

    /// Restarts of the queue's entries recorded in `window`, oldest first, all of them.
    async fn restarts_between(&self, id: &QueueId, window: Window) -> HistoryResult<Vec<Restart>>;

    /// All of the queue's history in `window`, each entry and run as its summary (what the
    /// metrics and the queue page read, every scrape and every view), as the summary reads
    /// and [`Self::restarts_between`] give it (not one snapshot). The default sends the three
    /// reads at once.
    async fn history(&self, id: &QueueId, window: Window) -> HistoryResult<History> {
        let (concluded, finished_runs, restarts) = tokio::try_join!(
            self.conclusion_summaries_between(id, window, usize::MAX),
            self.finished_run_summaries_between(id, window, usize::MAX),
            self.restarts_between(id, window),
        )?;
        Ok(History {
            concluded,
            finished_runs,
            restarts,
        })
    }
}
