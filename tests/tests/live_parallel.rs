//! Parallel mode on a real repository: impacted targets split the queue into lanes that test
//! and merge independently; a pull request that shares targets with one ahead is tested on
//! top of it and reports it in `dependentPrs`.

use e2e::ACME;
use e2e::git_repo::GitRepo;
use e2e::live::{CI, LiveEnv, body};
use e2e::{Backend, live_on_both_stores};
use mq_store::FaultyStore;
use serde_json::json;
use std::sync::Arc;

live_on_both_stores!(
    independent_lanes_merge_independently,
    targets_uploaded_before_submission_apply_when_a_queue_turns_parallel,
    targets_of_a_pull_request_submitted_while_its_queue_turns_parallel_apply,
    targets_uploaded_to_a_deleted_queue_do_not_count,
    the_largest_target_lists_fit_their_entries_and_runs,
    an_abbreviated_head_sha_names_the_head,
    targets_for_a_head_pushed_since_the_submission_wait_for_it,
    targets_uploaded_while_their_entry_ends_are_kept_for_its_head,
    targets_for_an_old_head_uploaded_while_a_push_ends_the_entry_replace_nothing
);

/// #3 shares targets with #1 and #2, so its branch is the target with #1, #2 and #3 merged in
/// that order. #2's lane merges first; then #3 and #1 pass. No merge of #1 and #3 can land
/// #3's tested commit (it holds #2 between them): under every merge method both merge without
/// it, and the target ends with every change.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_run_across_two_lanes_merges_when_the_lanes_merge_out_of_its_order() {
    for method in ["squash", "rebase", "merge_commit"] {
        let env = LiveEnv::start(Backend::Memory).await;
        let repo = env.repo("rocket");
        let heads = repo.add_prs(3, &[]);
        let settings = json!({"mode": "parallel", "concurrency": 3, "mergeMethod": method,
                              "requiredStatuses": [CI]});
        env.create_queue(&repo, settings).await;
        for (pr, targets) in [(1, json!(["x"])), (2, json!(["y"])), (3, json!(["x", "y"]))] {
            let head = &heads[pr as usize - 1];
            let set = env.set_impacted_targets(&repo, pr, head, targets).await;
            assert_eq!(set.status, 200, "{:?}", set.body);
            env.submit(&repo, pr).await;
        }
        let across = env.wait_for_run(&repo, 3).await;
        assert_eq!(across.details["dependentPrs"], json!([1, 2]), "{method}");
        env.pass(&repo, 2).await;
        env.wait_for_state(&repo, 2, "merged").await;
        env.pass(&repo, 3).await;
        env.wait_for_state(&repo, 3, "tests_passed").await;
        env.pass(&repo, 1).await;
        for pr in [1, 3] {
            env.wait_for_state(&repo, pr, "merged").await;
        }
        assert_eq!(
            repo.files("main"),
            ["README.md", "change-1.txt", "change-2.txt", "change-3.txt"],
            "{method}"
        );
    }
}

