//! The store contract on the DynamoDB adapter, against a moto server on 127.0.0.1.
//!
//! Each scenario gets its own tables (a unique name prefix) on the run's server.

mod contract;

use mq_store::{DynamoStore, Store, StoreError, TableNames};
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
    use contract::fixtures::*;
    use mq_core::entry::EntryState;
    use mq_core::snapshot::LiveChanges;
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
    attach_redo(&store, &q.id, 1, 120, &changes).await;

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

/// A query that reads `#VERSION` while a large commit's steps are being written, and the queue
/// item once they are and its redo was removed, reads items of the old version between them,
/// both copies of the version agreeing. `#VERSION` names the redo too: the reader applies it,
/// and sees the commit whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_that_reads_the_queue_item_after_its_redo_was_removed_sees_the_commit_whole() {
    use aws_sdk_dynamodb::types::AttributeValue;
    use contract::fixtures::*;
    use mq_core::entry::EntryState;
    use mq_core::snapshot::LiveChanges;
    use mq_store::QueueStore;
    use mq_store::dynamo::keys::VERSION_SK;
    use mq_store::dynamo::large_commit::REDO;

    let store = fresh_dynamo().await;
    let q = queue("acme", "rocket", "main");
    store.create_queue(&q).await.unwrap();
    let changes = LiveChanges {
        put_entries: (1..=120)
            .map(|pr| entry(pr, EntryState::Pending, T0))
            .collect(),
        ..LiveChanges::default()
    };
    attach_redo(&store, &q.id, 1, 120, &changes).await;
    // What the query reads: `#VERSION` naming the redo, the queue item without it.
    let item_key = |sk: &str| {
        std::collections::HashMap::from([
            ("pk".to_owned(), AttributeValue::S(q.id.as_str().to_owned())),
            ("sk".to_owned(), AttributeValue::S(sk.to_owned())),
        ])
    };
    let removed = store
        .client()
        .update_item()
        .table_name(&store.tables().queues)
        .set_key(Some(item_key("QUEUE")))
        .update_expression("REMOVE #redo")
        .expression_attribute_names("#redo", REDO)
        .return_values(aws_sdk_dynamodb::types::ReturnValue::UpdatedOld)
        .send()
        .await
        .unwrap();
    let redo = removed.attributes.unwrap()[REDO].clone();
    store
        .client()
        .update_item()
        .table_name(&store.tables().queues)
        .set_key(Some(item_key(VERSION_SK)))
        .update_expression("SET #redo = :redo")
        .expression_attribute_names("#redo", REDO)
        .expression_attribute_values(":redo", redo)
        .send()
        .await
        .unwrap();

    let seen = store.load(&q.id).await.unwrap().unwrap();
    assert_eq!(seen.queue.version, 1);
    assert_eq!(seen.entries.len(), 120, "the reader sees the commit whole");
}

/// After a large commit, neither the queue item nor `#VERSION` names its redo.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_commit_removes_its_redo_from_both_copies_of_the_version() {
    use aws_sdk_dynamodb::types::AttributeValue;
    use contract::fixtures::*;
    use mq_core::entry::EntryState;
    use mq_store::QueueStore;
    use mq_store::dynamo::large_commit::REDO;

    let store = fresh_dynamo().await;
    let q = queue("acme", "rocket", "main");
    store.create_queue(&q).await.unwrap();
    let empty = store.load(&q.id).await.unwrap().unwrap();
    let mut line = empty.clone();
    line.entries = (1..=150)
        .map(|pr| Arc::new(entry(pr, EntryState::Pending, T0)))
        .collect();
    store
        .commit(&commit(&empty, line, vec![], vec![], T0))
        .await
        .unwrap();
    let items = store
        .client()
        .query()
        .table_name(&store.tables().queues)
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(":pk", AttributeValue::S(q.id.as_str().to_owned()))
        .send()
        .await
        .unwrap()
        .items
        .unwrap();
    assert_eq!(
        items.len(),
        150 + 2,
        "the entries, the queue item and `#VERSION`"
    );
    assert!(items.iter().all(|item| !item.contains_key(REDO)));
    assert_eq!(store.load(&q.id).await.unwrap().unwrap().entries.len(), 150);
}

/// Attaches `changes` to the queue item as a large commit's redo at `version`, with
/// `active` entries, as a writer that stopped right after the second step leaves it: the
/// redo in parts beside the queue's partition, the queue item naming them.
async fn attach_redo(
    store: &DynamoStore,
    id: &mq_core::ids::QueueId,
    version: u64,
    active: u32,
    changes: &mq_core::snapshot::LiveChanges,
) {
    use aws_sdk_dynamodb::types::AttributeValue;
    use mq_store::dynamo::keys::redo_pk;
    use mq_store::dynamo::large_commit::{REDO_PART, RedoParts, cut};
    let json = serde_json::to_string(changes).unwrap();
    let pieces = cut(&json);
    let redo = RedoParts::new(version, "stopped-writer", pieces.len());
    for (index, piece) in pieces.into_iter().enumerate() {
        let item = std::collections::HashMap::from([
            ("pk".to_owned(), AttributeValue::S(redo_pk(id.as_str()))),
            ("sk".to_owned(), AttributeValue::S(redo.part_sk(index))),
            (REDO_PART.to_owned(), AttributeValue::S(piece.to_owned())),
        ]);
        store
            .client()
            .put_item()
            .table_name(&store.tables().queues)
            .set_item(Some(item))
            .send()
            .await
            .unwrap();
    }
    attach_redo_attribute(store, id, version, active, redo.attribute()).await;
}

