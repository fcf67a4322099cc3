//! Putting state into a store directly, for scenarios the API cannot reach yet.

use mq_core::engine::Transition;
use mq_core::entry::{Entry, EntryState};
use mq_core::git::{Mergeability, PrFacts, PrState};
use mq_core::ids::{QueueId, RepoRef, Sha};
use mq_core::priority::Priority;
use mq_core::snapshot::Commit;
use mq_core::time::Timestamp;
use mq_store::Store;
use std::sync::Arc;

/// Adds a pending entry for `pr` to acme's queue on `repo`/main.
pub async fn add_entry(store: &dyn Store, repo: &str, pr: u32) {
    let id = QueueId::new(&RepoRef::new("github.com", "acme", repo).unwrap(), "main");
    let before = store.load(&id).await.unwrap().expect("queue exists");
    let now = Timestamp(before.queue.created_at.millis() + 1);
    let mut after = before.clone();
    after.entries.push(Arc::new(Entry {
        id: format!("entry-{pr}"),
        pr,
        seq: 1,
        state: EntryState::Pending,
        state_changed_at: now,
        priority: Priority::default_priority(),
        no_batch: false,
        force_enqueued: false,
        submitted_at: now,
        pr_facts: PrFacts {
            number: pr,
            title: format!("Change {pr}"),
            author: "octocat".into(),
            head_sha: Sha::new("a".repeat(40)),
            base_branch: "main".into(),
            state: PrState::Open,
            mergeability: Mergeability::Mergeable,
            based_on_target_head: false,
            draft: false,
        },
        impacted: None,
        current_run: None,
        dependent_prs: vec![],
        ready_at: Some(now),
        first_tested_at: None,
        concluded_at: None,
        ci_runs: 0,
        restarts: 0,
        conclusion: None,
        cancel_after_merge: None,
    }));
    let commit = Commit::between(&before, &Transition::unchanged(&after), now);
    store.commit(&commit).await.unwrap();
}
