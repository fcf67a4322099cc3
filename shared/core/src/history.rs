//! A queue's past, as a store keeps it: the entries that concluded, the runs that finished,
//! and when entries restarted, a fact the live snapshot forgets.
//!
//! An entry counts its restarts (`Entry::restarts`), but not when they happened. A commit
//! compares the counters before and after (`snapshot::entry_diff`) and records each
//! increase as a [`Restart`], which the store keeps as history so that "restarts in the last
//! hour" can be read back.

use crate::entry::Entry;
use crate::ids::PrNumber;
use crate::run::TestRun;
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// One or more restarts of an entry's testing, recorded by one commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Restart {
    pub entry_id: String,
    pub pr: PrNumber,
    /// When the commit that recorded the restart happened.
    pub at: Timestamp,
    /// How many restarts this commit added (usually 1).
    pub count: u32,
    /// The entry's restart counter afterwards: unique per entry, so it keys the record.
    pub total: u32,
}

/// What a store keeps of a queue's past within a window of time, each list in any order (the
/// store's reads give the entries and runs newest first, the restarts oldest first).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct History {
    /// Entries concluded in the window, as their conclusion left them.
    pub concluded: Vec<Entry>,
    /// Runs finished in the window, as last recorded.
    pub finished_runs: Vec<TestRun>,
    /// Restarts recorded in the window.
    pub restarts: Vec<Restart>,
}

impl History {
    /// The same history, each entry and run as its summary
    /// ([`Entry::summary`], [`TestRun::summary`]).
    pub fn summary(self) -> Self {
        History {
            concluded: self.concluded.into_iter().map(Entry::summary).collect(),
            finished_runs: self
                .finished_runs
                .into_iter()
                .map(TestRun::summary)
                .collect(),
            restarts: self.restarts,
        }
    }
}
