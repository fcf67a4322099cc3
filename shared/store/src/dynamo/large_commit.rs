//! Commits that change more live items than one transaction may hold (100 actions).
//!
//! A failure that restarts a long line of batches can change more entries, runs and effects
//! than DynamoDB accepts in one `TransactWriteItems`. Such a commit is written in steps that
//! keep every reader and writer consistent:
//!
//! 1. One transaction puts the queue item at the new version, conditional on the expected
//!    version, with the commit's live changes attached to it (the *redo*, JSON in the
//!    attribute `redo`). From this moment the commit has happened.
//! 2. The changes are applied in transactions of at most 99 item writes, each conditional on
//!    the queue item still being at that version with that redo attached.
//! 3. The redo is removed, conditional on the same.
//!
//! A reader that finds a redo applies it to what it read ([`LiveChanges::overlay`]), so it
//! sees the commit whole. A writer's commit is conditional on no redo being attached; when it
//! finds one it finishes applying it (the writer that attached it may have stopped) and
//! reports a conflict, so the shell retries on the completed state. Applying a redo twice is
//! harmless: every write puts or deletes an item to the value the commit gave it, and the
//! condition stops a late writer once a newer commit exists.

use mq_core::engine::PendingEffect;
use mq_core::entry::Entry;
use mq_core::ids::PrNumber;
use mq_core::run::TestRun;
use mq_core::snapshot::{Commit, QueueSnapshot};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The attribute of the queue item holding a redo.
pub const REDO: &str = "redo";

/// Item writes per step transaction: one action is the condition on the queue item.
pub(crate) const STEP_ITEMS: usize = 99;

/// A commit's changes to the live items of a queue's partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct LiveChanges {
    pub put_entries: Vec<Entry>,
    pub delete_entries: Vec<PrNumber>,
    pub put_runs: Vec<TestRun>,
    pub delete_runs: Vec<String>,
    pub put_effects: Vec<PendingEffect>,
    pub delete_effects: Vec<String>,
}

impl LiveChanges {
    pub fn of(commit: &Commit) -> Self {
        Self {
            put_entries: commit.put_entries.clone(),
            delete_entries: commit.delete_entries.clone(),
            put_runs: commit.put_runs.clone(),
            delete_runs: commit.delete_runs.clone(),
            put_effects: commit.put_effects.clone(),
            delete_effects: commit.delete_effects.clone(),
        }
    }

    /// The number of item writes.
    pub fn writes(&self) -> usize {
        self.put_entries.len()
            + self.delete_entries.len()
            + self.put_runs.len()
            + self.delete_runs.len()
            + self.put_effects.len()
            + self.delete_effects.len()
    }

    /// Applies the changes to a snapshot read while they were still being written.
    pub fn overlay(&self, snapshot: &mut QueueSnapshot) {
        let put_entries: Vec<Arc<Entry>> = self.put_entries.iter().cloned().map(Arc::new).collect();
        replace(
            &mut snapshot.entries,
            &put_entries,
            &self.delete_entries,
            |e| e.pr,
        );
        replace(&mut snapshot.runs, &self.put_runs, &self.delete_runs, |r| {
            r.id.clone()
        });
        replace(
            &mut snapshot.outbox,
            &self.put_effects,
            &self.delete_effects,
            |x| x.id.clone(),
        );
    }
}

/// Removes `deleted` and every item `put` replaces, then adds `put`.
fn replace<T: Clone, K: PartialEq>(
    items: &mut Vec<T>,
    put: &[T],
    deleted: &[K],
    key: impl Fn(&T) -> K,
) {
    let put_keys: Vec<K> = put.iter().map(&key).collect();
    items.retain(|i| {
        let k = key(i);
        !deleted.contains(&k) && !put_keys.contains(&k)
    });
    items.extend(put.iter().cloned());
}

#[cfg(test)]
mod tests {
    use super::*;
    use mq_core::engine::Effect;
    use mq_core::time::Timestamp;

    fn effect(id: &str) -> PendingEffect {
        PendingEffect {
            id: id.to_owned(),
            effect: Effect::DeleteBranch { branch: id.into() },
            created_at: Timestamp(0),
            attempts: 0,
            next_attempt_at: Timestamp(0),
            last_error: None,
            held: false,
        }
    }

    #[test]
    fn an_overlay_puts_replaces_and_deletes() {
        let mut outbox = vec![effect("a"), effect("b")];
        let mut changed = effect("b");
        changed.attempts = 3;
        replace(
            &mut outbox,
            &[changed, effect("c")],
            &["a".to_owned()],
            |x| x.id.clone(),
        );
        let ids: Vec<(&str, u32)> = outbox.iter().map(|x| (x.id.as_str(), x.attempts)).collect();
        assert_eq!(ids, [("b", 3), ("c", 0)]);
    }
}
