//! What the advisor reads of a queue's past: what a store keeps of a window of time, and the
//! entries still in the queue at its end.

use mq_core::entry::Entry;
use mq_core::history::History;
use mq_core::metrics::Window;
use mq_core::snapshot::QueueSnapshot;

/// A queue's past over a window.
///
/// - `kept`: what the store kept of the window: the entries that left the queue in it
///   (`concluded_at` in it), as their conclusion left them; the runs that finished in it
///   (`finished_at` in it), whatever their kind and status (restarts are not used: the
///   service reads none);
/// - `active`: the entries still in the queue at the window's end, from the snapshot; an
///   entry both concluded and active counts once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Past {
    pub window: Window,
    pub kept: History,
    pub active: Vec<Entry>,
}

impl Past {
    /// The past of `window`: what the store kept of it, and the active entries of `snapshot`.
    pub fn new(window: Window, kept: History, snapshot: &QueueSnapshot) -> Self {
        Self {
            window,
            kept,
            active: snapshot.entries.iter().map(|e| (**e).clone()).collect(),
        }
    }

    /// Every entry once, concluded ones first (an entry concluded between the reads of the
    /// snapshot and of the history is in both), in submission order.
    pub fn entries(&self) -> Vec<&Entry> {
        let concluded = &self.kept.concluded;
        let mut seen: Vec<u64> = concluded.iter().map(|e| e.seq).collect();
        seen.sort_unstable();
        let active = self
            .active
            .iter()
            .filter(|e| seen.binary_search(&e.seq).is_err());
        let mut all: Vec<&Entry> = concluded.iter().chain(active).collect();
        all.sort_by_key(|e| (e.submitted_at, e.seq));
        all
    }

    /// Hours the window spans.
    pub fn hours(&self) -> f64 {
        self.window.hours()
    }
}
