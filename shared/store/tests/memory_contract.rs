//! The store contract on the in-memory adapter.

mod contract;

use mq_store::{MemoryStore, Store};
use std::sync::Arc;

async fn fresh() -> Arc<dyn Store> {
    Arc::new(MemoryStore::new())
}

all_contract_tests!(fresh());