/// Sets the queue item's version, active entries and `redo` attribute.
async fn attach_redo_attribute(
    store: &DynamoStore,
    id: &mq_core::ids::QueueId,
    version: u64,
    active: u32,
    redo: String,
) {
    use aws_sdk_dynamodb::types::AttributeValue;
    use mq_store::dynamo::keys::{ACTIVE_ENTRIES, VERSION};
    use mq_store::dynamo::large_commit::REDO;
    let key = std::collections::HashMap::from([
        ("pk".to_owned(), AttributeValue::S(id.as_str().to_owned())),
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
    item.insert(VERSION.into(), AttributeValue::N(version.to_string()));
    item.insert(ACTIVE_ENTRIES.into(), AttributeValue::N(active.to_string()));
    item.insert(REDO.into(), AttributeValue::S(redo));
    set_version_copy(store, id, version).await;
    store
        .client()
        .put_item()
        .table_name(&store.tables().queues)
        .set_item(Some(item))
        .send()
        .await
        .unwrap();
}

/// Every item of queue `id`'s partition, by sort key.
async fn partition_keys(store: &DynamoStore, id: &mq_core::ids::QueueId) -> Vec<String> {
    use aws_sdk_dynamodb::types::AttributeValue;
    let out = store
        .client()
        .query()
        .table_name(&store.tables().queues)
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(":pk", AttributeValue::S(id.as_str().to_owned()))
        .projection_expression("sk")
        .send()
        .await
        .unwrap();
    out.items
        .unwrap_or_default()
        .iter()
        .filter_map(|i| i.get("sk").and_then(|v| v.as_s().ok()).cloned())
        .collect()
}

/// A queue deleted while a large commit that removes its entries is half written: the
/// commit is finished before the delete goes through, so that no item of the queue is left
/// behind for a queue created again under the same name to inherit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_during_a_half_written_large_commit_leaves_no_item_behind() {
    use contract::fixtures::*;
    use mq_core::entry::EntryState;
    use mq_core::snapshot::LiveChanges;
    use mq_store::{QueueStore, StoreError};

    let store = fresh_dynamo().await;
    let q = queue("acme", "rocket", "main");
    store.create_queue(&q).await.unwrap();
    let empty = store.load(&q.id).await.unwrap().unwrap();
    let mut three = empty.clone();
    for pr in 1..=3 {
        three
            .entries
            .push(Arc::new(entry(pr, EntryState::Pending, T0)));
    }
    store
        .commit(&commit(&empty, three, vec![], vec![], T0))
        .await
        .unwrap();
    let cancel_all = LiveChanges {
        delete_entries: vec![1, 2, 3],
        ..LiveChanges::default()
    };
    attach_redo(&store, &q.id, 2, 0, &cancel_all).await;
    assert!(
        partition_keys(&store, &q.id)
            .await
            .iter()
            .any(|sk| sk.starts_with("ENTRY#")),
        "the entries' items are not deleted yet"
    );

    let mut deleted = false;
    for _ in 0..3 {
        let seen = store.load(&q.id).await.unwrap().unwrap();
        assert!(seen.entries.is_empty(), "a reader sees the commit whole");
        match store.delete_queue(&seen).await {
            Ok(()) => {
                deleted = true;
                break;
            }
            Err(StoreError::Conflict) => continue,
            Err(e) => panic!("delete: {e:?}"),
        }
    }
    assert!(
        deleted,
        "the delete goes through once the commit is finished"
    );
    assert_eq!(
        partition_keys(&store, &q.id).await,
        Vec::<String>::new(),
        "nothing of the queue is left"
    );
}

/// An entry of about 30 KB (300 impacted targets of 100 characters).
fn big_entry(pr: u32) -> mq_core::entry::Entry {
    entry_with_targets(pr, 300)
}

/// An entry with `targets` impacted targets of 100 characters (about 100 bytes each).
fn entry_with_targets(pr: u32, targets: usize) -> mq_core::entry::Entry {
    use contract::fixtures::*;
    use mq_core::entry::{EntryState, ImpactedTargets, UploadedTargets};
    let mut e = entry(pr, EntryState::Pending, T0);
    let targets = (0..targets)
        .map(|i| format!("//services/{pr:04}/target-{i:04}/{}", "x".repeat(70)))
        .collect();
    e.impacted = Some(UploadedTargets {
        head_sha: e.pr_facts.head_sha.clone(),
        targets: ImpactedTargets::List(targets),
        uploaded_at: T0,
    });
    e
}

/// The pull request the writer of the test below keeps in the queue at `version`.
fn toggled_at(version: u64) -> u32 {
    1 + u32::try_from(version % 2).unwrap()
}

/// A queue larger than one page of a query (1 MB) is read in several queries. A commit that
/// lands between two of them must not give a snapshot mixing two versions (the entries of
/// one, the version of the other): a step would commit on top of it as if it were current,
/// bringing back what the commit removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_larger_than_a_page_reads_as_one_version_while_commits_land() {
    use contract::fixtures::*;
    use mq_core::entry::EntryState;
    use mq_store::QueueStore;

    let store = Arc::new(fresh_dynamo().await);
    let q = queue("acme", "rocket", "main");
    store.create_queue(&q).await.unwrap();
    let empty = store.load(&q.id).await.unwrap().unwrap();
    let mut full = empty.clone();
    full.entries
        .extend((100..140).map(|pr| Arc::new(big_entry(pr))));
    full.entries
        .push(Arc::new(entry(toggled_at(1), EntryState::Pending, T0)));
    store
        .commit(&commit(&empty, full, vec![], vec![], T0))
        .await
        .unwrap();
    let first_page = store
        .client()
        .query()
        .table_name(&store.tables().queues)
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(
            ":pk",
            aws_sdk_dynamodb::types::AttributeValue::S(q.id.as_str().to_owned()),
        )
        .send()
        .await
        .unwrap();
    assert!(
        first_page.last_evaluated_key.is_some(),
        "the queue spans more than one page"
    );

    // The writer swaps pull request 1 for 2 and back, one commit at a time: at version v
    // the queue holds `toggled_at(v)`. Both sort before the large entries, on the first page.
    let writer = {
        let store = store.clone();
        let id = q.id.clone();
        tokio::spawn(async move {
            for _ in 0..12 {
                let before = store.load(&id).await.unwrap().unwrap();
                let v = before.queue.version;
                let mut next = before.clone();
                next.entries.retain(|e| e.pr != toggled_at(v));
                next.entries
                    .push(Arc::new(entry(toggled_at(v + 1), EntryState::Pending, T0)));
                store
                    .commit(&commit(&before, next, vec![], vec![], T0))
                    .await
                    .unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(150)).await;
            }
        })
    };
    let mut reads = 0;
    while !writer.is_finished() {
        let seen = store.load(&q.id).await.unwrap().unwrap();
        let small: Vec<u32> = seen
            .entries
            .iter()
            .map(|e| e.pr)
            .filter(|pr| *pr < 100)
            .collect();
        assert_eq!(
            (seen.entries.len(), small),
            (41, vec![toggled_at(seen.queue.version)]),
            "read {reads}: the entries of version {} and no other",
            seen.queue.version
        );
        reads += 1;
    }
    writer.await.unwrap();
    assert!(reads >= 5, "only {reads} reads while the writer committed");
}