async fn independent_lanes_merge_independently(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = env.repo("rocket");
    let heads = repo.add_prs(4, &[]);
    let settings = json!({"mode": "parallel", "concurrency": 3, "requiredStatuses": [CI]});
    env.create_queue(&repo, settings).await;

    // Targets uploaded before submission wait for it; after submission they apply at once.
    let before = env
        .set_impacted_targets(&repo, 1, &heads[0], json!(["api"]))
        .await;
    assert_eq!(before.status, 200, "{:?}", before.body);
    env.submit(&repo, 1).await;
    for (pr, targets) in [(2, json!(["web"])), (3, json!(["api", "docs"]))] {
        env.submit(&repo, pr).await;
        let head = &heads[pr as usize - 1];
        let after = env.set_impacted_targets(&repo, pr, head, targets).await;
        assert_eq!(after.status, 200, "{:?}", after.body);
    }
    env.submit(&repo, 4).await;
    let waiting = env.pull_request(&repo, 4).await;
    assert_eq!(waiting["state"], "not_ready");
    assert_eq!(
        waiting["readiness"],
        json!({"requiresImpactedTargets": true, "hasImpactedTargets": false,
               "doesBaseBranchMatch": true}),
        "without targets a pull request waits in parallel mode"
    );

    let api = env.wait_for_run(&repo, 1).await;
    let web = env.wait_for_run(&repo, 2).await;
    let dependent = env.wait_for_run(&repo, 3).await;
    assert_eq!(api.details["dependentPrs"], json!([]));
    assert_eq!(web.details["dependentPrs"], json!([]));
    assert_eq!(dependent.details["dependentPrs"], json!([1]));
    assert_eq!(dependent.details["impactedTargets"], json!(["api", "docs"]));
    assert_eq!(
        dependent.details["impactedTargetsForTestedPrs"],
        json!(["api", "docs"])
    );
    assert_eq!(web.details["impactedTargets"], json!(["web"]));
    assert_eq!(
        repo.files(&dependent.sha),
        ["README.md", "change-1.txt", "change-3.txt"],
        "#3 is tested on top of #1 and without #2"
    );

    // The web lane merges while the api lane is still testing.
    env.pass(&repo, 2).await;
    env.wait_for_state(&repo, 2, "merged").await;
    for pr in [1, 3] {
        assert_eq!(env.pull_request(&repo, pr).await["state"], "testing");
    }
    assert_eq!(repo.history_subjects("main"), ["Change 2 (#2)"]);

    env.pass(&repo, 3).await;
    env.wait_for_state(&repo, 3, "tests_passed").await;
    assert_eq!(
        repo.history_subjects("main"),
        ["Change 2 (#2)"],
        "#3 waits for #1, which it depends on"
    );
    env.pass(&repo, 1).await;
    env.wait_for_state(&repo, 1, "merged").await;
    env.wait_for_state(&repo, 3, "merged").await;

    let all = env
        .set_impacted_targets(&repo, 4, &heads[3], json!("ALL"))
        .await;
    assert_eq!(all.status, 200, "{:?}", all.body);
    env.pass(&repo, 4).await;
    env.wait_for_state(&repo, 4, "merged").await;
    assert_eq!(
        repo.history_subjects("main"),
        [
            "Change 2 (#2)",
            "Change 1 (#1)",
            "Change 3 (#3)",
            "Change 4 (#4)"
        ]
    );
    assert_eq!(
        repo.files("main"),
        [
            "README.md",
            "change-1.txt",
            "change-2.txt",
            "change-3.txt",
            "change-4.txt"
        ]
    );
}

/// A single-mode queue does not use impacted targets; when it switches to parallel mode, its
/// waiting pull requests take those uploaded for their heads before they were submitted.
async fn targets_uploaded_before_submission_apply_when_a_queue_turns_parallel(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = env.repo("rocket");
    let heads = repo.add_prs(2, &[]);
    let settings = json!({"concurrency": 2, "requiredStatuses": [CI]});
    env.create_queue(&repo, settings).await;
    env.update_queue(&repo, json!({"state": "paused"})).await;
    let uploaded = env
        .set_impacted_targets(&repo, 1, &heads[0], json!(["api"]))
        .await;
    assert_eq!(uploaded.status, 200, "{:?}", uploaded.body);
    env.submit(&repo, 1).await;
    env.submit(&repo, 2).await;
    for pr in [1, 2] {
        assert_eq!(env.pull_request(&repo, pr).await["state"], "pending");
    }

    env.update_queue(&repo, json!({"mode": "parallel"})).await;
    let with = env.pull_request(&repo, 1).await;
    assert_eq!(with["state"], "pending", "{with}");
    assert_eq!(with["readiness"]["hasImpactedTargets"], true);
    let without = env.pull_request(&repo, 2).await;
    assert_eq!(without["state"], "not_ready", "{without}");
    assert_eq!(without["readiness"]["hasImpactedTargets"], false);

    env.update_queue(&repo, json!({"state": "running"})).await;
    let api = env.wait_for_run(&repo, 1).await;
    assert_eq!(api.details["impactedTargets"], json!(["api"]));
}

