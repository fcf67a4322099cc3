//! The store contract: scenarios every adapter must pass. Each adapter's test file provides a
//! fresh, empty store per scenario and instantiates them with `contract_tests!`.

pub mod fixtures;
pub mod health;
pub mod history;
pub mod idempotency;

pub use health::*;
pub use history::*;
pub use idempotency::*;

use fixtures::*;
use mq_core::entry::EntryState;
use mq_core::history::History;
use mq_core::ids::{QueueId, Sha};
use mq_core::metrics::Window;
use mq_core::run::{RunStatus, TestRun};
use mq_core::snapshot::{Commit, QueueSnapshot};
use mq_core::time::Timestamp;
use mq_store::{MetricsFacts, Store, StoreError, TokenRecord};
use std::sync::Arc;

/// Declares one `#[tokio::test]` per scenario, each with a fresh store from `$make`.
#[macro_export]
macro_rules! contract_tests {
    ($make:expr; $($name:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let store = $make.await;
                contract::$name(store).await;
            }
        )+
    };
}

/// Every scenario, for `contract_tests!`.
#[macro_export]
macro_rules! all_contract_tests {
    ($make:expr) => {
        contract_tests!($make;
            create_then_load,
            create_twice_is_refused,
            load_of_unknown_queue_is_none,
            commit_applies_every_change_and_bumps_the_version,
            a_shared_snapshot_follows_every_commit,
            stale_commit_conflicts_and_changes_nothing,
            commit_to_deleted_queue_fails,
            concluded_entries_become_history,
            latest_entry_prefers_the_active_one,
            a_pull_request_concluded_twice_in_one_commit_keeps_the_later,
            history_of_a_deleted_queue_is_not_inherited,
            runs_are_found_active_and_finished,
            finished_runs_are_read_by_time_and_queue,
            runs_are_found_by_test_branch_sha,
            delete_refuses_a_queue_with_entries,
            delete_refuses_even_with_a_stale_empty_snapshot,
            delete_removes_every_live_item,
            a_deleted_queue_s_snapshot_changes_nothing_of_its_successor,
            queues_are_listed_by_organisation_and_repository,
            queues_with_work_are_listed_until_idle,
            lease_is_exclusive_until_it_expires,
            tokens_are_stored_listed_and_revoked,
            owners_are_linked_to_one_organisation,
            concurrent_commits_lose_no_update,
            a_committed_snapshot_reads_back_as_the_engine_left_it,
            commits_larger_than_a_transaction_apply_whole,
            uploaded_targets_are_kept_per_pull_request,
            uploaded_targets_recorded_by_a_commit_share_its_fate,
            restarts_are_kept_as_history,
            metrics_facts_are_each_queues_snapshot_and_last_hour,
            health_settings_are_versioned,
            test_case_writes_are_conditional_on_the_version,
            repository_items_are_read_with_test_cases,
            test_cases_heavier_than_a_transaction_are_written_whole,
            lists_are_in_id_order_and_page_both_ways,
            a_status_change_moves_a_test_between_lists,
            quarantine_list_can_hold_overrides_only,
            uploads_are_claimed_once_and_keep_raw_results,
            flaky_tests_due_for_recovery_are_found,
            concurrent_result_merges_lose_nothing,
            idempotency_keys_are_claimed_once_and_keep_the_response,
            idempotency_claims_are_released_or_taken_over_when_stale,
            concurrent_idempotency_claims_have_one_winner,
            conclusions_are_read_whole_newest_first,
            finished_runs_are_read_whole_newest_first,
            summaries_are_the_whole_history_less_its_heavy_parts,
        );
    };
}

async fn create(store: &dyn Store, repo: &str) -> QueueSnapshot {
    let q = queue("acme", repo, "main");
    store.create_queue(&q).await.unwrap();
    store
        .load(&q.id)
        .await
        .unwrap()
        .expect("created queue loads")
}

pub async fn create_then_load(store: Arc<dyn Store>) {
    let snap = create(&*store, "rocket").await;
    assert_eq!(snap.queue, queue("acme", "rocket", "main"));
    assert_eq!(snap.queue.version, 0);
    assert!(snap.entries.is_empty() && snap.runs.is_empty() && snap.outbox.is_empty());
}

pub async fn create_twice_is_refused(store: Arc<dyn Store>) {
    create(&*store, "rocket").await;
    let again = store
        .create_queue(&queue("other-org", "rocket", "main"))
        .await;
    assert_eq!(again, Err(StoreError::AlreadyExists));
    let loaded = store
        .load(&queue("x", "rocket", "main").id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        loaded.queue.org.as_str(),
        "acme",
        "the first queue is untouched"
    );
}

pub async fn load_of_unknown_queue_is_none(store: Arc<dyn Store>) {
    let id = queue("acme", "nothing", "main").id;
    assert!(store.load(&id).await.unwrap().is_none());
    assert!(store.load_queue(&id).await.unwrap().is_none());
    assert!(store.load_entry(&id, 1).await.unwrap().is_none());
    assert!(store.load_run(&id, "r1").await.unwrap().is_none());
}

