//! Batching on a real repository: batches of four tested by a real CI command, a failing
//! batch bisected down to its culprit, and a batch that starts small once the oldest pull
//! request has waited `batchingMaxWaitTimeMinutes`.

use e2e::git_repo::{FAIL_FILE, GitRepo};
use e2e::live::{CI, LiveEnv};
use e2e::{Backend, live_on_both_stores};
use serde_json::{Value, json};

live_on_both_stores!(
    a_failing_batch_is_bisected_to_its_culprit,
    a_batch_starts_small_after_the_longest_wait,
);

const CULPRIT: u32 = 6;

async fn a_failing_batch_is_bisected_to_its_culprit(backend: Backend) {
    let env = LiveEnv::options().ci("test ! -e FAIL").start(backend).await;
    let repo = env.repo("rocket");
    repo.require_statuses("main", &[CI]);
    repo.add_prs(8, &[CULPRIT]);
    let settings = json!({"concurrency": 2, "batch": true, "batchingMinSize": 4});
    env.create_queue(&repo, settings).await;

    for pr in 1..=8 {
        env.submit(&repo, pr).await;
    }
    for pr in 1..=4 {
        env.wait_for_state(&repo, pr, "merged").await;
    }
    env.wait_for_state(&repo, CULPRIT, "failed").await;
    // The splits that passed bisection go back in line and are tested again at once, each
    // with its own split ([5], and [7, 8]), in the order they passed.
    let merged: Vec<u32> = (1..=8).filter(|&pr| pr != CULPRIT).collect();
    for &pr in &merged {
        env.wait_for_state(&repo, pr, "merged").await;
    }

    let subject = |pr: &u32| format!("Change {pr} (#{pr})");
    let mut subjects = repo.history_subjects("main");
    let first: Vec<String> = merged[..4].iter().map(subject).collect();
    assert_eq!(subjects[..4], first[..], "the first batch, in order");
    subjects.sort();
    let mut all: Vec<String> = merged.iter().map(subject).collect();
    all.sort();
    assert_eq!(subjects, all);
    assert!(!repo.files("main").contains(&FAIL_FILE.to_owned()));
    assert_main_moved_only_to_passed_trees(&repo);

    let runs = tested_runs(&env, &repo).await;
    let tested = |run: &Value| -> Vec<u64> {
        run["testedPullRequests"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["prNumber"].as_u64())
            .collect()
    };
    let batches: Vec<Vec<u64>> = runs
        .iter()
        .filter(|(id, _)| !id.ends_with("-bisection"))
        .map(|(_, run)| tested(run))
        .collect();
    assert!(
        batches.contains(&vec![1, 2, 3, 4]) && batches.contains(&vec![5, 6, 7, 8]),
        "batches of four: {batches:?}"
    );
    assert!(
        batches.contains(&vec![5]) && batches.contains(&vec![7, 8]),
        "the splits that passed, tested again as they passed: {batches:?}"
    );
    let bisections: Vec<(Vec<u64>, &str)> = runs
        .iter()
        .filter(|(id, _)| id.ends_with("-bisection"))
        .map(|(_, run)| (tested(run), run["status"].as_str().unwrap_or_default()))
        .collect();
    assert!(
        bisections.contains(&(vec![u64::from(CULPRIT)], "failed")),
        "the culprit failed alone in a bisection run: {bisections:?}"
    );
    assert!(
        bisections
            .iter()
            .all(|(prs, _)| prs.iter().all(|&pr| pr >= 5)),
        "only the failing batch is bisected: {bisections:?}"
    );
}

async fn a_batch_starts_small_after_the_longest_wait(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = env.repo("rocket");
    repo.add_prs(2, &[]);
    let settings = json!({
        "batch": true, "batchingMinSize": 4, "batchingMaxWaitTimeMinutes": 5,
        "requiredStatuses": [CI],
    });
    env.create_queue(&repo, settings).await;
    env.submit(&repo, 1).await;
    env.submit(&repo, 2).await;

    env.tick().await;
    for pr in [1, 2] {
        assert_eq!(env.pull_request(&repo, pr).await["state"], "pending");
    }
    assert!(repo.test_branches().is_empty(), "the batch waits for more");

    env.clock.advance_minutes(5);
    let run = env.wait_for_run(&repo, 1).await;
    let prs: Vec<&Value> = run.details["testedPullRequests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["prNumber"])
        .collect();
    assert_eq!(prs, [&json!(1), &json!(2)], "both in one batch");
    env.pass(&repo, 1).await;
    env.wait_for_state(&repo, 1, "merged").await;
    env.wait_for_state(&repo, 2, "merged").await;
    assert_eq!(
        repo.history_subjects("main"),
        ["Change 1 (#1)", "Change 2 (#2)"]
    );
}

/// Every commit `main` was moved to has the tree of a commit on which CI passed, and no
/// commit of its history holds `FAIL`.
fn assert_main_moved_only_to_passed_trees(repo: &GitRepo) {
    let passed = repo.passed_trees(CI);
    let moves = repo.moves("main");
    assert!(!moves.is_empty(), "main moved");
    for commit in &moves {
        assert!(
            passed.contains(&repo.tree(commit)),
            "main was moved to {commit}, whose tree CI never passed"
        );
    }
    for commit in repo.history("main") {
        assert!(!repo.files(&commit).contains(&FAIL_FILE.to_owned()));
    }
}

/// Every run the CI command tested, by id, with its details.
async fn tested_runs(env: &LiveEnv, repo: &GitRepo) -> Vec<(String, Value)> {
    let mut ids: Vec<String> = env
        .tested_branches()
        .iter()
        .filter_map(|b| b.rsplit('/').next())
        .map(str::to_owned)
        .collect();
    ids.dedup();
    let mut runs = Vec::new();
    for id in ids {
        let details = env.details(repo, &id).await;
        runs.push((id, details));
    }
    runs
}