/// A pull request whose targets were uploaded before it was submitted, submitted while its
/// queue switches to parallel mode: the switch has read the targets of the entries it saw
/// (#2's) and has not committed yet. The submission commits in single mode, without
/// targets; the switch commits after it, and still gives #1 its targets.
async fn targets_of_a_pull_request_submitted_while_its_queue_turns_parallel_apply(
    backend: Backend,
) {
    let (env, store) = LiveEnv::options().start_with_faulty_store(backend, 1).await;
    let repo = env.repo("rocket");
    let heads = repo.add_prs(2, &[]);
    let settings = json!({"concurrency": 2, "requiredStatuses": [CI]});
    env.create_queue(&repo, settings).await;
    env.update_queue(&repo, json!({"state": "paused"})).await;
    env.submit(&repo, 2).await;
    let uploaded = env
        .set_impacted_targets(&repo, 1, &heads[0], json!(["api"]))
        .await;
    assert_eq!(uploaded.status, 200, "{:?}", uploaded.body);

    let held = store.hold_next_uploaded_targets_answer();
    let switch = env.update_queue(&repo, json!({"mode": "parallel"}));
    let submit_meanwhile = async {
        held.reached.notified().await;
        env.submit(&repo, 1).await;
        let submitted = env.pull_request(&repo, 1).await;
        assert_eq!(
            submitted["readiness"]["requiresImpactedTargets"], false,
            "#1 was submitted before the switch committed: {submitted}"
        );
        held.release.notify_one();
    };
    tokio::join!(switch, submit_meanwhile);

    let with = env.pull_request(&repo, 1).await;
    assert_eq!(with["state"], "pending", "{with}");
    assert_eq!(with["readiness"]["hasImpactedTargets"], true, "{with}");
    env.update_queue(&repo, json!({"state": "running"})).await;
    let api = env.wait_for_run(&repo, 1).await;
    assert_eq!(api.details["impactedTargets"], json!(["api"]));
}

/// A parallel queue, without a background tick, on a store whose reads a test can hold, with
/// #1 submitted (waiting for its targets); the pull requests' heads.
async fn one_submitted_to_a_parallel_queue(
    backend: Backend,
) -> (LiveEnv, Arc<FaultyStore>, GitRepo, Vec<String>) {
    let options = LiveEnv::options().without_tick();
    let (env, store) = options.start_with_faulty_store(backend, 1).await;
    let repo = env.repo("rocket");
    let heads = repo.add_prs(1, &[]);
    let settings = json!({"mode": "parallel", "requiredStatuses": [CI]});
    env.create_queue(&repo, settings).await;
    env.submit(&repo, 1).await;
    (env, store, repo, heads)
}

/// Targets uploaded while the pull request's entry ends (here it is cancelled between the
/// upload's read of the queue and its commit) are kept for their head, as for a pull request
/// not in the queue: submitted again at that head, it does not wait for them.
async fn targets_uploaded_while_their_entry_ends_are_kept_for_its_head(backend: Backend) {
    let (env, store, repo, heads) = one_submitted_to_a_parallel_queue(backend).await;
    let waiting = env.pull_request(&repo, 1).await;
    assert_eq!(
        waiting["readiness"]["hasImpactedTargets"], false,
        "{waiting}"
    );

    let held = store.hold_next_load_answer();
    let upload = env.set_impacted_targets(&repo, 1, &heads[0], json!(["api"]));
    let cancel_meanwhile = async {
        held.reached.notified().await;
        let cancelled = env.pr_call("cancelPullRequest", &repo, 1).await;
        assert_eq!(cancelled.status, 200, "{:?}", cancelled.body);
        held.release.notify_one();
    };
    let (uploaded, ()) = tokio::join!(upload, cancel_meanwhile);
    assert_eq!(uploaded.status, 200, "{:?}", uploaded.body);

    env.submit(&repo, 1).await;
    let again = env.pull_request(&repo, 1).await;
    assert_eq!(again["readiness"]["hasImpactedTargets"], true, "{again}");
    let api = env.wait_for_run(&repo, 1).await;
    assert_eq!(api.details["impactedTargets"], json!(["api"]));
}

