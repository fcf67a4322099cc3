//! The in-memory adapter's [`HistoryStore`]: per queue, the entries that concluded and the runs
//! that finished, whole, and the restarts, each by time, as the DynamoDB adapter's sort keys
//! and index order them (a window is a range, not a scan).

use super::MemoryStore;
use crate::history::HistoryStore;
use crate::port::StoreResult;
use async_trait::async_trait;
use mq_core::entry::Entry;
use mq_core::history::{History, Restart};
use mq_core::ids::QueueId;
use mq_core::metrics::Window;
use mq_core::run::TestRun;
use mq_core::time::Timestamp;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Range;

/// A queue's history.
#[derive(Default)]
pub(super) struct QueueHistory {
    /// The entries concluded, by conclusion time and entry id.
    concluded: BTreeMap<(Timestamp, String), Entry>,
    /// The finished runs, as last recorded, by id.
    pub(super) runs: HashMap<String, TestRun>,
    /// The ids of the finished runs, by finishing time.
    finished: BTreeSet<(Timestamp, String)>,
    /// By time, entry id and the entry's counter afterwards.
    restarts: BTreeMap<(Timestamp, String, u32), Restart>,
}

impl QueueHistory {
    /// Keeps a concluded entry, at the time it concluded (`at` when it has none).
    pub(super) fn record_conclusion(&mut self, entry: &Entry, at: Timestamp) {
        let at = entry.concluded_at.unwrap_or(at);
        self.concluded.insert((at, entry.id.clone()), entry.clone());
    }

    /// Keeps a finished run, replacing an earlier record of it (and its place by time).
    pub(super) fn record_finished_run(&mut self, run: &TestRun) {
        let earlier = self.runs.insert(run.id.clone(), run.clone());
        if let Some(at) = earlier.and_then(|earlier| earlier.finished_at) {
            self.finished.remove(&(at, run.id.clone()));
        }
        if let Some(at) = run.finished_at {
            self.finished.insert((at, run.id.clone()));
        }
    }

    pub(super) fn record_restart(&mut self, restart: &Restart) {
        let key = (restart.at, restart.entry_id.clone(), restart.total);
        self.restarts.insert(key, restart.clone());
    }

    fn conclusions_in(&self, w: Window, limit: usize) -> Vec<Entry> {
        let newest = keys_in(w)
            .into_iter()
            .flat_map(|keys| self.concluded.range(keys).rev());
        newest.take(limit).map(|(_, entry)| entry.clone()).collect()
    }

    fn finished_in(&self, w: Window, limit: usize) -> Vec<TestRun> {
        let newest = keys_in(w)
            .into_iter()
            .flat_map(|keys| self.finished.range(keys).rev());
        let runs = newest.filter_map(|(_, id)| self.runs.get(id));
        runs.take(limit).cloned().collect()
    }

    fn restarts_in(&self, w: Window) -> Vec<Restart> {
        let from = (w.from, String::new(), 0);
        self.restarts
            .range(from..)
            .take_while(|((at, _, _), _)| *at < w.to)
            .map(|(_, restart)| restart.clone())
            .collect()
    }

    /// All of the window's history.
    pub(super) fn history_in(&self, w: Window) -> History {
        History {
            concluded: self.conclusions_in(w, usize::MAX),
            finished_runs: self.finished_in(w, usize::MAX),
            restarts: self.restarts_in(w),
        }
    }
}

/// The keys (a time and an id) whose time is in the window; none when the window is empty.
fn keys_in(w: Window) -> Option<Range<(Timestamp, String)>> {
    (w.from < w.to).then(|| (w.from, String::new())..(w.to, String::new()))
}

impl MemoryStore {
    /// What `read` takes of a queue's history; nothing for a queue without any.
    fn read_history<T: Default>(&self, id: &QueueId, read: impl Fn(&QueueHistory) -> T) -> T {
        self.lock().history.get(id).map_or_else(T::default, read)
    }
}

#[async_trait]
impl HistoryStore for MemoryStore {
    async fn conclusions_between(
        &self,
        id: &QueueId,
        window: Window,
        limit: usize,
    ) -> StoreResult<Vec<Entry>> {
        Ok(self.read_history(id, |h| h.conclusions_in(window, limit)))
    }

    async fn finished_runs_between(
        &self,
        id: &QueueId,
        window: Window,
        limit: usize,
    ) -> StoreResult<Vec<TestRun>> {
        Ok(self.read_history(id, |h| h.finished_in(window, limit)))
    }

    async fn restarts_between(&self, id: &QueueId, window: Window) -> StoreResult<Vec<Restart>> {
        Ok(self.read_history(id, |h| h.restarts_in(window)))
    }

    /// The three reads under one lock (one snapshot of the history), as summaries.
    async fn history(&self, id: &QueueId, window: Window) -> StoreResult<History> {
        Ok(self.read_history(id, |h| h.history_in(window)).summary())
    }
}
