//! Putting state into a store directly, for scenarios the API cannot reach yet.

use mq_core::engine::Transition;
use mq_core::entry::{Entry, EntryState};
use mq_core::git::PrFacts;
use mq_core::ids::{QueueId, RepoRef, Sha};
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
    let facts = PrFacts {
        head_sha: Sha::new("a".repeat(40)),
        ..PrFacts::sample(pr)
    };
    after.entries.push(Arc::new(Entry {
        state: EntryState::Pending,
        ready_at: Some(now),
        ..Entry::submitted(format!("entry-{pr}"), 1, facts, now)
    }));
    let commit = Commit::between(&before, &Transition::unchanged(&after), now);
    store.commit(&commit).await.unwrap();
}
