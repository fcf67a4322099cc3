//! The changes between two versions of a queue's active entries: what a commit writes.
//!
//! Entries are matched by submission (`seq`, unique per submission in a queue), walking both
//! lists in submission order, so a queue of a thousand entries costs one pass and no hashing.
//! An entry still shared with the version before (the same [`Arc`]) is unchanged without
//! looking at it; any other is compared field by field.

use crate::entry::Entry;
use crate::history::Restart;
use crate::ids::PrNumber;
use crate::time::Timestamp;
use std::borrow::Cow;
use std::cmp::Ordering;
use std::sync::Arc;

/// What changed in the active entries, and the restarts it recorded.
#[derive(Debug, Default)]
pub(super) struct EntryDiff {
    /// Entries of `after` that are new or differ from their version in `before`.
    pub put: Vec<Entry>,
    /// Pull requests with an entry in `before` and none in `after`.
    pub delete: Vec<PrNumber>,
    /// Every entry of `after` or `concluded` whose `restarts` counter is higher than in
    /// `before` (0 for a new entry), stamped `at`.
    pub restarts: Vec<Restart>,
}

/// The changes that turn the entries `before` into `after`; `concluded` are the entries
/// that left the line in between (for their restarts).
pub(super) fn entry_diff(
    before: &[Arc<Entry>],
    after: &[Arc<Entry>],
    concluded: &[Entry],
    at: Timestamp,
) -> EntryDiff {
    let before = by_submission(before);
    let after = by_submission(after);
    let mut diff = EntryDiff::default();
    let mut gone = Vec::new();
    let (mut b, mut a) = (0, 0);
    while b < before.len() || a < after.len() {
        match order(before.get(b), after.get(a)) {
            Ordering::Equal => {
                diff.matched(&before[b], &after[a], at);
                (b, a) = (b + 1, a + 1);
            }
            Ordering::Less => {
                gone.push(before[b].pr);
                b += 1;
            }
            Ordering::Greater => {
                diff.added(&after[a], at);
                a += 1;
            }
        }
    }
    // A resubmission replaces a pull request's entry with a new one: the key stays.
    diff.delete = gone
        .into_iter()
        .filter(|pr| !diff.put.iter().any(|e| e.pr == *pr))
        .collect();
    for entry in concluded {
        diff.restarted(entry, earlier_restarts(&before, entry), at);
    }
    diff
}

/// The entries in submission order. A store hands them back so and a step keeps the order,
/// so they are only copied and sorted when they are not.
fn by_submission(entries: &[Arc<Entry>]) -> Cow<'_, [Arc<Entry>]> {
    if entries.is_sorted_by_key(|e| e.seq) {
        return Cow::Borrowed(entries);
    }
    let mut sorted = entries.to_vec();
    sorted.sort_by_key(|e| e.seq);
    Cow::Owned(sorted)
}

/// Which list's next entry comes first: `Less` when `before`'s (it is gone), `Greater`
/// when `after`'s (it is new), `Equal` for the same submission.
fn order(before: Option<&Arc<Entry>>, after: Option<&Arc<Entry>>) -> Ordering {
    match (before, after) {
        (Some(b), Some(a)) => b.seq.cmp(&a.seq),
        (Some(_), None) => Ordering::Less,
        (None, _) => Ordering::Greater,
    }
}

/// The `restarts` counter of `entry`'s submission in `before`; 0 if it was not there.
fn earlier_restarts(before: &[Arc<Entry>], entry: &Entry) -> u32 {
    before
        .binary_search_by_key(&entry.seq, |e| e.seq)
        .ok()
        .map(|i| &before[i])
        .filter(|e| e.id == entry.id)
        .map_or(0, |e| e.restarts)
}

impl EntryDiff {
    fn matched(&mut self, before: &Entry, after: &Entry, at: Timestamp) {
        if std::ptr::eq(before, after) {
            return;
        }
        if before != after {
            self.put.push(after.clone());
        }
        self.restarted(after, before.restarts, at);
    }

    fn added(&mut self, after: &Entry, at: Timestamp) {
        self.put.push(after.clone());
        self.restarted(after, 0, at);
    }

    fn restarted(&mut self, entry: &Entry, earlier: u32, at: Timestamp) {
        if entry.restarts > earlier {
            self.restarts.push(Restart {
                entry_id: entry.id.clone(),
                pr: entry.pr,
                at,
                count: entry.restarts - earlier,
                total: entry.restarts,
            });
        }
    }
}

#[cfg(test)]
mod tests;