/// The same race with a push: CI's targets for the queued head are being uploaded when the
/// author pushes, and CI's targets for the new head end the entry and are recorded. The first
/// upload then finds the entry gone and the pull request at another head: refused (409
/// `SHA_MISMATCH`), and the new head keeps its own targets.
async fn targets_for_an_old_head_uploaded_while_a_push_ends_the_entry_replace_nothing(
    backend: Backend,
) {
    let (env, store, repo, heads) = one_submitted_to_a_parallel_queue(backend).await;

    let held = store.hold_next_load_answer();
    let old = env.set_impacted_targets(&repo, 1, &heads[0], json!(["api"]));
    let push_meanwhile = async {
        held.reached.notified().await;
        let pushed = repo.push_to_pr(1, "late.txt");
        let new = env
            .set_impacted_targets(&repo, 1, &pushed, json!(["web"]))
            .await;
        assert_eq!(new.status, 200, "{:?}", new.body);
        held.release.notify_one();
    };
    let (refused, ()) = tokio::join!(old, push_meanwhile);
    assert_eq!(refused.status, 409, "{:?}", refused.body);
    assert_eq!(refused.body["error"]["code"], "SHA_MISMATCH");

    env.submit(&repo, 1).await;
    let again = env.pull_request(&repo, 1).await;
    assert_eq!(again["readiness"]["hasImpactedTargets"], true, "{again}");
    let web = env.wait_for_run(&repo, 1).await;
    assert_eq!(web.details["impactedTargets"], json!(["web"]));
}

/// Targets uploaded for a pull request to a queue that was deleted since are not the new
/// queue's: a queue created again under the same name waits for its own upload.
async fn targets_uploaded_to_a_deleted_queue_do_not_count(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = env.repo("rocket");
    let heads = repo.add_prs(1, &[]);
    let settings = json!({"mode": "parallel", "requiredStatuses": [CI]});
    env.create_queue(&repo, settings.clone()).await;
    let early = env
        .set_impacted_targets(&repo, 1, &heads[0], json!(["api"]))
        .await;
    assert_eq!(early.status, 200, "{:?}", early.body);
    let deleted = env
        .post("deleteQueue", Some(ACME), &body(&repo, json!({})))
        .await;
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);

    env.clock.advance_minutes(1);
    env.create_queue(&repo, settings).await;
    env.submit(&repo, 1).await;
    let waiting = env.pull_request(&repo, 1).await;
    assert_eq!(
        (
            &waiting["state"],
            &waiting["readiness"]["hasImpactedTargets"]
        ),
        (&json!("not_ready"), &json!(false)),
        "{waiting}"
    );
    let again = env
        .set_impacted_targets(&repo, 1, &heads[0], json!(["api"]))
        .await;
    assert_eq!(again.status, 200, "{:?}", again.body);
    env.wait_for_run(&repo, 1).await;
}

