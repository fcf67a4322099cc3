//! What users and operators do to a live queue on a real repository: urgent submissions,
//! cancel, restart, pause and resume, draining, the testing timeout, and direct merge. CI is
//! played by the test: it sets `local-ci` on the test branches through the Git host.

use e2e::git_repo::GitRepo;
use e2e::live::{CI, LiveEnv, Run, wait_until};
use e2e::{Backend, live_on_both_stores};
use mq_core::git::StatusState;
use serde_json::{Value, json};

live_on_both_stores!(
    urgent_preempts_the_running_test,
    cancel_during_testing_restarts_the_groups_behind,
    restart_reruns_one_group_in_place,
    a_restart_after_a_failure_is_tested_anew,
    paused_queues_neither_start_nor_merge_until_resumed,
    draining_refuses_submissions_and_finishes_running_work,
    a_run_past_the_timeout_fails_on_the_tick,
    direct_merge_skips_the_test_run,
    a_push_to_main_outside_the_queue_is_tested_before_merging,
    a_pull_request_merged_by_hand_is_cancelled_as_merged_outside,
    a_switch_from_squash_to_merge_commits_merges_the_groups_in_flight,
    a_commit_pushed_onto_a_test_branch_never_lands,
    notifications_turned_off_mid_test_still_end_what_they_started,
);

/// Someone pushes a commit onto a run's test branch (a bot that formats every branch, a
/// person), and CI passes it: the queue builds the branch again instead of testing that
/// commit, so under `merge_commit` the target never takes a commit nobody reviewed.
async fn a_commit_pushed_onto_a_test_branch_never_lands(backend: Backend) {
    let env = LiveEnv::options().without_tick().start(backend).await;
    let repo = queue_with_prs(&env, 1, json!({"mergeMethod": "merge_commit"})).await;
    env.submit(&repo, 1).await;
    let run = env.wait_for_run(&repo, 1).await;
    let branch = repo.test_branches().pop().expect("the run's branch");
    let pushed = repo.push_commit(&branch, "formatted.txt");
    env.set_status(&repo, &pushed, CI, StatusState::Success)
        .await;
    env.tick().await;
    assert_eq!(repo.head(&branch), Some(run.sha.clone()), "built again");
    env.pass(&repo, 1).await;
    env.wait_for_state(&repo, 1, "merged").await;
    assert_eq!(repo.head("main"), Some(run.sha));
    assert_eq!(repo.files("main"), ["README.md", "change-1.txt"]);
}

/// #1 lands as a squash; then the operator switches to `merge_commit`. #2's branch holds #1's
/// merge commit, not the squash on `main`, so it cannot be fast-forwarded onto `main`: it is
/// tested again on `main` and merges by fast-forward to what CI passed.
async fn a_switch_from_squash_to_merge_commits_merges_the_groups_in_flight(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = queue_with_prs(&env, 2, json!({"concurrency": 2, "mergeMethod": "squash"})).await;
    env.submit(&repo, 1).await;
    env.submit(&repo, 2).await;
    let before = env.wait_for_run(&repo, 2).await;
    env.pass(&repo, 1).await;
    env.wait_for_state(&repo, 1, "merged").await;
    env.update_queue(&repo, json!({"mergeMethod": "merge_commit"}))
        .await;
    let after = wait_until("#2 tested again on main", || async {
        let run = env.current_run(&repo, 2).await;
        run.filter(|run| run.sha != before.sha)
    })
    .await;
    env.pass(&repo, 2).await;
    env.wait_for_state(&repo, 2, "merged").await;
    assert_eq!(repo.head("main").as_deref(), Some(after.sha.as_str()));
    assert_eq!(
        repo.files("main"),
        ["README.md", "change-1.txt", "change-2.txt"]
    );
}

