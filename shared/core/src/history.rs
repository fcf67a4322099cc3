//! Facts about a queue's past that the live snapshot forgets: when entries restarted.
//!
//! An entry counts its restarts (`Entry::restarts`), but not when they happened. A commit
//! compares the counters before and after and records each increase as a [`Restart`], which the
//! store keeps as history so that "restarts in the last hour" can be read back.

use crate::entry::Entry;
use crate::ids::PrNumber;
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

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

/// The restarts between two versions of a queue's entries: every entry of `after` (active or
/// just concluded) whose `restarts` counter is higher than in `before` (0 for a new entry).
pub fn restarts_between<'a>(
    before: &[Entry],
    after: impl IntoIterator<Item = &'a Entry>,
    at: Timestamp,
) -> Vec<Restart> {
    let earlier: HashMap<&str, u32> = before.iter().map(|b| (b.id.as_str(), b.restarts)).collect();
    after
        .into_iter()
        .filter_map(|entry| {
            let earlier = earlier.get(entry.id.as_str()).copied().unwrap_or(0);
            (entry.restarts > earlier).then(|| Restart {
                entry_id: entry.id.clone(),
                pr: entry.pr,
                at,
                count: entry.restarts - earlier,
                total: entry.restarts,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::EntryState;
    use crate::git::{Mergeability, PrFacts, PrState};
    use crate::ids::Sha;
    use crate::priority::Priority;

    fn entry(id: &str, pr: u32, restarts: u32) -> Entry {
        Entry {
            id: id.to_owned(),
            pr,
            seq: u64::from(pr),
            state: EntryState::Testing,
            state_changed_at: Timestamp(0),
            priority: Priority::default_priority(),
            no_batch: false,
            force_enqueued: false,
            submitted_at: Timestamp(0),
            pr_facts: PrFacts {
                number: pr,
                title: String::new(),
                author: String::new(),
                head_sha: Sha::new("a"),
                base_branch: "main".into(),
                state: PrState::Open,
                mergeability: Mergeability::Mergeable,
                based_on_target_head: false,
                draft: false,
            },
            impacted: None,
            current_run: None,
            dependent_prs: vec![],
            ready_at: None,
            first_tested_at: None,
            concluded_at: None,
            ci_runs: 0,
            restarts,
            conclusion: None,
            cancel_after_merge: None,
        }
    }

    #[test]
    fn each_increase_of_a_counter_is_a_restart() {
        let before = vec![entry("a", 1, 0), entry("b", 2, 3), entry("c", 3, 1)];
        let after = [entry("a", 1, 1), entry("b", 2, 5), entry("c", 3, 1)];
        let found = restarts_between(&before, &after, Timestamp(42));
        assert_eq!(
            found,
            vec![
                Restart {
                    entry_id: "a".into(),
                    pr: 1,
                    at: Timestamp(42),
                    count: 1,
                    total: 1
                },
                Restart {
                    entry_id: "b".into(),
                    pr: 2,
                    at: Timestamp(42),
                    count: 2,
                    total: 5
                },
            ]
        );
    }

    #[test]
    fn a_resubmission_is_a_new_entry_and_a_new_count() {
        let before = vec![entry("old", 1, 4)];
        let after = [entry("new", 1, 1), entry("fresh", 2, 0)];
        let found = restarts_between(&before, &after, Timestamp(7));
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].entry_id.as_str(), found[0].count), ("new", 1));
    }
}