pub async fn commit_applies_every_change_and_bumps_the_version(store: Arc<dyn Store>) {
    let before = create(&*store, "rocket").await;
    let mut after = before.clone();
    after.queue.config.concurrency = 3;
    after.entries = vec![
        Arc::new(entry(2, EntryState::Testing, T0)),
        Arc::new(entry(1, EntryState::Pending, T0)),
    ];
    after.runs = vec![run("r1", &[2], Some("abc"), T0)];
    after.outbox = vec![effect("x2", T0.plus_millis(1)), effect("x1", T0)];
    store
        .commit(&commit(&before, after.clone(), vec![], vec![], T0))
        .await
        .unwrap();

    let loaded = store.load(&before.queue.id).await.unwrap().unwrap();
    assert_eq!(loaded.queue.version, 1);
    assert_eq!(loaded.queue.config.concurrency, 3);
    let prs: Vec<u32> = loaded.entries.iter().map(|e| e.pr).collect();
    assert_eq!(prs, [1, 2], "entries come back in submission order");
    assert_eq!(loaded.entries[1], after.entries[0]);
    assert_eq!(loaded.runs, after.runs);
    let effects: Vec<&str> = loaded.outbox.iter().map(|x| x.id.as_str()).collect();
    assert_eq!(effects, ["x1", "x2"], "effects come back in emission order");

    // A second commit changes one entry, removes a run and an effect.
    let mut next = loaded.clone();
    Arc::make_mut(&mut next.entries[0]).state = EntryState::Testing;
    next.runs.clear();
    next.outbox.retain(|x| x.id == "x2");
    store
        .commit(&commit(&loaded, next.clone(), vec![], vec![], T0))
        .await
        .unwrap();
    let reloaded = store.load(&before.queue.id).await.unwrap().unwrap();
    assert_eq!(reloaded.queue.version, 2);
    assert_eq!(reloaded.entries, next.entries);
    assert!(reloaded.runs.is_empty());
    assert_eq!(reloaded.outbox.len(), 1);
}

pub async fn a_shared_snapshot_follows_every_commit(store: Arc<dyn Store>) {
    let before = create(&*store, "rocket").await;
    let id = before.queue.id.clone();
    let shared = |store: Arc<dyn Store>| {
        let id = id.clone();
        async move { store.load_shared(&id).await.unwrap() }
    };
    let first = shared(store.clone()).await.expect("created queue loads");
    assert_eq!(*first, before);

    let mut after = before.clone();
    after.entries = vec![Arc::new(entry(1, EntryState::Pending, T0))];
    after.runs = vec![run("r1", &[1], Some("abc"), T0)];
    let commit_one = commit(&before, after, vec![], vec![], T0);
    store.commit(&commit_one).await.unwrap();
    let second = shared(store.clone()).await.unwrap();
    assert_eq!(second.queue.version, 1, "a commit is seen at once");
    assert_eq!(Some(&*second), store.load(&id).await.unwrap().as_ref());
    assert_eq!(
        *first, before,
        "a snapshot handed out earlier does not change"
    );

    let stale = store.commit(&commit_one).await;
    assert_eq!(stale, Err(StoreError::Conflict));
    assert_eq!(shared(store.clone()).await.unwrap(), second);

    let mut emptied = (*second).clone();
    emptied.entries.clear();
    emptied.runs.clear();
    let commit_two = commit(&second, emptied, vec![], vec![], T0);
    store.commit(&commit_two).await.unwrap();
    let empty = store.load(&id).await.unwrap().unwrap();
    store.delete_queue(&empty).await.unwrap();
    assert!(
        shared(store.clone()).await.is_none(),
        "a deleted queue is gone"
    );
}

pub async fn stale_commit_conflicts_and_changes_nothing(store: Arc<dyn Store>) {
    let before = create(&*store, "rocket").await;
    let mut first = before.clone();
    first.entries = vec![Arc::new(entry(1, EntryState::Pending, T0))];
    store
        .commit(&commit(&before, first, vec![], vec![], T0))
        .await
        .unwrap();

    let mut stale = before.clone();
    stale.entries = vec![Arc::new(entry(2, EntryState::Pending, T0))];
    stale.queue.config.concurrency = 9;
    let result = store
        .commit(&commit(&before, stale, vec![], vec![], T0))
        .await;
    assert_eq!(result, Err(StoreError::Conflict));

    let loaded = store.load(&before.queue.id).await.unwrap().unwrap();
    assert_eq!(loaded.queue.version, 1);
    assert_eq!(loaded.queue.config.concurrency, 1);
    let prs: Vec<u32> = loaded.entries.iter().map(|e| e.pr).collect();
    assert_eq!(prs, [1]);
}

pub async fn commit_to_deleted_queue_fails(store: Arc<dyn Store>) {
    let before = create(&*store, "rocket").await;
    store.delete_queue(&before).await.unwrap();
    let mut after = before.clone();
    after.entries = vec![Arc::new(entry(1, EntryState::Pending, T0))];
    let result = store
        .commit(&commit(&before, after, vec![], vec![], T0))
        .await;
    assert!(
        matches!(result, Err(StoreError::Conflict | StoreError::NotFound)),
        "{result:?}"
    );
    assert!(store.load(&before.queue.id).await.unwrap().is_none());
}

pub async fn concluded_entries_become_history(store: Arc<dyn Store>) {
    let before = create(&*store, "rocket").await;
    let id = before.queue.id.clone();
    let mut with_entries = before.clone();
    with_entries.entries = vec![
        Arc::new(entry(1, EntryState::Testing, T0)),
        Arc::new(entry(2, EntryState::Pending, T0)),
    ];
    store
        .commit(&commit(&before, with_entries.clone(), vec![], vec![], T0))
        .await
        .unwrap();
    let snap = store.load(&id).await.unwrap().unwrap();

    let t1 = T0.plus_millis(60_000);
    // Attributes set beyond the defaults, so that an item read back in part would show.
    let mut tested = (*snap.entries[0]).clone();
    tested.ready_at = Some(T0.plus_millis(1_000));
    tested.first_tested_at = Some(T0.plus_millis(2_000));
    tested.ci_runs = 2;
    let merged = concluded(tested, EntryState::Merged, t1);
    let mut after = snap.clone();
    after.entries.remove(0);
    store
        .commit(&commit(&snap, after, vec![merged.clone()], vec![], t1))
        .await
        .unwrap();

    let live = store.load(&id).await.unwrap().unwrap();
    assert_eq!(live.entries.iter().map(|e| e.pr).collect::<Vec<_>>(), [2]);
    let alone = store
        .load_queue(&id)
        .await
        .unwrap()
        .expect("the queue item");
    assert_eq!(alone, live.queue, "the queue item as committed");
    let (queue, latest) = store.load_entry(&id, 1).await.unwrap().unwrap();
    assert_eq!(queue.id, id);
    assert_eq!(latest, Some(merged.clone()));
    let concluded = |window| store.conclusions_between(&id, window, 10);
    let window = concluded(Window::between(t1, t1.plus_millis(1))).await;
    assert_eq!(window.unwrap(), vec![merged]);
    let before = concluded(Window::between(T0, t1)).await;
    assert!(before.unwrap().is_empty(), "end is exclusive");
    let after = concluded(Window::between(t1.plus_millis(1), t1.plus_millis(9))).await;
    assert!(after.unwrap().is_empty());
}