/// A concluded entry's items in the PullRequests table (its latest conclusion, read by
/// getSubmittedPullRequest, and its conclusion log) both expire when concluded entries do
/// (SECURITY.md: 30 days), so neither outlives the retention.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concluded_entrys_items_expire_together() {
    use aws_sdk_dynamodb::types::AttributeValue;
    use contract::fixtures::{T0, commit, concluded, entry};
    use mq_core::entry::EntryState;
    use mq_store::QueueStore;
    use mq_store::dynamo::keys::{EXPIRES_AT, done_sk, latest_pr_sk};
    let store = fresh_dynamo().await;
    let q = contract::fixtures::queue("acme", "rocket", "main");
    store.create_queue(&q).await.unwrap();
    let before = store.load(&q.id).await.unwrap().unwrap();
    let mut with_entry = before.clone();
    with_entry.entries = vec![Arc::new(entry(1, EntryState::Testing, T0))];
    let added = commit(&before, with_entry, vec![], vec![], T0);
    store.commit(&added).await.unwrap();
    let snap = store.load(&q.id).await.unwrap().unwrap();
    let t1 = T0.plus_millis(60_000);
    let merged = concluded((*snap.entries[0]).clone(), EntryState::Merged, t1);
    let mut after = snap.clone();
    after.entries.clear();
    let concluding = commit(&snap, after, vec![merged.clone()], vec![], t1);
    store.commit(&concluding).await.unwrap();
    let expires = |sk: String| {
        let store = &store;
        let pk = q.id.as_str().to_owned();
        async move {
            let key = std::collections::HashMap::from([
                ("pk".to_owned(), AttributeValue::S(pk)),
                ("sk".to_owned(), AttributeValue::S(sk)),
            ]);
            let item = store
                .client()
                .get_item()
                .table_name(&store.tables().pull_requests)
                .set_key(Some(key))
                .send()
                .await
                .unwrap()
                .item
                .expect("the item is stored");
            item.get(EXPIRES_AT).cloned()
        }
    };
    let latest = expires(latest_pr_sk(1)).await;
    let log = expires(done_sk(t1, &merged.id)).await;
    assert!(latest.is_some(), "the latest conclusion expires");
    assert_eq!(latest, log);
}

