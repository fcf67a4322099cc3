//! For the crate's unit tests: a queue in a new in-memory store, and a settings change.

use crate::app::{Clock, SystemClock};
use mq_core::engine::Event;
use mq_core::ids::{OrgId, RepoRef};
use mq_core::settings::{QueueConfig, QueueState, SettingsPatch};
use mq_core::snapshot::Queue;
use mq_store::{MemoryStore, QueueStore};
use std::sync::Arc;

/// acme's running queue on `github.com/acme/rocket` `main`, created now in a new in-memory
/// store.
pub async fn acme_queue_in_memory() -> (Arc<MemoryStore>, Queue) {
    let store = Arc::new(MemoryStore::new());
    let queue = Queue::new(
        OrgId::parse("acme").unwrap(),
        RepoRef::new("github.com", "acme", "rocket").unwrap(),
        "main".to_owned(),
        QueueConfig::default(),
        QueueState::Running,
        SystemClock.now(),
    );
    store.create_queue(&queue).await.unwrap();
    (store, queue)
}

/// An `updateQueue` of the concurrency, as an event.
pub fn concurrency(n: u32) -> Event {
    Event::UpdateSettings {
        patch: SettingsPatch {
            concurrency: Some(n),
            ..SettingsPatch::default()
        },
    }
}
