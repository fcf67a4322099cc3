//! The contract of `HistoryStore`: a queue's concluded entries and finished runs, whole,
//! newest first, within a window and a limit, and only that queue's.

use super::create;
use super::fixtures::*;
use mq_core::entry::{Conclusion, Entry, EntryState};
use mq_core::git::{StatusReport, StatusState};
use mq_core::metrics::Window;
use mq_core::run::{RunStatus, TestRun};
use mq_core::snapshot::QueueSnapshot;
use mq_core::time::Timestamp;
use mq_store::Store;
use std::sync::Arc;

fn minute(n: i64) -> Timestamp {
    T0.plus_millis(n * 60_000)
}

/// Records `concluded` and `runs` as history of the queue `before` is a snapshot of.
async fn record(
    store: &dyn Store,
    before: &QueueSnapshot,
    concluded: Vec<Entry>,
    runs: Vec<TestRun>,
    at: Timestamp,
) -> QueueSnapshot {
    store
        .commit(&commit(before, before.clone(), concluded, runs, at))
        .await
        .unwrap();
    store.load(&before.queue.id).await.unwrap().unwrap()
}

pub async fn conclusions_are_read_whole_newest_first(store: Arc<dyn Store>) {
    let rocket = create(&*store, "rocket").await;
    let other = create(&*store, "other").await;
    let id = rocket.queue.id.clone();
    let failed = |pr: u32, at: Timestamp| {
        let mut e = concluded(
            entry(pr, EntryState::PendingFailure, T0),
            EntryState::Failed,
            at,
        );
        e.conclusion = Some(Conclusion {
            reason: "tests_failed".to_owned(),
            detail: format!("#{pr}: local-ci failed"),
        });
        e.last_run = Some(format!("run-{pr}"));
        e
    };
    let merged = |pr: u32, at: Timestamp| {
        concluded(entry(pr, EntryState::Testing, T0), EntryState::Merged, at)
    };
    let rocket = record(
        &*store,
        &rocket,
        vec![merged(1, minute(2)), failed(2, minute(4))],
        vec![],
        minute(4),
    )
    .await;
    record(
        &*store,
        &rocket,
        vec![merged(3, minute(7))],
        vec![],
        minute(7),
    )
    .await;
    record(
        &*store,
        &other,
        vec![merged(9, minute(5))],
        vec![],
        minute(5),
    )
    .await;

    let all = store
        .conclusions_between(&id, Window::between(T0, minute(10)), 10)
        .await
        .unwrap();
    let prs: Vec<u32> = all.iter().map(|e| e.pr).collect();
    assert_eq!(prs, [3, 2, 1], "newest first, and only this queue's");
    assert_eq!(all[1], failed(2, minute(4)), "whole, with the reason");

    let latest = store
        .conclusions_between(&id, Window::between(T0, minute(10)), 2)
        .await
        .unwrap();
    assert_eq!(latest.iter().map(|e| e.pr).collect::<Vec<_>>(), [3, 2]);
    let middle = store
        .conclusions_between(&id, Window::between(minute(2), minute(7)), 10)
        .await
        .unwrap();
    assert_eq!(
        middle.iter().map(|e| e.pr).collect::<Vec<_>>(),
        [2, 1],
        "from is inclusive, to exclusive"
    );
    assert!(
        store
            .conclusions_between(&id, Window::between(minute(7), minute(7)), 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .conclusions_between(&id, Window::between(T0, minute(10)), 0)
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn finished_runs_are_read_whole_newest_first(store: Arc<dyn Store>) {
    let rocket = create(&*store, "rocket").await;
    let other = create(&*store, "other").await;
    let id = rocket.queue.id.clone();
    let done = |run_id: &str, prs: &[u32], status: RunStatus, at: Timestamp| {
        let mut r = finished(run(run_id, prs, Some("feed"), T0), status, at);
        r.started_at = Some(T0.plus_millis(500));
        r.reason = (status == RunStatus::Failed).then(|| "tests_failed".to_owned());
        r.statuses = vec![StatusReport {
            context: "local-ci".to_owned(),
            state: StatusState::Failure,
            url: format!("https://ci.example/{run_id}"),
            description: "1 test failed".to_owned(),
            updated_at: at,
        }];
        r
    };
    let rocket = record(
        &*store,
        &rocket,
        vec![],
        vec![
            done("r1", &[1], RunStatus::Succeeded, minute(3)),
            done("r2", &[2, 3], RunStatus::Failed, minute(6)),
        ],
        minute(6),
    )
    .await;
    record(
        &*store,
        &rocket,
        vec![],
        vec![done("r3", &[3], RunStatus::Cancelled, minute(8))],
        minute(8),
    )
    .await;
    record(
        &*store,
        &other,
        vec![],
        vec![done("theirs", &[1], RunStatus::Succeeded, minute(4))],
        minute(4),
    )
    .await;

    let all = store
        .finished_runs_between(&id, Window::between(T0, minute(10)), 10)
        .await
        .unwrap();
    let ids: Vec<&str> = all.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        ids,
        ["r3", "r2", "r1"],
        "newest first, and only this queue's"
    );
    assert_eq!(
        all[1],
        done("r2", &[2, 3], RunStatus::Failed, minute(6)),
        "whole: what it tested, its reason and its CI links"
    );
    let newest = store
        .finished_runs_between(&id, Window::between(T0, minute(10)), 1)
        .await
        .unwrap();
    assert_eq!(newest.len(), 1);
    assert_eq!(newest[0].id, "r3");
    let window = store
        .finished_runs_between(&id, Window::between(minute(3), minute(8)), 10)
        .await
        .unwrap();
    assert_eq!(
        window.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["r2", "r1"],
        "from is inclusive, to exclusive"
    );
    assert!(
        store
            .finished_runs_between(&id, Window::between(minute(9), minute(3)), 10)
            .await
            .unwrap()
            .is_empty()
    );
}

/// Summaries are the history as the whole reads give it, less what `Entry::summary` and
/// `TestRun::summary` leave out (on DynamoDB, read with a projection): the same items, in
/// the same order, within the same window and limit.
pub async fn summaries_are_the_whole_history_less_its_heavy_parts(store: Arc<dyn Store>) {
    use mq_core::entry::{ImpactedTargets, UploadedTargets};
    use mq_core::git::{CheckRunReport, CheckStatus, RequiredStatuses};
    use mq_core::ids::Sha;
    use mq_core::run::BranchPr;
    let rocket = create(&*store, "rocket").await;
    let id = rocket.queue.id.clone();
    let targets: Vec<String> = (0..50).map(|i| format!("//services/target-{i}")).collect();
    let heavy_entry = |pr: u32, at: Timestamp| {
        let mut e = concluded(entry(pr, EntryState::Testing, T0), EntryState::Merged, at);
        e.impacted = Some(UploadedTargets {
            head_sha: e.pr_facts.head_sha.clone(),
            targets: ImpactedTargets::List(targets.iter().cloned().collect()),
            uploaded_at: T0,
        });
        e.last_run = Some(format!("run-{pr}"));
        e.commented = true;
        e
    };
    let heavy_run = |run_id: &str, pr: u32, at: Timestamp| {
        let mut r = finished(
            run(run_id, &[pr], Some("feed"), T0),
            RunStatus::Succeeded,
            at,
        );
        r.started_at = Some(T0.plus_millis(500));
        r.statuses = vec![StatusReport {
            context: "local-ci".to_owned(),
            state: StatusState::Success,
            url: format!("https://ci.example/{run_id}"),
            description: "passed".to_owned(),
            updated_at: at,
        }];
        r.check_runs = vec![CheckRunReport {
            id: 7,
            name: "build".to_owned(),
            status: CheckStatus::Completed,
            conclusion: None,
            url: String::new(),
            suite_id: 3,
            updated_at: at,
        }];
        r.chain = vec![BranchPr {
            pr,
            head_sha: Sha::new(format!("{pr:040x}")),
            title: format!("Change {pr}"),
            stamp: None,
        }];
        r.required = Some(RequiredStatuses {
            contexts: vec!["local-ci".to_owned()],
            source: None,
        });
        r.impacted_targets = Some(targets.clone());
        r.impacted_targets_for_tested_prs = Some(targets.clone());
        r
    };
    let entries = vec![heavy_entry(1, minute(2)), heavy_entry(2, minute(3))];
    let runs = vec![heavy_run("r1", 1, minute(2)), heavy_run("r2", 2, minute(3))];
    record(&*store, &rocket, entries, runs, minute(3)).await;

    for (window, limit) in [
        (Window::between(T0, minute(10)), 10),
        (Window::between(T0, minute(3)), 10),
        (Window::between(T0, minute(10)), 1),
    ] {
        let whole = store.conclusions_between(&id, window, limit).await.unwrap();
        let summaries = store
            .conclusion_summaries_between(&id, window, limit)
            .await
            .unwrap();
        let expected: Vec<Entry> = whole.into_iter().map(Entry::summary).collect();
        assert_eq!(summaries, expected, "{window:?}, at most {limit}");
        let whole = store
            .finished_runs_between(&id, window, limit)
            .await
            .unwrap();
        let summaries = store
            .finished_run_summaries_between(&id, window, limit)
            .await
            .unwrap();
        let expected: Vec<TestRun> = whole.into_iter().map(TestRun::summary).collect();
        assert_eq!(summaries, expected, "{window:?}, at most {limit}");
    }
    let summaries = store
        .conclusion_summaries_between(&id, Window::between(T0, minute(10)), 10)
        .await
        .unwrap();
    assert_eq!(summaries.len(), 2);
    assert!(
        summaries
            .iter()
            .all(|e| e.impacted.is_none() && e.commented)
    );
    let summaries = store
        .finished_run_summaries_between(&id, Window::between(T0, minute(10)), 10)
        .await
        .unwrap();
    assert_eq!(
        summaries.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["r2", "r1"]
    );
    assert!(
        summaries
            .iter()
            .all(|r| r.statuses.is_empty() && r.chain.is_empty() && r.started_at.is_some())
    );
}