pub async fn latest_entry_prefers_the_active_one(store: Arc<dyn Store>) {
    let before = create(&*store, "rocket").await;
    let id = before.queue.id.clone();
    let t1 = T0.plus_millis(1_000);
    let old = concluded(entry(7, EntryState::Testing, T0), EntryState::Failed, t1);
    let mut first = before.clone();
    first.entries = vec![];
    store
        .commit(&commit(&before, first, vec![old.clone()], vec![], t1))
        .await
        .unwrap();
    assert_eq!(
        store.load_entry(&id, 7).await.unwrap().unwrap().1,
        Some(old)
    );

    let snap = store.load(&id).await.unwrap().unwrap();
    let again = entry(7, EntryState::Pending, T0.plus_millis(2_000));
    let mut second = snap.clone();
    second.entries = vec![Arc::new(again.clone())];
    store
        .commit(&commit(&snap, second, vec![], vec![], t1))
        .await
        .unwrap();
    assert_eq!(
        store.load_entry(&id, 7).await.unwrap().unwrap().1,
        Some(again)
    );
    assert_eq!(store.load_entry(&id, 8).await.unwrap().unwrap().1, None);
}

/// A resubmission with a new head cancels the old entry (`new_commits`) and, its head
/// conflicting with the target, fails the new one in the same step: one commit concludes two
/// entries of one pull request. DynamoDB refuses two writes of one item in a transaction;
/// the later conclusion is the pull request's latest, and both are in its history.
pub async fn a_pull_request_concluded_twice_in_one_commit_keeps_the_later(store: Arc<dyn Store>) {
    let before = create(&*store, "rocket").await;
    let id = before.queue.id.clone();
    let mut with_old = before.clone();
    with_old.entries = vec![Arc::new(entry(7, EntryState::Pending, T0))];
    store
        .commit(&commit(&before, with_old, vec![], vec![], T0))
        .await
        .unwrap();
    let snap = store.load(&id).await.unwrap().unwrap();

    let t1 = T0.plus_millis(1_000);
    let cancelled = concluded(entry(7, EntryState::Pending, T0), EntryState::Cancelled, t1);
    let failed = concluded(entry(7, EntryState::NotReady, t1), EntryState::Failed, t1);
    let mut after = snap.clone();
    after.entries.clear();
    store
        .commit(&commit(
            &snap,
            after,
            vec![cancelled.clone(), failed.clone()],
            vec![],
            t1,
        ))
        .await
        .expect("the commit lands");
    let (_, latest) = store.load_entry(&id, 7).await.unwrap().unwrap();
    assert_eq!(latest, Some(failed.clone()));
    let window = Window::between(t1, t1.plus_millis(1));
    let mut history = store.conclusions_between(&id, window, 10).await.unwrap();
    history.sort_by(|a, b| a.id.cmp(&b.id));
    assert_eq!(history, vec![cancelled, failed]);
}

pub async fn history_of_a_deleted_queue_is_not_inherited(store: Arc<dyn Store>) {
    let before = create(&*store, "rocket").await;
    let id = before.queue.id.clone();
    let done = concluded(
        entry(3, EntryState::Testing, T0),
        EntryState::Merged,
        T0.plus_millis(5),
    );
    let mut after = before.clone();
    after.entries.clear();
    store
        .commit(&commit(&before, after, vec![done], vec![], T0))
        .await
        .unwrap();
    let snap = store.load(&id).await.unwrap().unwrap();
    store.delete_queue(&snap).await.unwrap();

    let mut reborn = queue("acme", "rocket", "main");
    reborn.created_at = T0.plus_millis(10_000);
    store.create_queue(&reborn).await.unwrap();
    let (_, latest) = store.load_entry(&id, 3).await.unwrap().unwrap();
    assert_eq!(latest, None);
}

pub async fn runs_are_found_active_and_finished(store: Arc<dyn Store>) {
    let before = create(&*store, "rocket").await;
    let id = before.queue.id.clone();
    let mut after = before.clone();
    after.runs = vec![run("r1", &[1], Some("aaa"), T0), run("r2", &[2], None, T0)];
    store
        .commit(&commit(&before, after, vec![], vec![], T0))
        .await
        .unwrap();
    let snap = store.load(&id).await.unwrap().unwrap();
    assert_eq!(
        store
            .load_run(&id, "r2")
            .await
            .unwrap()
            .unwrap()
            .1
            .unwrap()
            .id,
        "r2"
    );

    let t1 = T0.plus_millis(90_000);
    let mut started = snap.runs[0].clone();
    started.started_at = Some(T0.plus_millis(30_000));
    let done = finished(started, RunStatus::Succeeded, t1);
    let mut next = snap.clone();
    next.runs.remove(0);
    store
        .commit(&commit(&snap, next, vec![], vec![done.clone()], t1))
        .await
        .unwrap();

    let (_, found) = store.load_run(&id, "r1").await.unwrap().unwrap();
    assert_eq!(found, Some(done.clone()));
    assert_eq!(store.load_run(&id, "nope").await.unwrap().unwrap().1, None);
    let finished = |window| store.finished_runs_between(&id, window, 10);
    let window = finished(Window::between(T0, t1.plus_millis(1))).await;
    assert_eq!(window.unwrap(), vec![done]);
    let before = finished(Window::between(T0, t1)).await;
    assert!(before.unwrap().is_empty(), "end is exclusive");
}

