//! A fact about a queue's past that the live snapshot forgets: when entries restarted.
//!
//! An entry counts its restarts (`Entry::restarts`), but not when they happened. A commit
//! compares the counters before and after (`snapshot::entry_diff`) and records each
//! increase as a [`Restart`], which the store keeps as history so that "restarts in the last
//! hour" can be read back.

use crate::ids::PrNumber;
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