/// The operator turns comments and status checks off while #1 is testing: #1's `merge-queue`
/// status, pending on its head, still ends green when it merges (as the Git host records it),
/// and its comment says it merged. #2, submitted after the change, hears nothing.
async fn notifications_turned_off_mid_test_still_end_what_they_started(backend: Backend) {
    const QUEUE_STATUS: &str = "merge-queue";
    let env = LiveEnv::start(backend).await;
    let repo = queue_with_prs(&env, 2, json!({})).await;
    env.submit(&repo, 1).await;
    env.wait_for_run(&repo, 1).await;
    let head1 = repo.pr_head(1);
    wait_until("#1's status pending", || async {
        repo.commits_with_status(QUEUE_STATUS, "pending")
            .contains(&head1)
            .then_some(())
    })
    .await;
    let off = json!({"statusCheckEnabled": false, "commentsEnabled": false});
    env.update_queue(&repo, off).await;
    env.submit(&repo, 2).await;
    env.pass(&repo, 1).await;
    env.wait_for_state(&repo, 1, "merged").await;
    env.pass(&repo, 2).await;
    env.wait_for_state(&repo, 2, "merged").await;
    wait_until("#1's status green", || async {
        repo.commits_with_status(QUEUE_STATUS, "success")
            .contains(&head1)
            .then_some(())
    })
    .await;
    env.wait_for_comment(&repo, 1, "Merged into `main`").await;
    let head2 = repo.pr_head(2);
    for state in ["pending", "success"] {
        assert!(
            !repo
                .commits_with_status(QUEUE_STATUS, state)
                .contains(&head2)
        );
    }
    assert_eq!(env.comment(&repo, 2).await, "");
}

/// A queue on `rocket` with `count` pull requests, requiring `local-ci`.
async fn queue_with_prs(env: &LiveEnv, count: u32, settings: Value) -> GitRepo {
    let repo = env.repo("rocket");
    repo.add_prs(count, &[]);
    let mut settings = settings;
    settings["requiredStatuses"] = json!([CI]);
    env.create_queue(&repo, settings).await;
    repo
}

fn enqueued_numbers(queue: &Value) -> Vec<u64> {
    queue["enqueuedPullRequests"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["prNumber"].as_u64())
        .collect()
}

fn main_subjects(prs: &[u32]) -> Vec<String> {
    prs.iter()
        .map(|pr| format!("Change {pr} (#{pr})"))
        .collect()
}

async fn run_status(env: &LiveEnv, repo: &GitRepo, run: &Run) -> Value {
    env.details(repo, &run.id).await["status"].clone()
}

async fn urgent_preempts_the_running_test(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = queue_with_prs(&env, 4, json!({"concurrency": 1})).await;
    for pr in 1..=3 {
        env.submit(&repo, pr).await;
    }
    let first = env.wait_for_run(&repo, 1).await;

    let urgent = env
        .submit_with(&repo, 4, json!({"priority": "URGENT"}))
        .await;
    assert_eq!(urgent.status, 200, "{:?}", urgent.body);
    let seen = env.pull_request(&repo, 4).await;
    assert_eq!(
        (
            &seen["priorityName"],
            &seen["priorityValue"],
            &seen["skipTheLine"]
        ),
        (&json!("urgent"), &json!(0), &json!(true))
    );
    let run = env.wait_for_run(&repo, 4).await;
    assert_eq!(
        repo.files(&run.sha),
        ["README.md", "change-4.txt"],
        "the urgent pull request is tested alone on main"
    );
    env.wait_for_state(&repo, 1, "pending").await;
    assert_eq!(run_status(&env, &repo, &first).await, "cancelled");
    assert_eq!(enqueued_numbers(&env.queue(&repo).await), [4, 1, 2, 3]);

    for pr in [4, 1, 2, 3] {
        env.pass(&repo, pr).await;
        env.wait_for_state(&repo, pr, "merged").await;
    }
    assert_eq!(repo.history_subjects("main"), main_subjects(&[4, 1, 2, 3]));
}

