//! What the advisor reads of a queue's past: the facts a store keeps for a window of time.

use mq_core::entry::Entry;
use mq_core::history::Restart;
use mq_core::metrics::Window;
use mq_core::run::TestRun;
use mq_core::snapshot::{Queue, QueueSnapshot};
use mq_core::time::Timestamp;

/// A queue's history over a window, as a store can load it.
///
/// - `concluded`: the entries that left the queue in the window (`concluded_at` in it), as
///   their conclusion left them;
/// - `active`: the entries still in the queue at the window's end, from the snapshot; an
///   entry in both counts once;
/// - `runs`: the runs that finished in the window (`finished_at` in it), whatever their kind
///   and status;
/// - `restarts`: the restarts recorded in the window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct History {
    pub window: Window,
    pub concluded: Vec<Entry>,
    pub active: Vec<Entry>,
    pub runs: Vec<TestRun>,
    pub restarts: Vec<Restart>,
}

/// The window of `length_ms` before `now`, but nothing before the queue was created.
pub fn window(queue: &Queue, now: Timestamp, length_ms: i64) -> Window {
    Window {
        from: now.plus_millis(-length_ms).max(queue.created_at),
        to: now,
    }
}

impl History {
    /// The history of `window`, with the active entries taken from `snapshot`.
    pub fn new(
        window: Window,
        snapshot: &QueueSnapshot,
        concluded: Vec<Entry>,
        runs: Vec<TestRun>,
        restarts: Vec<Restart>,
    ) -> Self {
        Self {
            window,
            concluded,
            active: snapshot.entries.iter().map(|e| (**e).clone()).collect(),
            runs,
            restarts,
        }
    }

    /// Every entry once, concluded ones first (an entry concluded between the reads of the
    /// snapshot and of the history is in both), in submission order.
    pub fn entries(&self) -> Vec<&Entry> {
        let mut seen: Vec<u64> = self.concluded.iter().map(|e| e.seq).collect();
        seen.sort_unstable();
        let active = self
            .active
            .iter()
            .filter(|e| seen.binary_search(&e.seq).is_err());
        let mut all: Vec<&Entry> = self.concluded.iter().chain(active).collect();
        all.sort_by_key(|e| (e.submitted_at, e.seq));
        all
    }

    /// Hours the window spans.
    pub fn hours(&self) -> f64 {
        self.window.to.millis_since(self.window.from) as f64 / 3_600_000.0
    }
}
