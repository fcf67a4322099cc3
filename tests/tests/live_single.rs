//! A single-mode queue on a real repository with a real CI command: ten pull requests, one of
//! which breaks the build, submitted over HTTP; the queue merges the other nine in order and
//! `main` only ever moves to commits that passed CI.

use e2e::git_repo::{FAIL_FILE, GitRepo};
use e2e::live::{CI, LiveEnv};
use e2e::{Backend, live_on_both_stores};
use serde_json::json;
use std::path::Path;

live_on_both_stores!(nine_of_ten_merge_in_order_and_the_breaker_fails);

const BREAKER: u32 = 4;

/// A CI that honours skip instructions as GitHub Actions does: a commit whose message holds
/// one gets no run from it (this one fails it, for the test to see); any other passes.
const SKIP_AWARE_CI: &str =
    "! git log -1 --format=%B | grep -qiE '\\[(skip [a-z]+|[a-z]+ skip|no ci)\\]'";

/// A pull request whose title holds a CI skip instruction is tested like any other: the
/// merge commit at the head of its test branch writes the instruction in parentheses, so CI
/// runs on it (with the instruction, it never would, and the pull request would fail on the
/// testing timeout). The target takes that commit, as CI saw it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_title_with_a_skip_instruction_is_still_tested() {
    let env = LiveEnv::options()
        .ci(SKIP_AWARE_CI)
        .start(Backend::Memory)
        .await;
    let repo = env.repo("rocket");
    repo.require_statuses("main", &[CI]);
    repo.add_prs(1, &[]);
    repo.git(&["config", "pr.1.title", "Bump version [skip ci]"]);
    env.create_queue(&repo, json!({"mergeMethod": "merge_commit"}))
        .await;
    env.submit(&repo, 1).await;
    env.wait_for_state(&repo, 1, "merged").await;
    assert_eq!(
        repo.history_subjects("main"),
        ["Merge pull request #1: Bump version (skip ci)"]
    );
}

/// The CI command: fails when the tree holds a file named `FAIL`. It runs for a second,
/// leaving a marker named by its process id in `inflight`, and on start writes down how many
/// commands are running (markers whose process is alive: a cancelled run's command is killed
/// before it can remove its marker).
fn ci_command(inflight: &Path) -> String {
    let d = inflight.display();
    format!(
        "touch '{d}/'$$; n=0; for p in $(ls '{d}'); do kill -0 $p 2>/dev/null && n=$((n+1)); done; \
         echo $n >> '{d}.counts'; sleep 1; rm '{d}/'$$; test ! -e FAIL"
    )
}

/// The most CI runs in flight at once, as the CI command saw them.
fn most_in_flight(inflight: &Path) -> u32 {
    let counts = std::fs::read_to_string(inflight.with_extension("counts")).unwrap_or_default();
    counts
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .max()
        .unwrap_or(0)
}

async fn nine_of_ten_merge_in_order_and_the_breaker_fails(backend: Backend) {
    let scratch = tempfile::tempdir().unwrap();
    let inflight = scratch.path().join("inflight");
    std::fs::create_dir(&inflight).unwrap();
    let env = LiveEnv::options()
        .ci(&ci_command(&inflight))
        .start(backend)
        .await;
    let repo = env.repo("rocket");
    repo.require_statuses("main", &[CI]);
    repo.add_prs(10, &[BREAKER]);
    env.create_queue(&repo, json!({"concurrency": 3})).await;

    for pr in 1..=10 {
        env.submit(&repo, pr).await;
    }
    let queued = env.queue(&repo).await;
    let numbers: Vec<u64> = queued["enqueuedPullRequests"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["prNumber"].as_u64())
        .collect();
    assert!(
        numbers.windows(2).all(|w| w[0] < w[1]),
        "the queue keeps submission order: {numbers:?}"
    );

    let merged: Vec<u32> = (1..=10).filter(|&pr| pr != BREAKER).collect();
    for &pr in &merged {
        env.wait_for_state(&repo, pr, "merged").await;
    }
    let failed = env.wait_for_state(&repo, BREAKER, "failed").await;
    assert_eq!(failed["isCurrentlySubmittedToQueue"], false);
    env.wait_for_comment(&repo, BREAKER, "required status `local-ci` failed")
        .await;

    let subjects: Vec<String> = merged
        .iter()
        .map(|pr| format!("Change {pr} (#{pr})"))
        .collect();
    assert_eq!(
        repo.history_subjects("main"),
        subjects,
        "main holds exactly the nine, one commit each, in submission order"
    );
    let mut files: Vec<String> = merged.iter().map(|pr| format!("change-{pr}.txt")).collect();
    files.push("README.md".to_owned());
    files.sort();
    assert_eq!(repo.files("main"), files);
    assert_every_main_passed_ci(&repo);
    assert_eq!(env.queue(&repo).await["enqueuedPullRequests"], json!([]));
    assert_eq!(
        most_in_flight(&inflight),
        3,
        "concurrency 3: three runs tested at once, never more"
    );
}

/// Every commit of `main`'s history, and every commit `main` was moved to, has the tree of a
/// commit on which the CI command passed, and no `FAIL` file.
fn assert_every_main_passed_ci(repo: &GitRepo) {
    let passed = repo.passed_trees(CI);
    let history = repo.history("main");
    let moves = repo.moves("main");
    assert!(!moves.is_empty(), "main moved");
    for commit in history.iter().chain(&moves) {
        assert!(
            !repo.files(commit).contains(&FAIL_FILE.to_owned()),
            "{commit} on main holds FAIL"
        );
        assert!(
            passed.contains(&repo.tree(commit)),
            "{commit} on main has a tree CI never passed"
        );
    }
}