/// A test case expires 90 days after its last result (a BROKEN test removed from the code
/// leaves the lists), and not while a user's quarantine override is set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_test_case_expires_once_forgotten_and_not_while_overridden() {
    use aws_sdk_dynamodb::types::AttributeValue;
    use contract::fixtures::T0;
    use mq_core::health::{QuarantineOverride, StatusKind};
    use mq_store::TestHealthStore;
    use mq_store::dynamo::keys::EXPIRES_AT;
    let store = fresh_dynamo().await;
    let broken = contract::health::case("acme", "test_gone", StatusKind::Broken);
    let mut overridden = contract::health::case("acme", "test_kept", StatusKind::Broken);
    overridden.set_quarantine(QuarantineOverride::AlwaysQuarantine, T0);
    store
        .put_test_cases(&[broken.clone(), overridden.clone()])
        .await
        .unwrap();
    let expires = |id: uuid::Uuid| {
        let store = &store;
        async move {
            let key = std::collections::HashMap::from([
                (
                    "pk".to_owned(),
                    AttributeValue::S(format!("CASE#acme#{id}")),
                ),
                ("sk".to_owned(), AttributeValue::S("CASE".to_owned())),
            ]);
            let item = store
                .client()
                .get_item()
                .table_name(&store.tables().test_health)
                .set_key(Some(key))
                .send()
                .await
                .unwrap()
                .item
                .expect("the test case is stored");
            item.get(EXPIRES_AT).cloned()
        }
    };
    let ninety_days_on = T0.millis() / 1000 + 90 * 86_400;
    assert_eq!(
        expires(broken.id).await,
        Some(AttributeValue::N(ninety_days_on.to_string()))
    );
    assert_eq!(expires(overridden.id).await, None);

    // A test case written before test cases expired gets its expiry from the backfill (an
    // upgrade's one-off); one a user keeps gets none.
    let key = std::collections::HashMap::from([
        (
            "pk".to_owned(),
            AttributeValue::S(format!("CASE#acme#{}", broken.id)),
        ),
        ("sk".to_owned(), AttributeValue::S("CASE".to_owned())),
    ]);
    store
        .client()
        .update_item()
        .table_name(&store.tables().test_health)
        .set_key(Some(key))
        .update_expression("REMOVE expires_at")
        .send()
        .await
        .unwrap();
    assert_eq!(expires(broken.id).await, None);
    let backfill = store.expire_forgotten_tests().await.unwrap();
    assert_eq!((backfill.given, backfill.kept, backfill.skipped), (1, 1, 0));
    assert_eq!(
        expires(broken.id).await,
        Some(AttributeValue::N(ninety_days_on.to_string()))
    );
    assert_eq!(expires(overridden.id).await, None);

    // A user's override set later keeps it too.
    let mut kept = broken.clone();
    kept.set_quarantine(QuarantineOverride::NeverQuarantine, T0);
    kept.version = 2;
    store.put_test_cases(&[kept]).await.unwrap();
    assert_eq!(expires(broken.id).await, None);
}

/// A redo attached inline to the queue item (the JSON itself, as earlier versions wrote it)
/// is still read whole and finished.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redo_written_inline_by_an_earlier_version_is_read_and_finished() {
    use contract::fixtures::*;
    use mq_core::entry::EntryState;
    use mq_core::snapshot::LiveChanges;
    use mq_store::QueueStore;

    let store = fresh_dynamo().await;
    let q = queue("acme", "rocket", "main");
    store.create_queue(&q).await.unwrap();
    let changes = LiveChanges {
        put_entries: (1..=3)
            .map(|pr| entry(pr, EntryState::Pending, T0))
            .collect(),
        ..LiveChanges::default()
    };
    let inline = serde_json::to_string(&changes).unwrap();
    attach_redo_attribute(&store, &q.id, 1, 3, inline).await;
    let seen = store.load(&q.id).await.unwrap().unwrap();
    assert_eq!(seen.entries.len(), 3, "a reader sees the commit whole");
    let mut next = seen.clone();
    next.entries.truncate(2);
    let attempt = commit(&seen, next.clone(), vec![], vec![], T0);
    assert!(store.commit(&attempt).await.is_err(), "finished first");
    store.commit(&attempt).await.unwrap();
    let keys = partition_keys(&store, &q.id).await;
    assert_eq!(keys.iter().filter(|k| k.starts_with("ENTRY#")).count(), 2);
}

/// A commit of fewer items than a transaction holds, but heavier than its 4 MB (70 entries
/// of about 64 KB of impacted targets), is written in steps and applies whole; so is the
/// commit that then changes every one of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_heavier_than_a_transaction_holds_applies_whole() {
    use contract::fixtures::*;
    use mq_core::entry::EntryState;
    use mq_store::QueueStore;

    let store = fresh_dynamo().await;
    let q = queue("acme", "rocket", "main");
    store.create_queue(&q).await.unwrap();
    let empty = store.load(&q.id).await.unwrap().unwrap();
    let mut heavy = empty.clone();
    heavy.entries = (1..=70)
        .map(|pr| Arc::new(entry_with_targets(pr, 640)))
        .collect();
    store
        .commit(&commit(&empty, heavy.clone(), vec![], vec![], T0))
        .await
        .unwrap();
    let loaded = store.load(&q.id).await.unwrap().unwrap();
    assert_eq!(loaded.entries, heavy.entries);

    let mut testing = loaded.clone();
    for e in &mut testing.entries {
        Arc::make_mut(e).state = EntryState::Testing;
    }
    store
        .commit(&commit(&loaded, testing.clone(), vec![], vec![], T0))
        .await
        .unwrap();
    let after = store.load(&q.id).await.unwrap().unwrap();
    assert_eq!(after.entries, testing.entries);
    assert_eq!(after.queue.version, 2);
}