/// The window of finished runs is the queue's own, newest first, and a run recorded again is
/// found once, at its new time.
pub async fn finished_runs_are_read_by_time_and_queue(store: Arc<dyn Store>) {
    let rocket = create(&*store, "rocket").await;
    let other = create(&*store, "other").await;
    let id = rocket.queue.id.clone();
    let minute = |n: i64| T0.plus_millis(n * 60_000);
    let done =
        |id: &str, at: Timestamp| finished(run(id, &[1], None, T0), RunStatus::Succeeded, at);
    let record = |before: &QueueSnapshot, runs: Vec<TestRun>, at: Timestamp| {
        commit(before, before.clone(), vec![], runs, at)
    };
    let first = vec![
        done("late", minute(5)),
        done("early", minute(2)),
        done("moved", minute(3)),
    ];
    store
        .commit(&record(&rocket, first, minute(5)))
        .await
        .unwrap();
    store
        .commit(&record(&other, vec![done("theirs", minute(3))], minute(5)))
        .await
        .unwrap();
    let rocket = store.load(&id).await.unwrap().unwrap();
    store
        .commit(&record(&rocket, vec![done("moved", minute(9))], minute(9)))
        .await
        .unwrap();

    // Told apart by when they finished: moved, late, early.
    let times = |runs: Vec<TestRun>| runs.into_iter().map(|r| r.finished_at);
    let all = store
        .finished_runs_between(&id, Window::between(T0, minute(10)), 10)
        .await
        .unwrap();
    assert!(times(all).eq([9, 5, 2].map(|m| Some(minute(m)))));
    let middle = store
        .finished_runs_between(&id, Window::between(minute(3), minute(9)), 10)
        .await
        .unwrap();
    assert!(
        times(middle).eq([Some(minute(5))]),
        "from is inclusive, to exclusive; theirs is another queue's"
    );
}