async fn cancel_during_testing_restarts_the_groups_behind(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = queue_with_prs(&env, 2, json!({"concurrency": 2})).await;
    env.submit(&repo, 1).await;
    env.submit(&repo, 2).await;
    let first = env.wait_for_run(&repo, 1).await;
    let behind = env.wait_for_run(&repo, 2).await;
    assert!(repo.files(&behind.sha).contains(&"change-1.txt".to_owned()));

    assert_eq!(env.pr_call("cancelPullRequest", &repo, 1).await.status, 200);
    let cancelled = env.pull_request(&repo, 1).await;
    assert_eq!(cancelled["state"], "cancelled");
    assert_eq!(cancelled["isCurrentlySubmittedToQueue"], false);
    assert_eq!(run_status(&env, &repo, &first).await, "cancelled");
    assert!(
        !repo.test_branches().iter().any(|b| b.ends_with(&first.id)),
        "the cancelled run's branch is deleted"
    );

    let retest = env.wait_for_run(&repo, 2).await;
    assert_ne!(retest.id, behind.id, "#2 restarts without #1");
    assert_eq!(repo.files(&retest.sha), ["README.md", "change-2.txt"]);
    env.pass(&repo, 2).await;
    env.wait_for_state(&repo, 2, "merged").await;
    assert_eq!(repo.files("main"), ["README.md", "change-2.txt"]);

    for pr in [1, 2] {
        let again = env.pr_call("cancelPullRequest", &repo, pr).await;
        assert_eq!(again.status, 409, "#{pr} is no longer active");
    }
}

async fn restart_reruns_one_group_in_place(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = queue_with_prs(&env, 3, json!({"concurrency": 2})).await;
    for pr in 1..=3 {
        env.submit(&repo, pr).await;
    }
    let first = env.wait_for_run(&repo, 1).await;
    let behind = env.wait_for_run(&repo, 2).await;
    let pending = env.pr_call("restartTestsOnPullRequest", &repo, 3).await;
    assert_eq!(
        pending.status, 409,
        "a pending pull request has no test to restart"
    );

    let restart = env.pr_call("restartTestsOnPullRequest", &repo, 1).await;
    assert_eq!(restart.status, 200, "{:?}", restart.body);
    let rerun = wait_for_new_run(&env, &repo, 1, &first).await;
    assert_eq!(run_status(&env, &repo, &first).await, "cancelled");
    assert_eq!(repo.tree(&rerun.sha), repo.tree(&first.sha), "same content");
    assert_eq!(env.pull_request(&repo, 1).await["state"], "testing");
    assert_eq!(
        env.wait_for_run(&repo, 2).await.id,
        behind.id,
        "no other group restarts"
    );
    assert_eq!(env.pull_request(&repo, 3).await["state"], "pending");

    for pr in 1..=3 {
        env.pass(&repo, pr).await;
        env.wait_for_state(&repo, pr, "merged").await;
    }
    assert_eq!(repo.history_subjects("main"), main_subjects(&[1, 2, 3]));
    let done = env.pr_call("restartTestsOnPullRequest", &repo, 1).await;
    assert_eq!(done.status, 409, "a merged pull request cannot restart");
}

/// A restart after a failure (a flaky test) must be tested anew. The rebuilt test branch
/// has the same base and pull requests; built within the same second it is the very same
/// commit, so the failure CI reported for the previous run is read back as the new run's
/// result and the restart fails at once, untested.
async fn a_restart_after_a_failure_is_tested_anew(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = queue_with_prs(&env, 2, json!({"concurrency": 2})).await;
    env.submit(&repo, 1).await;
    env.submit(&repo, 2).await;
    let first = env.wait_for_run(&repo, 1).await;
    env.wait_for_run(&repo, 2).await;

    // Start the scenario early in a second of the wall clock, so that it fits in one.
    e2e::live::wait_until("the start of a second", || async {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        (now.subsec_millis() < 100).then_some(())
    })
    .await;
    env.pr_call("restartTestsOnPullRequest", &repo, 1).await;
    let failed = wait_for_new_run(&env, &repo, 1, &first).await;
    env.set_status(&repo, &failed.sha, CI, StatusState::Failure)
        .await;
    env.wait_for_state(&repo, 1, "pending_failure").await;
    let restart = env.pr_call("restartTestsOnPullRequest", &repo, 1).await;
    assert_eq!(restart.status, 200, "{:?}", restart.body);

    let retry = e2e::live::wait_until("the retry's test branch", || async {
        for branch in repo.test_branches() {
            let id = branch.rsplit('/').next().unwrap_or_default();
            let details = env.details(&repo, id).await;
            let sha = details["testBranchSha"].as_str().unwrap_or_default();
            let tests_1 = details["testedPullRequests"][0]["prNumber"] == 1;
            if tests_1 && id != failed.id && !sha.is_empty() {
                return Some(details);
            }
        }
        None
    })
    .await;
    assert_ne!(
        retry["testBranchSha"], failed.sha,
        "the retry is a new commit"
    );
    assert_eq!(retry["status"], "in_progress", "the retry waits for CI");
    assert_eq!(env.pull_request(&repo, 1).await["state"], "testing");
}

