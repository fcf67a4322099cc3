//! The store contract on the DynamoDB adapter, against a moto server on 127.0.0.1.
//!
//! Each scenario gets its own tables (a unique name prefix) on the run's server.

mod contract;

use mq_store::{DynamoStore, Store, TableNames};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

async fn fresh() -> Arc<dyn Store> {
    Arc::new(fresh_dynamo().await)
}

async fn fresh_dynamo() -> DynamoStore {
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
    DynamoStore::new(client, tables)
}

all_contract_tests!(fresh());

/// A writer that attached a large commit to the queue item and stopped before writing its
/// items: readers see the commit whole, and the next writer finishes it before committing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_written_large_commit_is_finished_by_the_next_writer() {
    use aws_sdk_dynamodb::types::AttributeValue;
    use contract::fixtures::*;
    use mq_core::entry::EntryState;
    use mq_core::snapshot::LiveChanges;
    use mq_store::dynamo::large_commit::REDO;
    use mq_store::{QueueStore, StoreError};

    let store = fresh_dynamo().await;
    let q = queue("acme", "rocket", "main");
    store.create_queue(&q).await.unwrap();
    let changes = LiveChanges {
        put_entries: (1..=120)
            .map(|pr| entry(pr, EntryState::Pending, T0))
            .collect(),
        ..LiveChanges::default()
    };
    let key = std::collections::HashMap::from([
        ("pk".to_owned(), AttributeValue::S(q.id.as_str().to_owned())),
        ("sk".to_owned(), AttributeValue::S("QUEUE".to_owned())),
    ]);
    let mut item = store
        .client()
        .get_item()
        .table_name(&store.tables().queues)
        .set_key(Some(key))
        .send()
        .await
        .unwrap()
        .item
        .unwrap();
    item.insert("version".into(), AttributeValue::N("1".into()));
    item.insert(
        REDO.into(),
        AttributeValue::S(serde_json::to_string(&changes).unwrap()),
    );
    store
        .client()
        .put_item()
        .table_name(&store.tables().queues)
        .set_item(Some(item))
        .send()
        .await
        .unwrap();

    let seen = store.load(&q.id).await.unwrap().unwrap();
    assert_eq!(seen.entries.len(), 120, "a reader sees the commit whole");
    let mut next = seen.clone();
    next.entries
        .push(Arc::new(entry(121, EntryState::Pending, T0)));
    let attempt = commit(&seen, next.clone(), vec![], vec![], T0);
    assert_eq!(
        store.commit(&attempt).await,
        Err(StoreError::Conflict),
        "the next writer finishes the half-written commit first, then retries"
    );
    let finished = store.load(&q.id).await.unwrap().unwrap();
    assert_eq!(finished, seen, "every item of the commit is now written");
    store
        .commit(&commit(&finished, next, vec![], vec![], T0))
        .await
        .unwrap();
    let last = store.load(&q.id).await.unwrap().unwrap();
    assert_eq!((last.entries.len(), last.queue.version), (121, 2));
}