/// The largest lists an upload may send (4,096 names; 64 KiB of names) are kept with their
/// entries and runs on both stores, and a run whose lane names more than it keeps reports
/// `ALL`: every DynamoDB item stays under its 400 KB.
async fn the_largest_target_lists_fit_their_entries_and_runs(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = env.repo("rocket");
    let heads = repo.add_prs(2, &[]);
    let settings = json!({"mode": "parallel", "concurrency": 2, "requiredStatuses": [CI]});
    env.create_queue(&repo, settings).await;
    let mut most_names: Vec<String> = (0..4_095).map(|i| format!("//many:t{i:07}")).collect();
    let mut longest_names: Vec<String> = (0..64)
        .map(|i| format!("//long:{i:02}{}", "x".repeat(991)))
        .collect();
    for list in [&mut most_names, &mut longest_names] {
        list.push("//shared".to_owned());
        let bytes: usize = list.iter().map(String::len).sum();
        assert!(bytes <= 65_536, "{bytes}");
    }
    for (pr, list) in [(1, &most_names), (2, &longest_names)] {
        env.submit(&repo, pr).await;
        let uploaded = env
            .set_impacted_targets(&repo, pr, &heads[pr as usize - 1], json!(list))
            .await;
        assert_eq!(uploaded.status, 200, "{:?}", uploaded.body);
    }
    let first = env.wait_for_run(&repo, 1).await;
    assert_eq!(
        first.details["impactedTargets"].as_array().unwrap().len(),
        4_096
    );
    let second = env.wait_for_run(&repo, 2).await;
    assert_eq!(second.details["dependentPrs"], json!([1]));
    assert_eq!(second.details["impactedTargets"], json!(["ALL"]));
    assert_eq!(
        second.details["impactedTargetsForTestedPrs"]
            .as_array()
            .unwrap()
            .len(),
        65
    );
}

/// `pr.sha` may be abbreviated, as git takes it (7 hex digits or more, any case): before
/// submission it is checked with the Git host's head, after it with the entry's.
/// #1 is queued at its first head; its author pushes, and CI uploads the targets of the new
/// head before the queue hears of the push. The upload is for the pull request's head: its
/// entry is cancelled for the new commits, and the targets wait for that head's submission.
async fn targets_for_a_head_pushed_since_the_submission_wait_for_it(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = env.repo("rocket");
    repo.add_prs(1, &[]);
    let settings = json!({"mode": "parallel", "requiredStatuses": [CI]});
    env.create_queue(&repo, settings).await;
    env.update_queue(&repo, json!({"state": "paused"})).await;
    env.submit(&repo, 1).await;
    let pushed = repo.push_to_pr(1, "more.txt");
    let uploaded = env
        .set_impacted_targets(&repo, 1, &pushed, json!(["api"]))
        .await;
    assert_eq!(uploaded.status, 200, "{:?}", uploaded.body);
    let cancelled = env.pull_request(&repo, 1).await;
    assert_eq!(cancelled["state"], "cancelled", "{cancelled}");
    env.submit(&repo, 1).await;
    let queued = env.pull_request(&repo, 1).await;
    assert_eq!(queued["prSha"], pushed.as_str(), "{queued}");
    assert_eq!(queued["readiness"]["hasImpactedTargets"], true, "{queued}");
    let neither = env
        .set_impacted_targets(&repo, 1, "0000000", json!(["web"]))
        .await;
    assert_eq!(
        neither.body["error"]["code"], "SHA_MISMATCH",
        "{:?}",
        neither.body
    );
}

async fn an_abbreviated_head_sha_names_the_head(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = env.repo("rocket");
    let heads = repo.add_prs(2, &[]);
    let settings = json!({"mode": "parallel", "concurrency": 2, "requiredStatuses": [CI]});
    env.create_queue(&repo, settings).await;
    let before = env
        .set_impacted_targets(&repo, 1, &heads[0][..7], json!(["api"]))
        .await;
    assert_eq!(before.status, 200, "{:?}", before.body);
    env.submit(&repo, 1).await;
    env.submit(&repo, 2).await;
    let after = env
        .set_impacted_targets(&repo, 2, &heads[1][..12].to_uppercase(), json!(["web"]))
        .await;
    assert_eq!(after.status, 200, "{:?}", after.body);
    for pr in [1, 2] {
        let entry = env.pull_request(&repo, pr).await;
        assert_eq!(entry["readiness"]["hasImpactedTargets"], true, "{entry}");
    }
    let wrong = env
        .set_impacted_targets(&repo, 2, "0000000", json!(["web"]))
        .await;
    assert_eq!(wrong.status, 409, "{:?}", wrong.body);
    assert_eq!(wrong.body["error"]["code"], "SHA_MISMATCH");
}