/// A large commit whose changes weigh more than an item may (400 KB: here 150 entries of
/// about 30 KB) keeps them in parts, and applies whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_commit_heavier_than_an_item_keeps_its_redo_in_parts() {
    use aws_sdk_dynamodb::types::AttributeValue;
    use contract::fixtures::*;
    use mq_store::QueueStore;

    let store = fresh_dynamo().await;
    let q = queue("acme", "rocket", "main");
    store.create_queue(&q).await.unwrap();
    let empty = store.load(&q.id).await.unwrap().unwrap();
    let mut many = empty.clone();
    many.entries = (1..=150).map(|pr| Arc::new(big_entry(pr))).collect();
    store
        .commit(&commit(&empty, many.clone(), vec![], vec![], T0))
        .await
        .unwrap();
    let loaded = store.load(&q.id).await.unwrap().unwrap();
    assert_eq!(loaded.entries, many.entries);

    let parts = store
        .client()
        .query()
        .table_name(&store.tables().queues)
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(
            ":pk",
            AttributeValue::S(mq_store::dynamo::keys::redo_pk(q.id.as_str())),
        )
        .projection_expression("sk, expires_at")
        .send()
        .await
        .unwrap();
    assert!(
        parts.count() >= 2,
        "the redo of about 4.5 MB is kept in parts, not in the queue item"
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    for part in parts.items() {
        let expires: u64 = part["expires_at"].as_n().unwrap().parse().unwrap();
        assert!(
            (now..=now + 2 * 86_400).contains(&expires),
            "the commit is whole: its parts expire within a day, not {expires}"
        );
    }
}

/// Sets the copy of the queue's version that commits write in `#VERSION`.
async fn set_version_copy(store: &DynamoStore, id: &mq_core::ids::QueueId, version: u64) {
    use aws_sdk_dynamodb::types::AttributeValue;
    use mq_store::dynamo::keys::{VERSION, VERSION_SK};
    let item = std::collections::HashMap::from([
        ("pk".to_owned(), AttributeValue::S(id.as_str().to_owned())),
        ("sk".to_owned(), AttributeValue::S(VERSION_SK.to_owned())),
        (VERSION.to_owned(), AttributeValue::N(version.to_string())),
    ]);
    store
        .client()
        .put_item()
        .table_name(&store.tables().queues)
        .set_item(Some(item))
        .send()
        .await
        .unwrap();
}

/// A query reads a queue's items one by one: a commit landing while it reads could give the
/// entries of one version with the queue item of the next. Each commit writes the version in
/// `#VERSION` too, read first: a read whose two versions differ (as here, set by hand, as a
/// commit landing between them leaves it) is read again. A second read showing the same
/// version of the queue item is whole, whatever `#VERSION` says: one left behind by an
/// earlier version of the code (which commits without writing it) costs one read, and never
/// makes the queue unreadable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_of_two_versions_of_a_queue_is_read_again() {
    use contract::fixtures::*;
    use mq_core::entry::EntryState;
    use mq_store::QueueStore;

    let (store, watch) = watched_dynamo().await;
    let q = queue("acme", "rocket", "main");
    store.create_queue(&q).await.unwrap();
    let empty = store.load(&q.id).await.unwrap().unwrap();
    let mut one = empty.clone();
    one.entries = vec![Arc::new(entry(1, EntryState::Pending, T0))];
    store
        .commit(&commit(&empty, one, vec![], vec![], T0))
        .await
        .unwrap();
    assert!(
        partition_keys(&store, &q.id)
            .await
            .contains(&"#VERSION".to_owned())
    );

    set_version_copy(&store, &q.id, 2).await;
    watch.queries.store(0, Ordering::SeqCst);
    let loaded = store.load(&q.id).await.unwrap().unwrap();
    assert_eq!((loaded.queue.version, loaded.entries.len()), (1, 1));
    assert_eq!(
        watch.queries.load(Ordering::SeqCst),
        2,
        "the versions differ: read again"
    );
    set_version_copy(&store, &q.id, 1).await;
    watch.queries.store(0, Ordering::SeqCst);
    store.load(&q.id).await.unwrap().unwrap();
    assert_eq!(
        watch.queries.load(Ordering::SeqCst),
        1,
        "they agree: one read"
    );
}

/// What a store's client sent, and what it refuses: the `Query` requests are counted, and
/// every `BatchWriteItem` is refused while `refuse_batch_writes` (as a throttled or failing
/// DynamoDB may).
#[derive(Debug, Default, Clone)]
struct Watch {
    queries: Arc<AtomicU32>,
    refuse_batch_writes: Arc<std::sync::atomic::AtomicBool>,
}

impl aws_sdk_dynamodb::config::Intercept for Watch {
    fn name(&self) -> &'static str {
        "Watch"
    }

    fn read_before_transmit(
        &self,
        context: &aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef<'_>,
        _components: &aws_sdk_dynamodb::config::RuntimeComponents,
        _cfg: &mut aws_sdk_dynamodb::config::ConfigBag,
    ) -> Result<(), aws_sdk_dynamodb::error::BoxError> {
        let target = context.request().headers().get("x-amz-target");
        if target.is_some_and(|t| t.ends_with(".Query")) {
            self.queries.fetch_add(1, Ordering::SeqCst);
        }
        let refusing = self.refuse_batch_writes.load(Ordering::SeqCst);
        if refusing && target.is_some_and(|t| t.ends_with(".BatchWriteItem")) {
            return Err("BatchWriteItem refused".into());
        }
        Ok(())
    }
}

