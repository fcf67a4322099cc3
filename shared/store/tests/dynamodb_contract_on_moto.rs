//! The store contract on the DynamoDB adapter, against a moto server on 127.0.0.1.
//!
//! Each scenario gets its own tables (a unique name prefix) on the run's server.

mod contract;

use mq_store::{DynamoStore, Store, TableNames};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

async fn fresh() -> Arc<dyn Store> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let endpoint = mq_tables::moto::endpoint();
    let client = mq_tables::local_client(&endpoint).await;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let prefix = format!(
        "c{}-{}-{nanos}-",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let tables = TableNames::with_prefix(&prefix);
    mq_tables::create_missing_tables(&client, &tables)
        .await
        .unwrap();
    Arc::new(DynamoStore::new(client, tables))
}

all_contract_tests!(fresh());