/// Someone merges a queued pull request by hand (`main` moves to its head), and the queue
/// learns of it as a moved target before (or without) hearing the pull request was merged:
/// the groups restart on the new head, and #2, found already on it, is cancelled as merged
/// outside, not failed, while #1 ahead of it is tested on the new head and merges.
async fn a_pull_request_merged_by_hand_is_cancelled_as_merged_outside(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = queue_with_prs(&env, 2, json!({"concurrency": 2})).await;
    env.submit(&repo, 1).await;
    env.submit(&repo, 2).await;
    let stale = env.wait_for_run(&repo, 1).await;

    let by_hand = repo.pr_head(2);
    repo.git(&["update-ref", "refs/heads/main", &by_hand]);
    env.set_status(&repo, &stale.sha, CI, StatusState::Success)
        .await;
    let cancelled = env.wait_for_state(&repo, 2, "cancelled").await;
    assert_eq!(cancelled["isCurrentlySubmittedToQueue"], false);
    env.wait_for_comment(&repo, 2, "merged outside this queue")
        .await;
    let fresh = wait_for_new_run(&env, &repo, 1, &stale).await;
    assert!(repo.files(&fresh.sha).contains(&"change-2.txt".to_owned()));
    env.set_status(&repo, &fresh.sha, CI, StatusState::Success)
        .await;
    env.wait_for_state(&repo, 1, "merged").await;
    assert_eq!(repo.tree("main"), repo.tree(&fresh.sha));
}

/// The run testing `pr` once it is no longer `old`.
async fn wait_for_new_run(env: &LiveEnv, repo: &GitRepo, pr: u32, old: &Run) -> Run {
    e2e::live::wait_for("a new run", || async {
        match env.current_run(repo, pr).await {
            Some(run) if run.id != old.id => Ok(run),
            _ => Err(format!(
                "{}; branches {:?}",
                env.pull_request(repo, pr).await,
                repo.test_branches()
            )),
        }
    })
    .await
}

async fn paused_queues_neither_start_nor_merge_until_resumed(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = queue_with_prs(&env, 3, json!({"concurrency": 1})).await;
    env.submit(&repo, 1).await;
    env.submit(&repo, 2).await;
    let first = env.wait_for_run(&repo, 1).await;

    let paused = env.update_queue(&repo, json!({"state": "paused"})).await;
    assert_eq!(paused["state"], "paused");
    env.set_status(&repo, &first.sha, CI, StatusState::Success)
        .await;
    env.wait_for_state(&repo, 1, "tests_passed").await;
    assert_eq!(env.submit(&repo, 3).await, json!({}));
    env.tick().await;
    assert!(
        repo.history("main").is_empty(),
        "nothing merges while paused"
    );
    assert_eq!(env.pull_request(&repo, 2).await["state"], "pending");
    assert_eq!(env.pull_request(&repo, 3).await["state"], "pending");
    assert_eq!(repo.test_branches().len(), 1, "no test starts while paused");

    env.update_queue(&repo, json!({"state": "running"})).await;
    env.wait_for_state(&repo, 1, "merged").await;
    for pr in [2, 3] {
        env.pass(&repo, pr).await;
        env.wait_for_state(&repo, pr, "merged").await;
    }
    assert_eq!(repo.history_subjects("main"), main_subjects(&[1, 2, 3]));
}