/// A store with tables of its own whose client is watched.
async fn watched_dynamo() -> (DynamoStore, Watch) {
    let watch = Watch::default();
    let plain = fresh_dynamo().await;
    let config = plain
        .client()
        .config()
        .to_builder()
        .interceptor(watch.clone())
        .build();
    let client = aws_sdk_dynamodb::Client::from_conf(config);
    (DynamoStore::new(client, plain.tables().clone()), watch)
}

/// A commit concluding 45 pull requests: their history does not all fit its transaction,
/// and what is left is written after it. When those writes fail (the commit has landed),
/// every pull request's latest conclusion, which `getSubmittedPullRequest` and
/// `cancelPullRequest` answer from, was in the transaction: none is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latest_conclusions_go_into_the_commit_before_the_rest_of_its_history() {
    use contract::fixtures::*;
    use mq_core::entry::EntryState;
    use mq_store::QueueStore;

    let (store, watch) = watched_dynamo().await;
    let q = queue("acme", "rocket", "main");
    store.create_queue(&q).await.unwrap();
    let empty = store.load(&q.id).await.unwrap().unwrap();
    let mut line = empty.clone();
    line.entries = (1..=45)
        .map(|pr| Arc::new(entry(pr, EntryState::Testing, T0)))
        .collect();
    store
        .commit(&commit(&empty, line, vec![], vec![], T0))
        .await
        .unwrap();
    let tested = store.load(&q.id).await.unwrap().unwrap();
    let t1 = T0.plus_millis(60_000);
    let merged: Vec<_> = tested
        .entries
        .iter()
        .map(|e| concluded((**e).clone(), EntryState::Merged, t1))
        .collect();
    let mut done = tested.clone();
    done.entries.clear();

    watch.refuse_batch_writes.store(true, Ordering::SeqCst);
    let landed = store
        .commit(&commit(&tested, done, merged, vec![], t1))
        .await;
    assert!(landed.is_err(), "the writes after the transaction failed");
    watch.refuse_batch_writes.store(false, Ordering::SeqCst);
    assert_eq!(store.load(&q.id).await.unwrap().unwrap().queue.version, 2);
    for pr in 1..=45 {
        let (_, latest) = store.load_entry(&q.id, pr).await.unwrap().unwrap();
        assert_eq!(
            latest.map(|e| e.state),
            Some(EntryState::Merged),
            "#{pr}: its latest conclusion was written with the commit"
        );
    }
}

/// An outbox item of a kind this version does not know (written by a newer version, during a
/// deployment or after a rollback) does not make the queue unreadable: it is left out of the
/// snapshot, commits go on, and the item stays in the table as it was, for the version that
/// wrote it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_effect_of_a_newer_version_is_left_in_the_table_while_the_queue_goes_on() {
    use aws_sdk_dynamodb::types::AttributeValue;
    use contract::fixtures::*;
    use mq_core::entry::EntryState;
    use mq_store::QueueStore;
    use mq_store::dynamo::keys::{PK, SK, effect_sk};

    let store = fresh_dynamo().await;
    let q = queue("acme", "rocket", "main");
    store.create_queue(&q).await.unwrap();
    let future = future_effect(&store, &q.id).await;
    let seen = store.load(&q.id).await.unwrap().expect("the queue reads");
    assert!(seen.outbox.is_empty(), "{:?}", seen.outbox);
    let mut next = seen.clone();
    next.entries
        .push(std::sync::Arc::new(entry(1, EntryState::Pending, T0)));
    store
        .commit(&commit(&seen, next, vec![], vec![], T0))
        .await
        .unwrap();
    let after = store.load(&q.id).await.unwrap().unwrap();
    assert_eq!(after.entries.len(), 1, "the commit landed");
    let kept = store
        .client()
        .get_item()
        .table_name(&store.tables().queues)
        .key(PK, AttributeValue::S(q.id.as_str().to_owned()))
        .key(SK, AttributeValue::S(effect_sk("future-1")))
        .send()
        .await
        .unwrap()
        .item
        .expect("the item is still there");
    assert_eq!(kept, future);
}

/// Deleting the queue deletes such an item too: a queue created again on the same repository
/// and branch (the same id) does not find it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_queue_deletes_the_effects_this_version_cannot_read() {
    use contract::fixtures::*;
    use mq_store::QueueStore;

    let store = fresh_dynamo().await;
    let q = queue("acme", "rocket", "main");
    store.create_queue(&q).await.unwrap();
    future_effect(&store, &q.id).await;
    let seen = store.load(&q.id).await.unwrap().unwrap();
    store.delete_queue(&seen).await.unwrap();
    let left = partition_keys(&store, &q.id).await;
    assert!(left.is_empty(), "{left:?}");
}

/// Puts an outbox item of an effect kind this version does not know into queue `id`'s
/// partition, as a newer version would write it; returns the item.
async fn future_effect(
    store: &DynamoStore,
    id: &mq_core::ids::QueueId,
) -> std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue> {
    put_effect(store, id, "future-1", "rebase_stack", 0).await
}