pub async fn runs_are_found_by_test_branch_sha(store: Arc<dyn Store>) {
    let before = create(&*store, "rocket").await;
    let mut after = before.clone();
    after.runs = vec![run("r1", &[1], Some("feed"), T0), run("r2", &[2], None, T0)];
    store
        .commit(&commit(&before, after, vec![], vec![], T0))
        .await
        .unwrap();
    let found = store.runs_by_sha(&Sha::new("feed")).await.unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(
        (found[0].queue.clone(), found[0].run_id.as_str()),
        (before.queue.id.clone(), "r1")
    );
    assert!(
        store
            .runs_by_sha(&Sha::new("beef"))
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn delete_refuses_a_queue_with_entries(store: Arc<dyn Store>) {
    let before = create(&*store, "rocket").await;
    let mut after = before.clone();
    after.entries = vec![Arc::new(entry(1, EntryState::NotReady, T0))];
    store
        .commit(&commit(&before, after, vec![], vec![], T0))
        .await
        .unwrap();
    let snap = store.load(&before.queue.id).await.unwrap().unwrap();
    assert_eq!(store.delete_queue(&snap).await, Err(StoreError::NotEmpty));
    assert!(store.load(&before.queue.id).await.unwrap().is_some());
}

pub async fn delete_refuses_even_with_a_stale_empty_snapshot(store: Arc<dyn Store>) {
    let before = create(&*store, "rocket").await;
    let mut after = before.clone();
    after.entries = vec![Arc::new(entry(1, EntryState::Pending, T0))];
    store
        .commit(&commit(&before, after, vec![], vec![], T0))
        .await
        .unwrap();
    // `before` has no entries but is one version behind: the store itself must refuse.
    let result = store.delete_queue(&before).await;
    assert_eq!(result, Err(StoreError::NotEmpty));
    assert_eq!(
        store
            .load(&before.queue.id)
            .await
            .unwrap()
            .unwrap()
            .entries
            .len(),
        1
    );
}

/// A queue deleted and created again on the same branch starts at version 0 too: a commit or
/// a delete computed from the first queue's snapshot (a request or the tick that read it
/// before the delete) is refused, even at the version the new queue has reached.
pub async fn a_deleted_queue_s_snapshot_changes_nothing_of_its_successor(store: Arc<dyn Store>) {
    let first = create(&*store, "rocket").await;
    store.delete_queue(&first).await.unwrap();
    let mut again = first.queue.clone();
    again.created_at = T0.plus_millis(60_000);
    again.updated_at = again.created_at;
    again.config.concurrency = 7;
    store.create_queue(&again).await.unwrap();

    let mut stale = first.clone();
    stale.entries = vec![Arc::new(entry(1, EntryState::Pending, T0))];
    let result = store
        .commit(&commit(&first, stale, vec![], vec![], T0))
        .await;
    assert_eq!(result, Err(StoreError::Conflict));
    assert_eq!(store.delete_queue(&first).await, Err(StoreError::Conflict));
    let now = store
        .load(&first.queue.id)
        .await
        .unwrap()
        .expect("the new queue");
    assert_eq!(now.queue, again);
    assert!(now.entries.is_empty());
}

pub async fn delete_removes_every_live_item(store: Arc<dyn Store>) {
    let before = create(&*store, "rocket").await;
    let id = before.queue.id.clone();
    let mut after = before.clone();
    after.runs = vec![run("r9", &[], Some("dead"), T0)];
    after.outbox = vec![effect("x1", T0)];
    store
        .commit(&commit(&before, after, vec![], vec![], T0))
        .await
        .unwrap();
    store
        .acquire_lease(&id, "tick-a", T0, T0.plus_millis(60_000))
        .await
        .unwrap();
    let snap = store.load(&id).await.unwrap().unwrap();
    store.delete_queue(&snap).await.unwrap();
    assert!(store.load(&id).await.unwrap().is_none());
    assert!(store.queues_with_work().await.unwrap().is_empty());

    let fresh = create(&*store, "rocket").await;
    assert!(
        fresh.runs.is_empty() && fresh.outbox.is_empty(),
        "nothing left behind"
    );
    assert!(
        store
            .acquire_lease(&id, "tick-b", T0, T0.plus_millis(1))
            .await
            .unwrap()
    );
    assert_eq!(
        store
            .delete_queue(&QueueSnapshot::new(queue("acme", "gone", "main")))
            .await,
        Err(StoreError::NotFound)
    );
}

pub async fn queues_are_listed_by_organisation_and_repository(store: Arc<dyn Store>) {
    for (org_name, repo, branch) in [
        ("acme", "rocket", "main"),
        ("acme", "rocket", "release"),
        ("acme", "probe", "main"),
        ("umbrella", "hive", "main"),
    ] {
        store
            .create_queue(&queue(org_name, repo, branch))
            .await
            .unwrap();
    }
    let mut acme: Vec<String> = store
        .queues_of_org(&org("acme"))
        .await
        .unwrap()
        .iter()
        .map(|q| q.id.to_string())
        .collect();
    acme.sort();
    assert_eq!(
        acme,
        [
            "github.com/acme/probe#main",
            "github.com/acme/rocket#main",
            "github.com/acme/rocket#release"
        ]
    );
    let rocket = store
        .queues_of_repo("github.com/acme/rocket")
        .await
        .unwrap();
    assert_eq!(rocket.len(), 2);
    assert!(
        store
            .queues_of_org(&org("nobody"))
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn queues_with_work_are_listed_until_idle(store: Arc<dyn Store>) {
    let idle = create(&*store, "idle").await;
    let busy = create(&*store, "busy").await;
    let mut after = busy.clone();
    after.entries = vec![Arc::new(entry(1, EntryState::Pending, T0))];
    store
        .commit(&commit(&busy, after, vec![], vec![], T0))
        .await
        .unwrap();
    let working = store.queues_with_work().await.unwrap();
    assert_eq!(working, vec![busy.queue.id.clone()]);
    assert!(!working.contains(&idle.queue.id));

    let snap = store.load(&busy.queue.id).await.unwrap().unwrap();
    let done = concluded((*snap.entries[0]).clone(), EntryState::Cancelled, T0);
    let mut empty = snap.clone();
    empty.entries.clear();
    store
        .commit(&commit(&snap, empty, vec![done], vec![], T0))
        .await
        .unwrap();
    assert!(store.queues_with_work().await.unwrap().is_empty());
}

pub async fn lease_is_exclusive_until_it_expires(store: Arc<dyn Store>) {
    let snap = create(&*store, "rocket").await;
    let id = snap.queue.id.clone();
    let minute = 60_000;
    assert!(
        store
            .acquire_lease(&id, "a", T0, T0.plus_millis(minute))
            .await
            .unwrap()
    );
    assert!(
        !store
            .acquire_lease(&id, "b", T0.plus_millis(1), T0.plus_millis(minute))
            .await
            .unwrap()
    );
    assert!(
        store
            .acquire_lease(&id, "a", T0.plus_millis(2), T0.plus_millis(2 * minute))
            .await
            .unwrap(),
        "the holder renews"
    );
    assert!(
        store
            .acquire_lease(
                &id,
                "b",
                T0.plus_millis(2 * minute),
                T0.plus_millis(3 * minute)
            )
            .await
            .unwrap(),
        "an expired lease is taken over"
    );
    store.release_lease(&id, "a").await.unwrap();
    assert!(
        !store
            .acquire_lease(
                &id,
                "c",
                T0.plus_millis(2 * minute + 1),
                T0.plus_millis(4 * minute)
            )
            .await
            .unwrap(),
        "a non-holder cannot release"
    );
    store.release_lease(&id, "b").await.unwrap();
    assert!(
        store
            .acquire_lease(
                &id,
                "c",
                T0.plus_millis(2 * minute + 2),
                T0.plus_millis(4 * minute)
            )
            .await
            .unwrap()
    );
    let unknown = queue("acme", "gone", "main").id;
    assert_eq!(
        store.acquire_lease(&unknown, "a", T0, T0).await,
        Err(StoreError::NotFound)
    );
    // Leases do not move the queue's version: they never conflict with commits.
    assert_eq!(store.load(&id).await.unwrap().unwrap().queue.version, 0);
}

pub async fn tokens_are_stored_listed_and_revoked(store: Arc<dyn Store>) {
    let token = |hash: &str, id: &str, at: i64| TokenRecord {
        token_hash: hash.to_owned(),
        id: id.to_owned(),
        org: org("acme"),
        label: "ci".to_owned(),
        created_at: Timestamp(at),
        revoked_at: None,
    };
    store.put_token(&token("h2", "t2", 2)).await.unwrap();
    store.put_token(&token("h1", "t1", 1)).await.unwrap();
    assert_eq!(
        store.put_token(&token("h1", "t3", 3)).await,
        Err(StoreError::AlreadyExists)
    );
    assert_eq!(
        store.find_token("h1").await.unwrap(),
        Some(token("h1", "t1", 1))
    );
    assert_eq!(store.find_token("nope").await.unwrap(), None);
    let ids: Vec<String> = store
        .list_tokens()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(ids, ["t1", "t2"]);
    store.revoke_token("t2", Timestamp(50)).await.unwrap();
    store.revoke_token("t2", Timestamp(60)).await.unwrap();
    assert_eq!(
        store.find_token("h2").await.unwrap().unwrap().revoked_at,
        Some(Timestamp(50)),
        "the first revocation time stays"
    );
    assert_eq!(
        store.revoke_token("t9", Timestamp(1)).await,
        Err(StoreError::NotFound)
    );
}

pub async fn owners_are_linked_to_one_organisation(store: Arc<dyn Store>) {
    use mq_core::ids::OwnerRef;
    use mq_store::OwnerLink;
    let owner = |s: &str| OwnerRef::parse("owner", s).unwrap();
    let link = |o: &str, org_id: &str, at: i64| OwnerLink {
        owner: owner(o),
        org: org(org_id),
        linked_at: Timestamp(at),
        account_id: None,
    };
    store.put_token(&token_of("acme", 1)).await.unwrap();
    assert_eq!(store.owner_link("github.com/acme").await.unwrap(), None);
    store
        .link_owner(&link("github.com/acme", "acme", 1))
        .await
        .unwrap();
    store
        .link_owner(&link("GitHub.com/Acme-Labs", "acme", 2))
        .await
        .unwrap();
    let pinned = OwnerLink {
        account_id: Some(4242),
        ..link("github.com/umbrella", "umbrella", 3)
    };
    store.link_owner(&pinned).await.unwrap();
    assert_eq!(
        store.owner_link("github.com/umbrella").await.unwrap(),
        Some(pinned.clone()),
        "the account it was linked as is kept"
    );
    let as_another = OwnerLink {
        account_id: Some(7),
        ..link("github.com/umbrella", "umbrella", 5)
    };
    store.link_owner(&as_another).await.unwrap();
    assert_eq!(
        store.owner_link("github.com/umbrella").await.unwrap(),
        Some(pinned),
        "an account recorded is never replaced by linking again"
    );
    store
        .link_owner(&OwnerLink {
            account_id: Some(31),
            ..link("GitHub.com/Acme-Labs", "acme", 6)
        })
        .await
        .unwrap();
    assert_eq!(
        store.owner_link("github.com/acme-labs").await.unwrap(),
        Some(OwnerLink {
            account_id: Some(31),
            ..link("GitHub.com/Acme-Labs", "acme", 2)
        }),
        "linked again with an account, a link without one records it and keeps its time"
    );
    assert_eq!(
        store.link_owner(&link("github.com/acme", "acme", 9)).await,
        Ok(()),
        "linking again to the same organisation changes nothing"
    );
    assert_eq!(
        store
            .link_owner(&link("GITHUB.COM/ACME", "umbrella", 4))
            .await,
        Err(StoreError::AlreadyExists),
        "an owner belongs to one organisation, whatever the case of its name"
    );
    assert_eq!(
        store.owner_link("GitHub.com/ACME").await.unwrap(),
        Some(link("github.com/acme", "acme", 1))
    );
    let listed: Vec<(String, String)> = store
        .owner_links()
        .await
        .unwrap()
        .into_iter()
        .map(|l| (l.owner.key(), l.org.to_string()))
        .collect();
    let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    assert_eq!(
        listed,
        [
            pair("github.com/acme", "acme"),
            pair("github.com/acme-labs", "acme"),
            pair("github.com/umbrella", "umbrella"),
        ]
    );
    assert_eq!(
        store
            .unlink_owner(&owner("github.com/acme"), &org("umbrella"))
            .await,
        Err(StoreError::NotFound),
        "only the owning organisation's link is removed"
    );
    store
        .unlink_owner(&owner("github.com/ACME"), &org("acme"))
        .await
        .unwrap();
    assert_eq!(store.owner_link("github.com/acme").await.unwrap(), None);
    assert_eq!(
        store
            .unlink_owner(&owner("github.com/acme"), &org("acme"))
            .await,
        Err(StoreError::NotFound)
    );
    store
        .link_owner(&link("github.com/acme", "umbrella", 5))
        .await
        .unwrap();
    assert_eq!(store.owner_links().await.unwrap().len(), 3);
    let tokens = store.list_tokens().await.unwrap();
    assert_eq!(tokens, [token_of("acme", 1)], "links are not tokens");
}

fn token_of(org_id: &str, at: i64) -> TokenRecord {
    TokenRecord {
        token_hash: format!("{:064x}", at),
        id: format!("tok_{at}"),
        org: org(org_id),
        label: String::new(),
        created_at: Timestamp(at),
        revoked_at: None,
    }
}

/// What the engine makes of a few submissions, committed, reads back exactly as
/// `mark_committed` says: the shell starts the next step from it without reading it again.
pub async fn a_committed_snapshot_reads_back_as_the_engine_left_it(store: Arc<dyn Store>) {
    use mq_core::engine::{Ctx, Event, step};
    use mq_core::priority::Priority;
    let mut current = create(&*store, "rocket").await;
    let id = current.queue.id.clone();
    let patch = mq_core::settings::SettingsPatch {
        concurrency: Some(2),
        ..Default::default()
    };
    let mut events = vec![Event::UpdateSettings { patch }];
    for pr in [30, 4, 12] {
        let mut facts = entry(pr, EntryState::NotReady, T0).pr_facts;
        facts.title = format!("Change {pr}: ünïcode, \"quotes\" and a\nnew line");
        events.push(Event::Submit {
            pr: facts,
            priority: Priority::of(if pr == 12 { 0 } else { 100 }),
            no_batch: Some(pr == 4),
            force: false,
            head_checks_passed: false,
        });
    }
    for (i, event) in events.iter().enumerate() {
        let now = T0.plus_millis(1000 * (i as i64 + 1));
        let ctx = Ctx {
            now,
            seed: i as u64,
        };
        let transition = step(&current, event, ctx).expect("accepted");
        let commit = Commit::between(&current, &transition, now);
        store.commit(&commit).await.unwrap();
        let mut carried = transition.snapshot;
        carried.mark_committed(commit.queue);
        let loaded = store.load(&id).await.unwrap().expect("queue exists");
        assert_eq!(loaded, carried, "after event {i}");
        current = loaded;
    }
    assert_eq!(current.entries.len(), 3);
    assert_eq!(current.runs.len(), 2, "two groups testing");
    assert!(
        !current.outbox.is_empty(),
        "their branches are to be created"
    );
}

/// Eight writers add entries to one queue at once, retrying on conflict: nothing is lost.
/// Their first commits all start from the same read (a barrier between read and commit), so
/// seven of them conflict, whatever the scheduling.
pub async fn concurrent_commits_lose_no_update(store: Arc<dyn Store>) {
    let id: QueueId = create(&*store, "rocket").await.queue.id;
    const WRITERS: u32 = 8;
    const EACH: u32 = 4;
    let all_read = Arc::new(tokio::sync::Barrier::new(WRITERS as usize));
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let store = store.clone();
        let id = id.clone();
        let all_read = all_read.clone();
        tasks.push(tokio::spawn(async move {
            let mut conflicts = 0u32;
            for i in 0..EACH {
                let pr = w * 100 + i;
                loop {
                    let before = store.load(&id).await.unwrap().unwrap();
                    if i == 0 && conflicts == 0 {
                        all_read.wait().await;
                    }
                    let mut after = before.clone();
                    after
                        .entries
                        .push(Arc::new(entry(pr, EntryState::Pending, T0)));
                    after
                        .queue
                        .config
                        .required_statuses
                        .push(format!("check-{pr}"));
                    match store
                        .commit(&commit(&before, after, vec![], vec![], T0))
                        .await
                    {
                        Ok(()) => break,
                        Err(StoreError::Conflict) => conflicts += 1,
                        Err(e) => panic!("unexpected {e:?}"),
                    }
                }
            }
            conflicts
        }));
    }
    let mut conflicts = 0;
    for t in tasks {
        conflicts += t.await.unwrap();
    }
    let snap = store.load(&id).await.unwrap().unwrap();
    let total = WRITERS * EACH;
    eprintln!(
        "{total} concurrent commits by {WRITERS} writers: {conflicts} version conflicts retried"
    );
    assert!(
        conflicts >= WRITERS - 1,
        "the first commits raced: {conflicts} conflicts"
    );
    assert_eq!(snap.entries.len() as u32, total, "no entry lost");
    assert_eq!(
        snap.queue.config.required_statuses.len() as u32,
        total,
        "no settings update lost"
    );
    assert_eq!(snap.queue.version, u64::from(total));
}

/// Impacted targets uploaded before a submission are kept per pull request; the latest wins.
pub async fn uploaded_targets_are_kept_per_pull_request(store: Arc<dyn Store>) {
    use mq_core::entry::{ImpactedTargets, UploadedTargets};
    let id: QueueId = create(&*store, "rocket").await.queue.id;
    assert_eq!(store.uploaded_targets(&id, 7).await.unwrap(), None);
    let first = UploadedTargets {
        head_sha: Sha::new("a".repeat(40)),
        targets: ImpactedTargets::List(["//app".to_owned()].into()),
        uploaded_at: T0,
    };
    store.put_uploaded_targets(&id, 7, &first).await.unwrap();
    let second = UploadedTargets {
        head_sha: Sha::new("b".repeat(40)),
        targets: ImpactedTargets::All,
        uploaded_at: Timestamp(T0.millis() + 1),
    };
    store.put_uploaded_targets(&id, 7, &second).await.unwrap();
    assert_eq!(store.uploaded_targets(&id, 7).await.unwrap(), Some(second));
    assert_eq!(store.uploaded_targets(&id, 8).await.unwrap(), None);
}

/// Uploaded targets attached to a commit are recorded with it, and not at all when the
/// commit loses to another.
pub async fn uploaded_targets_recorded_by_a_commit_share_its_fate(store: Arc<dyn Store>) {
    use mq_core::entry::{ImpactedTargets, UploadedTargets};
    let before = create(&*store, "rocket").await;
    let id = before.queue.id.clone();
    let upload = |sha: &str| UploadedTargets {
        head_sha: Sha::new(sha.repeat(40)),
        targets: ImpactedTargets::List(["//app".to_owned()].into()),
        uploaded_at: T0,
    };
    let mut first = commit(&before, before.clone(), vec![], vec![], T0);
    first.uploaded_targets = vec![(7, upload("a"))];
    store.commit(&first).await.unwrap();
    assert_eq!(
        store.uploaded_targets(&id, 7).await.unwrap(),
        Some(upload("a"))
    );

    let mut stale = commit(&before, before.clone(), vec![], vec![], T0);
    stale.uploaded_targets = vec![(7, upload("b")), (8, upload("b"))];
    assert_eq!(store.commit(&stale).await, Err(StoreError::Conflict));
    assert_eq!(
        store.uploaded_targets(&id, 7).await.unwrap(),
        Some(upload("a"))
    );
    assert_eq!(store.uploaded_targets(&id, 8).await.unwrap(), None);
}

/// Commits #1 and #2, both testing, at `T0` into the new queue `before`.
async fn two_testing_entries(store: &dyn Store, before: &QueueSnapshot) {
    let mut after = before.clone();
    after.entries = vec![
        Arc::new(entry(1, EntryState::Testing, T0)),
        Arc::new(entry(2, EntryState::Testing, T0)),
    ];
    store
        .commit(&commit(before, after, vec![], vec![], T0))
        .await
        .unwrap();
}

/// Increases of entries' restart counters are kept with their time and read back by window.
pub async fn restarts_are_kept_as_history(store: Arc<dyn Store>) {
    let before = create(&*store, "rocket").await;
    let id = before.queue.id.clone();
    two_testing_entries(&*store, &before).await;

    let (t1, t2, t3) = (
        T0.plus_millis(60_000),
        T0.plus_millis(120_000),
        T0.plus_millis(180_000),
    );
    let step = |restarts: [u32; 2], concluded_at: Option<Timestamp>, at: Timestamp| {
        let store = store.clone();
        let id = id.clone();
        async move {
            let snap = store.load(&id).await.unwrap().unwrap();
            let mut after = snap.clone();
            for (e, n) in after.entries.iter_mut().zip(restarts) {
                Arc::make_mut(e).restarts = n;
            }
            let mut done = vec![];
            if let Some(when) = concluded_at {
                let last = Arc::unwrap_or_clone(after.entries.pop().unwrap());
                done.push(concluded(last, EntryState::Failed, when));
            }
            let c = commit(&snap, after, done, vec![], at);
            store.commit(&c).await.unwrap();
            c.restarts.len()
        }
    };
    assert_eq!(step([1, 0], None, t1).await, 1);
    assert_eq!(step([3, 1], None, t2).await, 2);
    assert_eq!(
        step([3, 2], Some(t3), t3).await,
        1,
        "a concluding entry's restart counts"
    );
    assert_eq!(step([3, 2], None, t3.plus_millis(5)).await, 0);

    let all = store
        .restarts_between(&id, Window::between(T0, t3.plus_millis(1)))
        .await
        .unwrap();
    let seen: Vec<(u32, i64, u32, u32)> = all
        .iter()
        .map(|r| (r.pr, r.at.millis() - T0.millis(), r.count, r.total))
        .collect();
    assert_eq!(
        seen,
        [
            (1, 60_000, 1, 1),
            (1, 120_000, 2, 3),
            (2, 120_000, 1, 1),
            (2, 180_000, 1, 2)
        ]
    );
    assert_eq!(all[0].entry_id, format!("entry-1-{}", T0.millis()));
    let second = store
        .restarts_between(&id, Window::between(t1, t2))
        .await
        .unwrap();
    assert_eq!(second.len(), 1, "end is exclusive");
    assert!(
        store
            .restarts_between(
                &id,
                Window::between(t3.plus_millis(1), t3.plus_millis(60_000))
            )
            .await
            .unwrap()
            .is_empty()
    );
    let other = queue("acme", "probe", "main").id;
    assert!(
        store
            .restarts_between(&other, Window::between(T0, t3))
            .await
            .unwrap()
            .is_empty()
    );
}

/// The metrics' read of an organisation's queues gives, for each of its queues (on one
/// repository, when asked), what `load_shared` and the three history reads give.
pub async fn metrics_facts_are_each_queues_snapshot_and_last_hour(store: Arc<dyn Store>) {
    let rocket = create(&*store, "rocket").await;
    let probe = create(&*store, "probe").await;
    two_testing_entries(&*store, &rocket).await;
    let t1 = T0.plus_millis(60_000);
    let snap = store.load(&rocket.queue.id).await.unwrap().unwrap();
    let mut after = snap.clone();
    let mut restarted = (*after.entries[1]).clone();
    restarted.restarts = 1;
    after.entries = vec![Arc::new(restarted)];
    let merged = concluded((*snap.entries[0]).clone(), EntryState::Merged, t1);
    store
        .commit(&commit(&snap, after, vec![merged.clone()], vec![], t1))
        .await
        .unwrap();

    let umbrella = queue("umbrella", "hive", "main");
    store.create_queue(&umbrella).await.unwrap();

    let now = t1.plus_millis(30 * 60_000);
    let acme = org("acme");
    let read = store.metrics_facts(&acme, None, now).await.unwrap();
    assert!(read.unreadable.is_empty());
    let mut facts = read.read;
    facts.sort_by_key(|f| f.snapshot.queue.repo.name.clone());
    let ids: Vec<_> = facts.iter().map(|f| f.snapshot.queue.id.clone()).collect();
    assert_eq!(ids, [probe.queue.id.clone(), rocket.queue.id.clone()]);
    for (facts, queue) in facts.iter().zip([&probe.queue, &rocket.queue]) {
        let snapshot = store.load(&queue.id).await.unwrap().unwrap();
        assert_eq!(*facts.snapshot, snapshot);
        let window = Window::last_hour(queue, now);
        let three_reads = History {
            concluded: store
                .conclusion_summaries_between(&queue.id, window, usize::MAX)
                .await
                .unwrap(),
            finished_runs: store
                .finished_run_summaries_between(&queue.id, window, usize::MAX)
                .await
                .unwrap(),
            restarts: store.restarts_between(&queue.id, window).await.unwrap(),
        };
        assert_eq!(facts.history, three_reads);
        assert_eq!(store.history(&queue.id, window).await.unwrap(), three_reads);
    }
    let history = &facts[1].history;
    assert_eq!(history.concluded, [merged]);
    assert_eq!(history.restarts.len(), 1);
    assert_eq!(facts[0].history, History::default());

    let key = rocket.queue.repo.key();
    let one = store.metrics_facts(&acme, Some(&key), now).await.unwrap();
    assert_eq!(one.read, facts[1..], "the queues on one repository");
    let hive = umbrella.repo.key();
    let theirs = store.metrics_facts(&acme, Some(&hive), now).await.unwrap();
    assert_eq!(
        theirs,
        MetricsFacts::default(),
        "another organisation's queue"
    );
    let an_hour_on = t1.plus_millis(61 * 60_000);
    let later = store
        .metrics_facts(&acme, Some(&key), an_hour_on)
        .await
        .unwrap()
        .read;
    assert_eq!(
        later[0].history,
        History::default(),
        "none of it an hour on"
    );
}

/// A commit that changes more items than one DynamoDB transaction holds (100) still applies
/// whole, and the next commit sees all of it.
pub async fn commits_larger_than_a_transaction_apply_whole(store: Arc<dyn Store>) {
    let before = create(&*store, "rocket").await;
    let id = before.queue.id.clone();
    let mut many = before.clone();
    many.entries = (1..=150)
        .map(|pr| Arc::new(entry(pr, EntryState::Pending, T0)))
        .collect();
    store
        .commit(&commit(&before, many, vec![], vec![], T0))
        .await
        .unwrap();
    let loaded = store.load(&id).await.unwrap().unwrap();
    assert_eq!(loaded.entries.len(), 150);
    assert_eq!(loaded.queue.version, 1);

    let mut changed = loaded.clone();
    for e in changed.entries.iter_mut().take(120) {
        Arc::make_mut(e).state = EntryState::Testing;
    }
    changed.entries.truncate(140);
    store
        .commit(&commit(&loaded, changed, vec![], vec![], T0))
        .await
        .unwrap();
    let after = store.load(&id).await.unwrap().unwrap();
    let testing = after
        .entries
        .iter()
        .filter(|e| e.state == EntryState::Testing)
        .count();
    assert_eq!((after.entries.len(), testing), (140, 120));
    assert_eq!(after.queue.version, 2);
    let stale = commit(&loaded, loaded.clone(), vec![], vec![], T0);
    assert_eq!(store.commit(&stale).await, Err(StoreError::Conflict));
}