async fn draining_refuses_submissions_and_finishes_running_work(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = queue_with_prs(&env, 3, json!({"concurrency": 1})).await;
    env.submit(&repo, 1).await;
    env.submit(&repo, 2).await;
    env.wait_for_run(&repo, 1).await;

    env.update_queue(&repo, json!({"state": "draining"})).await;
    let refused = env.submit_with(&repo, 3, json!({})).await;
    assert_eq!(refused.status, 409);
    assert!(
        refused.message().contains("draining"),
        "{}",
        refused.message()
    );

    env.pass(&repo, 1).await;
    env.wait_for_state(&repo, 1, "merged").await;
    env.tick().await;
    assert_eq!(env.pull_request(&repo, 2).await["state"], "pending");
    assert!(
        env.current_run(&repo, 2).await.is_none(),
        "nothing new starts"
    );
    let restart = env.pr_call("restartTestsOnPullRequest", &repo, 2).await;
    assert_eq!(
        restart.status, 409,
        "a pending pull request has no test to restart"
    );
    let queue = env.queue(&repo).await;
    assert_eq!(queue["state"], "draining");
    assert_eq!(enqueued_numbers(&queue), [2]);
    assert_eq!(repo.history_subjects("main"), main_subjects(&[1]));
}

async fn a_run_past_the_timeout_fails_on_the_tick(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = queue_with_prs(&env, 1, json!({"testingTimeoutMinutes": 1})).await;
    env.submit(&repo, 1).await;
    let run = env.wait_for_run(&repo, 1).await;
    env.tick().await;
    assert_eq!(env.pull_request(&repo, 1).await["state"], "testing");

    env.clock.advance_minutes(1);
    env.wait_for_state(&repo, 1, "failed").await;
    let details = env.details(&repo, &run.id).await;
    assert_eq!(details["status"], "failed");
    env.wait_for_comment(&repo, 1, "did not finish within the testing timeout")
        .await;
    assert!(repo.history("main").is_empty());
    e2e::live::wait_until("the timed-out branch to be deleted", || async {
        repo.test_branches().is_empty().then_some(())
    })
    .await;
}

async fn direct_merge_skips_the_test_run(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = queue_with_prs(&env, 2, json!({"directMergeMode": "always"})).await;
    for pr in [1, 2] {
        env.set_status(&repo, &repo.pr_head(pr), CI, StatusState::Success)
            .await;
    }

    env.submit(&repo, 1).await;
    let merged = env.pull_request(&repo, 1).await;
    assert_eq!(merged["state"], "merged", "merged on submission: {merged}");
    assert!(repo.test_branches().is_empty(), "no test branch was made");
    assert_eq!(repo.history_subjects("main"), main_subjects(&[1]));
    assert_eq!(repo.tree("main"), repo.tree(&repo.pr_head(1)));

    // #2 passed CI too, but on the old main: it goes through the queue.
    env.submit(&repo, 2).await;
    let run = env.wait_for_run(&repo, 2).await;
    assert_eq!(
        repo.files(&run.sha),
        ["README.md", "change-1.txt", "change-2.txt"]
    );
    env.pass(&repo, 2).await;
    env.wait_for_state(&repo, 2, "merged").await;
    assert_eq!(repo.history_subjects("main"), main_subjects(&[1, 2]));
}

async fn a_push_to_main_outside_the_queue_is_tested_before_merging(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = queue_with_prs(&env, 1, json!({})).await;
    env.submit(&repo, 1).await;
    let stale = env.wait_for_run(&repo, 1).await;

    let pushed = repo.push_commit("main", "hotfix.txt");
    env.set_status(&repo, &stale.sha, CI, StatusState::Success)
        .await;
    let fresh = wait_for_new_run(&env, &repo, 1, &stale).await;
    assert_eq!(
        repo.files(&fresh.sha),
        ["README.md", "change-1.txt", "hotfix.txt"],
        "#1 is tested again on the pushed head"
    );
    assert_eq!(repo.head("main"), Some(pushed), "nothing merged untested");
    env.set_status(&repo, &fresh.sha, CI, StatusState::Success)
        .await;
    env.wait_for_state(&repo, 1, "merged").await;
    assert_eq!(repo.tree("main"), repo.tree(&fresh.sha));
}