/// Puts outbox item `effect_id` of kind `kind` (for pull request 7), created at `created_at`,
/// into queue `id`'s partition; returns the item.
async fn put_effect(
    store: &DynamoStore,
    id: &mq_core::ids::QueueId,
    effect_id: &str,
    kind: &str,
    created_at: i64,
) -> std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue> {
    use aws_sdk_dynamodb::types::AttributeValue;
    use mq_store::dynamo::keys::{PK, SK, effect_sk};
    use std::collections::HashMap;

    let n = |v: i64| AttributeValue::N(v.to_string());
    let effect = HashMap::from([
        ("effect".to_owned(), AttributeValue::S(kind.into())),
        ("pr".to_owned(), n(7)),
    ]);
    let item = HashMap::from([
        (PK.to_owned(), AttributeValue::S(id.as_str().to_owned())),
        (SK.to_owned(), AttributeValue::S(effect_sk(effect_id))),
        ("id".to_owned(), AttributeValue::S(effect_id.into())),
        ("effect".to_owned(), AttributeValue::M(effect)),
        ("created_at".to_owned(), n(created_at)),
        ("attempts".to_owned(), n(0)),
        ("next_attempt_at".to_owned(), n(0)),
        ("last_error".to_owned(), AttributeValue::Null(true)),
        ("held".to_owned(), AttributeValue::Bool(false)),
    ]);
    store
        .client()
        .put_item()
        .table_name(&store.tables().queues)
        .set_item(Some(item.clone()))
        .send()
        .await
        .unwrap();
    item
}

/// A queue whose outbox holds more items than one transaction deletes (after a bulk cancel
/// while the Git host failed) is deleted whole; an outbox item older than its queue (left by a
/// deleted queue of the same branch) is not carried out by the new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_with_a_large_outbox_is_deleted_whole_and_old_items_are_not_inherited() {
    use contract::fixtures::*;
    use mq_store::QueueStore;

    let store = fresh_dynamo().await;
    let q = queue("acme", "rocket", "main");
    store.create_queue(&q).await.unwrap();
    let at = q.created_at.millis();
    for i in 0..150 {
        put_effect(&store, &q.id, &format!("e{i}"), "refresh_pull_request", at).await;
    }
    let seen = store.load(&q.id).await.unwrap().unwrap();
    assert_eq!(seen.outbox.len(), 150);
    store.delete_queue(&seen).await.unwrap();
    let left = partition_keys(&store, &q.id).await;
    assert!(left.is_empty(), "{} items left", left.len());

    let again = queue("acme", "rocket", "main");
    store.create_queue(&again).await.unwrap();
    let then = again.created_at.millis() - 5 * 60_000;
    put_effect(&store, &again.id, "old", "refresh_pull_request", then).await;
    put_effect(
        &store,
        &again.id,
        "new",
        "refresh_pull_request",
        again.created_at.millis(),
    )
    .await;
    let seen = store.load(&again.id).await.unwrap().unwrap();
    let ids: Vec<&str> = seen.outbox.iter().map(|x| x.id.as_str()).collect();
    assert_eq!(ids, ["new"]);
}

/// The metrics' read of an organisation's queues leaves out a queue it cannot read (here an
/// entry item this version cannot decode) and names it, with the error, beside the facts of
/// the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_facts_name_a_queue_they_cannot_read_and_read_the_others() {
    use aws_sdk_dynamodb::types::AttributeValue;
    use contract::fixtures::*;
    use mq_store::QueueStore;
    use mq_store::dynamo::keys::{PK, SK, entry_sk};
    use std::collections::HashMap;

    let store = fresh_dynamo().await;
    let rocket = queue("acme", "rocket", "main");
    let probe = queue("acme", "probe", "main");
    store.create_queue(&rocket).await.unwrap();
    store.create_queue(&probe).await.unwrap();
    let undecodable = HashMap::from([
        (
            PK.to_owned(),
            AttributeValue::S(rocket.id.as_str().to_owned()),
        ),
        (SK.to_owned(), AttributeValue::S(entry_sk(7))),
        ("state".to_owned(), AttributeValue::N("5".into())),
    ]);
    store
        .client()
        .put_item()
        .table_name(&store.tables().queues)
        .set_item(Some(undecodable))
        .send()
        .await
        .unwrap();

    let facts = store
        .metrics_facts(&org("acme"), None, T0.plus_millis(60_000))
        .await
        .expect("one unreadable queue does not fail the read");
    let read: Vec<_> = facts.read.iter().map(|f| &f.snapshot.queue.id).collect();
    assert_eq!(read, [&probe.id]);
    let [(unreadable, error)] = &facts.unreadable[..] else {
        panic!("one queue unreadable: {:?}", facts.unreadable);
    };
    assert_eq!(unreadable.id, rocket.id);
    assert!(matches!(error, StoreError::Internal(_)), "{error:?}");
}

type BeforeDeserialization<'a> =
    aws_sdk_dynamodb::config::interceptors::BeforeDeserializationInterceptorContextMut<'a>;

/// Answers `BatchWriteItem`s as a partition written faster than it takes does: all but the
/// first of each call's items come back unprocessed (DynamoDB wrote them all here; writing
/// them again changes nothing).
#[derive(Debug, Default, Clone)]
struct Throttle {
    request: Arc<std::sync::Mutex<Option<serde_json::Value>>>,
}

