//! Every setting on real git, through HTTP against the local gateway: for each merge method,
//! with `concurrency` 1 and 3, with and without batching, with and without optimistic merge,
//! and in parallel mode with impacted targets, a dozen pull requests go through one queue, and
//! what the target branch went through is checked from outside the queue (see
//! `e2e::matrix` for the pull requests and the checks). Rows whose CI also fails at random
//! (15%) check that the target still never holds a broken tree and the queue still empties.
//!
//! Each row prints its CI runs per merged pull request (`--nocapture`).

use e2e::Backend;
use e2e::live::{CI, LiveEnv, repo_ref, wait_until};
use e2e::matrix::{PRS, Row, World, read_lines, run_rows, single_rows};
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn merge_commit_in_every_single_mode_combination() {
    run_rows(Backend::Memory, World::QUICK, single_rows("merge_commit")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn squash_in_every_single_mode_combination() {
    run_rows(Backend::Memory, World::QUICK, single_rows("squash")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rebase_in_every_single_mode_combination() {
    run_rows(Backend::Memory, World::QUICK, single_rows("rebase")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_mode_with_impacted_targets_for_every_merge_method() {
    let rows = ["merge_commit", "squash", "rebase"].map(|method| Row {
        method,
        concurrency: 3,
        batch: false,
        optimistic: false,
        parallel: true,
        flaky: 0,
        retune: false,
    });
    run_rows(Backend::Memory, World::QUICK, rows.to_vec()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_ci_that_fails_at_random_never_breaks_the_target() {
    let mut rows = Vec::new();
    for method in ["merge_commit", "squash", "rebase"] {
        for (batch, optimistic) in [(false, false), (true, true)] {
            rows.push(Row {
                method,
                concurrency: 3,
                batch,
                optimistic,
                parallel: false,
                flaky: 15,
                retune: false,
            });
        }
    }
    run_rows(Backend::Memory, World::QUICK, rows).await;
}

/// The settings auto-tuning changes (concurrency, batching and batch size, bisection
/// concurrency, pending-failure depth and its adaptation, optimistic merge), changed every
/// 0.3 s while the dozen pull requests are in flight, under each merge method: the target
/// still only takes what CI passed and every pull request still gets its outcome.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn settings_changed_while_pull_requests_are_in_flight() {
    let rows = ["merge_commit", "squash", "rebase"].map(|method| Row {
        method,
        concurrency: 1,
        batch: true,
        optimistic: false,
        parallel: false,
        flaky: 0,
        retune: true,
    });
    run_rows(Backend::Memory, World::QUICK, rows.to_vec()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn merge_commit_with_concurrency_and_batching_on_dynamodb() {
    let row = Row {
        method: "merge_commit",
        concurrency: 3,
        batch: true,
        optimistic: true,
        parallel: false,
        flaky: 0,
        retune: false,
    };
    run_rows(Backend::DynamoDb, World::QUICK, vec![row]).await;
}

/// A dozen good pull requests under `merge_commit` with three tested at once: every one
/// merges (each group's tested commit holds the very merge commits of the groups ahead).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn merge_commit_with_concurrency_merges_a_dozen_good_pull_requests() {
    let env = LiveEnv::options()
        .ci("sleep 0.1")
        .tick_every(Duration::from_millis(500))
        .start(Backend::Memory)
        .await;
    let repo = env.repo("rocket");
    repo.add_prs(PRS, &[]);
    let moves = env.dir.path().join("target-moves.log");
    repo.record_moves("main", &moves);
    let settings =
        json!({"requiredStatuses": [CI], "mergeMethod": "merge_commit", "concurrency": 3});
    env.create_queue(&repo, settings).await;
    for pr in 1..=PRS {
        env.submit(&repo, pr).await;
    }
    for pr in 1..=PRS {
        env.wait_for_state(&repo, pr, "merged").await;
    }
    let passed = repo.commits_with_status(CI, "success");
    for value in read_lines(&moves) {
        assert!(
            passed.contains(&value),
            "main moved to {value}, which CI did not pass"
        );
    }
}

/// `createPrsForTestingBranches`: while a run tests, its branch has a draft pull request into
/// the target on the local host, naming the run and what it tests; it is closed once the run
/// has its result.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn test_branches_get_draft_pull_requests_while_they_test() {
    let env = LiveEnv::options()
        .ci("sleep 1")
        .start(Backend::Memory)
        .await;
    let repo = env.repo("rocket");
    repo.add_prs(2, &[]);
    let settings = json!({"requiredStatuses": [CI], "createPrsForTestingBranches": true});
    env.create_queue(&repo, settings).await;
    env.submit(&repo, 1).await;
    let run = env.wait_for_run(&repo, 1).await;
    let branch = format!("mq-test/main/{}", run.id);
    let opened = wait_until("the draft pull request", || async {
        let record = env.host.test_pull_request(&repo_ref(&repo), &branch).await;
        record.ok().flatten().filter(|r| r.open)
    })
    .await;
    assert_eq!(opened.request.target, "main");
    assert_eq!(
        opened.request.title,
        format!("[merge queue] #1 into main (run {})", run.id)
    );
    assert!(
        opened.request.body.contains("#1 on top of `main`"),
        "{}",
        opened.request.body
    );
    env.wait_for_state(&repo, 1, "merged").await;
    let closed = env.host.test_pull_request(&repo_ref(&repo), &branch).await;
    assert!(!closed.unwrap().unwrap().open, "closed once the run passed");
}