impl aws_sdk_dynamodb::config::Intercept for Throttle {
    fn name(&self) -> &'static str {
        "Throttle"
    }

    fn read_before_transmit(
        &self,
        context: &aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef<'_>,
        _components: &aws_sdk_dynamodb::config::RuntimeComponents,
        _cfg: &mut aws_sdk_dynamodb::config::ConfigBag,
    ) -> Result<(), aws_sdk_dynamodb::error::BoxError> {
        let request = context.request();
        let target = request.headers().get("x-amz-target");
        if target.is_some_and(|t| t.ends_with(".BatchWriteItem")) {
            let body = request.body().bytes().unwrap_or_default();
            *self.request.lock().unwrap() = serde_json::from_slice(body).ok();
        }
        Ok(())
    }

    fn modify_before_deserialization(
        &self,
        context: &mut BeforeDeserialization<'_>,
        _components: &aws_sdk_dynamodb::config::RuntimeComponents,
        _cfg: &mut aws_sdk_dynamodb::config::ConfigBag,
    ) -> Result<(), aws_sdk_dynamodb::error::BoxError> {
        let Some(request) = self.request.lock().unwrap().take() else {
            return Ok(());
        };
        let mut unprocessed = serde_json::Map::new();
        let tables = request["RequestItems"].as_object().into_iter().flatten();
        for (table, writes) in tables {
            let writes = writes.as_array().cloned().unwrap_or_default();
            if writes.len() > 1 {
                unprocessed.insert(table.clone(), writes[1..].to_vec().into());
            }
        }
        let answer = serde_json::json!({ "UnprocessedItems": unprocessed }).to_string();
        *context.response_mut().body_mut() = aws_smithy_types::body::SdkBody::from(answer);
        Ok(())
    }
}

/// An upload's raw results written to a partition that takes one item per call: each call
/// writes some, so the writes go on until all are written, however many calls that takes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_left_unprocessed_go_on_while_each_call_writes_some() {
    use mq_core::health::Outcome;
    use mq_store::{RawResult, TestHealthStore};

    let plain = fresh_dynamo().await;
    let config = plain
        .client()
        .config()
        .to_builder()
        .interceptor(Throttle::default())
        .build();
    let client = aws_sdk_dynamodb::Client::from_conf(config);
    let store = DynamoStore::new(client, plain.tables().clone());
    let upload = contract::health::upload("build-1");
    store.claim_upload(&upload).await.unwrap();
    let results: Vec<RawResult> = (0..12_000u128)
        .map(|i| RawResult {
            id: uuid::Uuid::from_u128(i),
            outcome: Outcome::Passed,
            attempts: 1,
        })
        .collect();
    store
        .put_raw_results(&upload, &results)
        .await
        .expect("every call wrote some: the writes went on");
    let read = plain.raw_results(&upload.org, upload.key).await.unwrap();
    assert_eq!(read, results);
}

/// A queue item this version cannot read whole (a newer version wrote a state it does not
/// know, then was rolled back): the organisation's listing still names it, its figures are
/// unreadable, and the other queue's figures are read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_item_this_version_cannot_read_hides_no_other_queue() {
    use aws_sdk_dynamodb::types::AttributeValue;
    use contract::fixtures::*;
    use mq_store::QueueStore;

    let store = fresh_dynamo().await;
    let rocket = queue("acme", "rocket", "main");
    let probe = queue("acme", "probe", "main");
    store.create_queue(&rocket).await.unwrap();
    store.create_queue(&probe).await.unwrap();
    store
        .client()
        .update_item()
        .table_name(&store.tables().queues)
        .set_key(Some(std::collections::HashMap::from([
            (
                "pk".to_owned(),
                AttributeValue::S(rocket.id.as_str().to_owned()),
            ),
            ("sk".to_owned(), AttributeValue::S("QUEUE".to_owned())),
        ])))
        .update_expression("SET #state = :frozen")
        .expression_attribute_names("#state", "state")
        .expression_attribute_values(":frozen", AttributeValue::S("frozen".to_owned()))
        .send()
        .await
        .unwrap();

    let mut listed: Vec<_> = store
        .queues_of_org(&rocket.org)
        .await
        .expect("the listing is read")
        .into_iter()
        .map(|q| (q.id, q.repo.full_name(), q.branch))
        .collect();
    listed.sort();
    let mut expected = vec![
        (
            rocket.id.clone(),
            rocket.repo.full_name(),
            rocket.branch.clone(),
        ),
        (
            probe.id.clone(),
            probe.repo.full_name(),
            probe.branch.clone(),
        ),
    ];
    expected.sort();
    assert_eq!(listed, expected);
    let facts = store
        .metrics_facts(&rocket.org, None, T0.plus_millis(60_000))
        .await
        .expect("the figures are read");
    let read: Vec<_> = facts
        .read
        .iter()
        .map(|f| f.snapshot.queue.id.clone())
        .collect();
    assert_eq!(read, vec![probe.id.clone()]);
    let unreadable: Vec<_> = facts.unreadable.iter().map(|(q, _)| q.id.clone()).collect();
    assert_eq!(unreadable, vec![rocket.id.clone()]);
}
