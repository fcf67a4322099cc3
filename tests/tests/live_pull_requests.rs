//! The pull request endpoints on a live queue: the exact shapes of `getSubmittedPullRequest`
//! (`SubmittedPullRequest` in `openapi/openapi.json`), `getQueue.enqueuedPullRequests`
//! (`EnqueuedPullRequest`) and `getMergeQueueTestingDetails` (`TestingDetails`) for a running and
//! a finished run, and their errors (docs/queue-semantics.md §1, §4).

use e2e::git_repo::{AUTHOR, GitRepo, PrSpec};
use e2e::live::{CI, LiveEnv, body, pr_body, wait_for};
use e2e::{ACME, Backend, UMBRELLA, live_on_both_stores};
use mq_core::git::StatusState;
use serde_json::{Value, json};

live_on_both_stores!(
    submitted_and_enqueued_pull_requests_have_every_field,
    testing_details_of_a_running_and_a_finished_run,
    impacted_targets_for_another_sha_conflict,
    unknown_pull_requests_and_other_organisations_get_not_found,
    cancel_and_restart_of_inactive_pull_requests_conflict,
    a_resubmission_of_a_closed_pull_request_ends_its_entry,
    the_comment_and_status_check_say_where_each_pull_request_stands,
    a_branch_requiring_the_queues_own_status_merges_what_ci_passed,
    a_broken_configuration_file_is_named_and_the_queues_own_list_works_around_it,
    a_pull_request_merges_only_while_its_reviews_approve_it,
);

/// Fields of `getSubmittedPullRequest` (`SubmittedPullRequest` in `openapi/openapi.json`).
const SUBMITTED_FIELDS: [&str; 16] = [
    "stateChangedAt",
    "priorityValue",
    "priorityName",
    "skipTheLine",
    "forceEnqueued",
    "isCurrentlySubmittedToQueue",
    "prNumber",
    "prTitle",
    "prSha",
    "prBaseBranch",
    "prAuthor",
    "id",
    "state",
    "readiness",
    "usedDefaultPriorityName",
    "testRunId",
];

/// Fields of an item of `enqueuedPullRequests` (`EnqueuedPullRequest` in `openapi/openapi.json`).
const ENQUEUED_FIELDS: [&str; 13] = [
    "stateChangedAt",
    "priorityValue",
    "priorityName",
    "skipTheLine",
    "noBatch",
    "prNumber",
    "prTitle",
    "prSha",
    "prBaseBranch",
    "prAuthor",
    "id",
    "usedDefaultPriorityName",
    "stuck",
];

/// Required fields of `getMergeQueueTestingDetails` (`TestingDetails` in `openapi/openapi.json`),
/// and the optional ones every run has.
const DETAILS_FIELDS: [&str; 9] = [
    "requiredStatuses",
    "testBranch",
    "testBranchSha",
    "checkSuites",
    "statusChecks",
    "testedPullRequests",
    "requiredStatusesSource",
    "createdAt",
    "status",
];

fn keys(object: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = object
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

fn sorted<const N: usize>(fields: [&'static str; N]) -> Vec<&'static str> {
    let mut fields = fields.to_vec();
    fields.sort_unstable();
    fields
}

/// An RFC 3339 UTC timestamp with milliseconds, as docs/queue-semantics.md §1 says.
fn assert_timestamp(value: &Value) {
    let text = value.as_str().unwrap_or_default();
    let bytes = text.as_bytes();
    let shaped = text.len() == 24
        && text.ends_with('Z')
        && bytes[10] == b'T'
        && bytes[19] == b'.'
        && text[..4].parse::<u32>().is_ok();
    assert!(shaped, "not an RFC 3339 timestamp in UTC with ms: {value}");
}

async fn submitted_and_enqueued_pull_requests_have_every_field(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = env.repo("rocket");
    repo.add_branch("release");
    let heads = [
        repo.add_pr(PrSpec::new(1)),
        repo.add_pr(PrSpec::new(2).based_on("release")),
    ];
    env.create_queue(&repo, json!({"requiredStatuses": [CI]}))
        .await;

    let submitted = env
        .submit_with(&repo, 1, json!({"priority": "high", "noBatch": true}))
        .await;
    assert_eq!((submitted.status, &submitted.body), (200, &json!({})));
    env.submit(&repo, 2).await;
    let first = env.wait_for_state(&repo, 1, "testing").await;
    let mut expected = sorted(SUBMITTED_FIELDS);
    expected.retain(|f| *f != "usedDefaultPriorityName");
    assert_eq!(keys(&first), expected, "a priority was given: {first}");
    assert_timestamp(&first["stateChangedAt"]);
    assert!(!first["id"].as_str().unwrap_or_default().is_empty());
    let run = env.wait_for_run(&repo, 1).await;
    assert_eq!(first["testRunId"], json!(run.id), "the run testing #1");
    let mut without_time = first.clone();
    without_time["stateChangedAt"] = json!(null);
    without_time["id"] = json!(null);
    without_time["testRunId"] = json!(null);
    assert_eq!(
        without_time,
        json!({
            "stateChangedAt": null, "id": null, "testRunId": null, "state": "testing",
            "priorityValue": 10, "priorityName": "high", "skipTheLine": false,
            "forceEnqueued": false, "isCurrentlySubmittedToQueue": true,
            "prNumber": 1, "prTitle": "Change 1", "prSha": heads[0],
            "prBaseBranch": "main", "prAuthor": AUTHOR,
            "readiness": {"requiresImpactedTargets": false, "doesBaseBranchMatch": true,
                          "hasImpactedTargets": false},
        })
    );

    // Submitted again without a priority: the one it has is kept.
    env.submit(&repo, 1).await;
    let again = env.pull_request(&repo, 1).await;
    assert_eq!(
        (&again["priorityName"], &again["id"]),
        (&json!("high"), &first["id"])
    );

    let second = env.pull_request(&repo, 2).await;
    let mut never_tested = sorted(SUBMITTED_FIELDS);
    never_tested.retain(|f| *f != "testRunId");
    assert_eq!(
        keys(&second),
        never_tested,
        "#2 has not been tested: {second}"
    );
    assert_eq!(second["state"], "not_ready");
    assert_eq!(second["readiness"]["doesBaseBranchMatch"], false);
    assert_eq!(second["prBaseBranch"], "release");
    assert_eq!(
        (
            &second["priorityValue"],
            &second["priorityName"],
            &second["usedDefaultPriorityName"]
        ),
        (&json!(100), &json!("medium"), &json!("medium"))
    );

    let queue = env.queue(&repo).await;
    let items = queue["enqueuedPullRequests"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(keys(&items[1]), sorted(ENQUEUED_FIELDS));
    let mut listed = sorted(ENQUEUED_FIELDS);
    listed.retain(|f| *f != "usedDefaultPriorityName");
    assert_eq!(keys(&items[0]), listed);
    assert_eq!(
        (&items[0]["prNumber"], &items[0]["noBatch"], &items[0]["id"]),
        (&json!(1), &json!(true), &first["id"])
    );
    assert_eq!(items[0]["stateChangedAt"], first["stateChangedAt"]);
    for field in [
        "prTitle",
        "prSha",
        "prBaseBranch",
        "prAuthor",
        "priorityValue",
    ] {
        assert_eq!(items[1][field], second[field], "{field}");
    }

    // Submitting an active pull request again changes its priority in place.
    env.submit_with(&repo, 2, json!({"priority": 200})).await;
    let again = env.pull_request(&repo, 2).await;
    assert_eq!(
        (&again["id"], &again["priorityName"]),
        (&second["id"], &json!("low"))
    );
    // After a terminal state, a submission is a new entry.
    assert_eq!(env.pr_call("cancelPullRequest", &repo, 2).await.status, 200);
    let cancelled = env.pull_request(&repo, 2).await;
    assert_eq!(cancelled["state"], "cancelled");
    assert_eq!(cancelled["isCurrentlySubmittedToQueue"], false);
    let queue = env.queue(&repo).await;
    let numbers: Vec<&Value> = queue["enqueuedPullRequests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["prNumber"])
        .collect();
    assert_eq!(numbers, [&json!(1)], "a cancelled entry leaves the list");
    env.submit(&repo, 2).await;
    let renewed = env.pull_request(&repo, 2).await;
    assert_ne!(renewed["id"], second["id"]);
    assert_eq!(renewed["isCurrentlySubmittedToQueue"], true);
}

async fn testing_details_of_a_running_and_a_finished_run(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = env.repo("rocket");
    repo.require_statuses("main", &[CI]);
    repo.add_prs(2, &[]);
    env.create_queue(&repo, json!({"concurrency": 2})).await;
    env.submit(&repo, 1).await;
    env.submit(&repo, 2).await;
    let run = env.wait_for_run(&repo, 2).await;
    env.set_status(&repo, &run.sha, CI, StatusState::Pending)
        .await;
    let running = wait_for("the pending status in the run", || async {
        let details = env.details(&repo, &run.id).await;
        match details["statusChecks"].as_array() {
            Some(checks) if !checks.is_empty() => Ok(details),
            _ => Err(details.to_string()),
        }
    })
    .await;
    assert_details(&repo, &run.id, &run.sha, &running, "in_progress");

    env.pass(&repo, 1).await;
    env.pass(&repo, 2).await;
    env.wait_for_state(&repo, 2, "merged").await;
    let finished = env.details(&repo, &run.id).await;
    assert_details(&repo, &run.id, &run.sha, &finished, "succeeded");
    assert_eq!(finished["createdAt"], running["createdAt"]);

    let unknown = env
        .post(
            "getMergeQueueTestingDetails",
            Some(ACME),
            &body(&repo, json!({"testRunId": "no-such-run"})),
        )
        .await;
    assert_eq!(
        (unknown.status, unknown.code()),
        (404, "TEST_RUN_NOT_FOUND")
    );
}

fn assert_details(repo: &GitRepo, id: &str, sha: &str, details: &Value, status: &str) {
    for field in DETAILS_FIELDS {
        assert!(details.get(field).is_some(), "{field} missing: {details}");
    }
    for field in ["impactedTargets", "impactedTargetsForTestedPrs"] {
        assert!(
            details.get(field).is_none(),
            "{field} is only there with impacted targets: {details}"
        );
    }
    let branch = format!("mq-test/main/{id}");
    assert_eq!(details["testBranch"], branch);
    assert_eq!(details["testBranchSha"], sha);
    if status == "in_progress" {
        assert_eq!(repo.head(&branch).as_deref(), Some(sha), "the branch's tip");
    }
    assert_eq!(details["status"], status);
    assert_eq!(details["requiredStatuses"], json!([CI]));
    assert_eq!(
        details["requiredStatusesSource"],
        "repo_provider_branch_protection"
    );
    assert_eq!(details["checkSuites"], json!([]));
    assert_eq!(
        details["statusChecks"],
        json!([{"context": CI, "url": format!("https://ci.example.com/{CI}/{sha}")}])
    );
    assert_eq!(
        details["testedPullRequests"],
        json!([{"prNumber": 2, "prUrl": "https://github.com/acme/rocket/pull/2",
                "title": "Change 2"}])
    );
    assert_timestamp(&details["createdAt"]);
}

async fn impacted_targets_for_another_sha_conflict(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = env.repo("rocket");
    let heads = repo.add_prs(2, &[]);
    env.create_queue(&repo, json!({"mode": "parallel", "requiredStatuses": [CI]}))
        .await;

    let early = env
        .set_impacted_targets(&repo, 1, &heads[1], json!(["api"]))
        .await;
    assert_eq!((early.status, early.code()), (409, "SHA_MISMATCH"));
    env.submit(&repo, 1).await;
    let queued = env
        .set_impacted_targets(&repo, 1, &heads[1], json!(["api"]))
        .await;
    assert_eq!((queued.status, queued.code()), (409, "SHA_MISMATCH"));
    assert_eq!(
        env.pull_request(&repo, 1).await["readiness"]["hasImpactedTargets"],
        false,
        "a refused upload changes nothing"
    );
    let right = env
        .set_impacted_targets(&repo, 1, &heads[0], json!(["api"]))
        .await;
    assert_eq!((right.status, &right.body), (200, &json!({})));
    env.wait_for_state(&repo, 1, "testing").await;

    // Without `pr.sha`, the targets are for the pull request's current head: the one its
    // entry has, or the Git host's when it is not in the queue.
    let mut no_sha = body(&repo, json!({"impactedTargets": ["web"]}));
    no_sha["pr"] = json!({"number": 2});
    let before = env.post("setImpactedTargets", Some(ACME), &no_sha).await;
    assert_eq!((before.status, &before.body), (200, &json!({})));
    env.submit(&repo, 2).await;
    let two = env.wait_for_state(&repo, 2, "pending").await;
    assert_eq!(
        two["readiness"]["hasImpactedTargets"], true,
        "ready, behind #1"
    );
    no_sha["pr"] = json!({"number": 1});
    let queued = env.post("setImpactedTargets", Some(ACME), &no_sha).await;
    assert_eq!((queued.status, &queued.body), (200, &json!({})));
}

async fn unknown_pull_requests_and_other_organisations_get_not_found(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = env.repo("rocket");
    let heads = repo.add_prs(2, &[]);
    env.create_queue(&repo, json!({"requiredStatuses": [CI]}))
        .await;
    env.submit(&repo, 1).await;
    let run = env.wait_for_run(&repo, 1).await;

    let never = env.pr_call("getSubmittedPullRequest", &repo, 2).await;
    assert_eq!(
        (never.status, never.code()),
        (404, "PULL_REQUEST_NOT_FOUND")
    );
    let missing = env.pr_call("submitPullRequest", &repo, 99).await;
    assert_eq!(
        (missing.status, missing.code()),
        (404, "PULL_REQUEST_NOT_FOUND")
    );
    let no_queue = env.repo("probe");
    no_queue.add_prs(1, &[]);
    let elsewhere = env.pr_call("submitPullRequest", &no_queue, 1).await;
    assert_eq!(
        (elsewhere.status, elsewhere.code()),
        (404, "QUEUE_NOT_FOUND")
    );

    let mut targets = pr_body(&repo, 1, json!({"impactedTargets": ["api"]}));
    targets["pr"]["sha"] = json!(heads[0]);
    let calls = [
        ("submitPullRequest", pr_body(&repo, 2, json!({}))),
        ("cancelPullRequest", pr_body(&repo, 1, json!({}))),
        ("restartTestsOnPullRequest", pr_body(&repo, 1, json!({}))),
        ("getSubmittedPullRequest", pr_body(&repo, 1, json!({}))),
        ("setImpactedTargets", targets),
        (
            "getMergeQueueTestingDetails",
            body(&repo, json!({"testRunId": run.id})),
        ),
    ];
    for (path, request) in &calls {
        let reply = env.post(path, Some(UMBRELLA), request).await;
        assert_eq!(
            (reply.status, reply.code()),
            (404, "REPOSITORY_NOT_FOUND"),
            "{path} as another organisation"
        );
    }
    let still = env.pull_request(&repo, 1).await;
    assert_eq!(still["state"], "testing", "nothing changed");
    assert_eq!(
        env.pr_call("getSubmittedPullRequest", &repo, 2)
            .await
            .status,
        404
    );
}

async fn cancel_and_restart_of_inactive_pull_requests_conflict(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = env.repo("rocket");
    repo.add_prs(2, &[]);
    env.create_queue(&repo, json!({"requiredStatuses": [CI]}))
        .await;
    env.submit(&repo, 1).await;
    assert_eq!(env.pr_call("cancelPullRequest", &repo, 1).await.status, 200);

    for path in ["cancelPullRequest", "restartTestsOnPullRequest"] {
        let inactive = env.pr_call(path, &repo, 1).await;
        assert_eq!(
            (inactive.status, inactive.code()),
            (409, "PULL_REQUEST_NOT_ACTIVE"),
            "{path} of a cancelled pull request"
        );
        let never = env.pr_call(path, &repo, 2).await;
        assert_eq!(
            (never.status, never.code()),
            (404, "PULL_REQUEST_NOT_FOUND"),
            "{path} of a pull request never submitted"
        );
    }
}

/// A pull request closed on the Git host (its webhook lost, the tick not run yet) and submitted
/// again is refused, and its entry ends there, as the tick would end it: it does not test on.
/// Its history goes from `testing` to `cancelled`, with no `pending` in between.
async fn a_resubmission_of_a_closed_pull_request_ends_its_entry(backend: Backend) {
    let env = LiveEnv::options().without_tick().start(backend).await;
    let repo = env.repo("rocket");
    repo.add_prs(1, &[]);
    env.create_queue(&repo, json!({"requiredStatuses": [CI]}))
        .await;
    env.submit(&repo, 1).await;
    env.wait_for_testing_to_start(&repo, 1).await;
    repo.set_pr_state(1, "closed");

    let again = env.submit_with(&repo, 1, json!({})).await;
    assert_eq!((again.status, again.code()), (409, "PULL_REQUEST_NOT_OPEN"));
    let entry = env.pull_request(&repo, 1).await;
    assert_eq!(entry["state"], "cancelled", "{entry}");
    let history = env.pr_call("getPullRequestHistory", &repo, 1).await;
    assert_eq!(history.status, 200);
    let states: Vec<&str> = history.body["states"]
        .as_array()
        .expect("states")
        .iter()
        .map(|s| s["state"].as_str().expect("a state"))
        .collect();
    assert_eq!(
        states,
        ["not_ready", "pending", "testing", "cancelled"],
        "{}",
        history.body
    );
    assert_eq!(history.body["conclusion"]["reason"], "pr_closed");
}

/// Waits until the queue's status check on `sha` is `state` with a description holding `words`.
async fn wait_for_queue_status(
    env: &LiveEnv,
    repo: &GitRepo,
    sha: &str,
    state: StatusState,
    words: &str,
) {
    let what = format!("the merge-queue status on {sha}: {state:?}, \"{words}\"");
    wait_for(&what, || async {
        match env.queue_status(repo, sha).await {
            Some((s, d)) if s == state && d.contains(words) => Ok(()),
            seen => Err(format!("{seen:?}")),
        }
    })
    .await
}

async fn the_comment_and_status_check_say_where_each_pull_request_stands(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = env.repo("rocket");
    repo.require_statuses("main", &[CI]);
    repo.add_prs(3, &[]);
    env.create_queue(&repo, json!({"concurrency": 1})).await;
    for pr in 1..=3 {
        env.submit(&repo, pr).await;
    }
    let head = |pr: u32| repo.pr_head(pr);

    // #1 tests; #2 and #3 wait behind it.
    let run = env.wait_for_run(&repo, 1).await;
    let testing = format!("Testing in run `{}` for merging into `main`.", run.id);
    env.wait_for_comment(&repo, 1, &testing).await;
    let in_run = format!("Testing in run {}", run.id);
    wait_for_queue_status(&env, &repo, &head(1), StatusState::Pending, &in_run).await;
    for pr in [2, 3] {
        env.wait_for_comment(&repo, pr, "Queued for merging into `main`")
            .await;
        wait_for_queue_status(&env, &repo, &head(pr), StatusState::Pending, "Queued").await;
    }

    // #1 passes and merges.
    env.set_status(&repo, &run.sha, CI, StatusState::Success)
        .await;
    let merged = format!("Merged into `main`. Last tested in run `{}`.", run.id);
    env.wait_for_comment(&repo, 1, &merged).await;
    let concluded = env.pull_request(&repo, 1).await;
    assert_eq!(
        (&concluded["state"], &concluded["testRunId"]),
        (&json!("merged"), &json!(run.id)),
        "a merged pull request names the run that tested it"
    );
    wait_for_queue_status(&env, &repo, &head(1), StatusState::Success, "Merged").await;

    // #2 fails, and so does the run of #3 on top of it (the failure waits for one group behind,
    // `pendingFailureDepth`): #2 leaves the queue and the comment says why.
    let run = env.wait_for_run(&repo, 2).await;
    env.wait_for_comment(&repo, 2, &format!("Testing in run `{}`", run.id))
        .await;
    env.set_status(&repo, &run.sha, CI, StatusState::Failure)
        .await;
    let behind = env.wait_for_run(&repo, 3).await;
    env.set_status(&repo, &behind.sha, CI, StatusState::Failure)
        .await;
    let failed = env
        .wait_for_comment(&repo, 2, "Removed from the queue for `main`:")
        .await;
    assert!(
        failed.contains(CI),
        "the comment names the failed status: {failed}"
    );
    wait_for_queue_status(&env, &repo, &head(2), StatusState::Failure, "Failed").await;

    // #3, tested again without #2, is cancelled.
    let again = wait_for("a new run for #3", || async {
        match env.current_run(&repo, 3).await {
            Some(run) if run.id != behind.id => Ok(run),
            other => Err(format!("{:?}", other.map(|r| r.id))),
        }
    })
    .await;
    env.wait_for_comment(&repo, 3, &format!("Testing in run `{}`", again.id))
        .await;
    assert_eq!(env.pr_call("cancelPullRequest", &repo, 3).await.status, 200);
    env.wait_for_comment(&repo, 3, "Cancelled in the queue for `main`:")
        .await;
    wait_for_queue_status(&env, &repo, &head(3), StatusState::Error, "Cancelled").await;
}

/// A repository that requires the queue's own status (`merge-queue`) to merge into `main`, so
/// that nothing merges around the queue: a test run waits for CI only (the queue never waits
/// for its own status), and merges once CI passed. With `merge_commit` the target moves to
/// the tested commit itself, which the queue marks passed first, so the branch takes it.
async fn a_branch_requiring_the_queues_own_status_merges_what_ci_passed(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = env.repo("rocket");
    repo.require_statuses("main", &[CI, "merge-queue"]);
    repo.add_prs(1, &[]);
    env.create_queue(&repo, json!({"mergeMethod": "merge_commit"}))
        .await;
    env.submit(&repo, 1).await;
    let run = env.wait_for_run(&repo, 1).await;
    assert_eq!(run.details["requiredStatuses"], json!([CI]));
    env.set_status(&repo, &run.sha, CI, StatusState::Success)
        .await;
    env.wait_for_state(&repo, 1, "merged").await;
    let landed = repo.head("main").expect("main");
    assert_eq!(landed, run.sha, "the tested commit itself");
    let status = env.queue_status(&repo, &landed).await;
    assert_eq!(
        status,
        Some((StatusState::Success, "Tested by the merge queue".to_owned()))
    );
}

/// A `.merge-queue.yaml` on the target that does not parse fails the runs that need it, and
/// their pull requests are told what the host said of the file. The pull request mending the
/// file would fail the same way (the file is read from the target), so the queue's own
/// `requiredStatuses` works around it: with a list, the file is not read.
async fn a_broken_configuration_file_is_named_and_the_queues_own_list_works_around_it(
    backend: Backend,
) {
    let env = LiveEnv::start(backend).await;
    let repo = env.repo("rocket");
    let broken = "required_statuses: ci\n";
    repo.commit_files("main", &[(".merge-queue.yaml", broken)], "Broken config");
    repo.add_prs(2, &[]);
    env.create_queue(&repo, json!({})).await;
    env.submit(&repo, 1).await;
    env.wait_for_state(&repo, 1, "failed").await;
    let comment = env.wait_for_comment(&repo, 1, ".merge-queue.yaml").await;
    assert!(
        comment.contains("test branch could not be made ready for CI"),
        "{comment}"
    );
    env.update_queue(&repo, json!({"requiredStatuses": [CI]}))
        .await;
    env.submit(&repo, 2).await;
    env.pass(&repo, 2).await;
    env.wait_for_state(&repo, 2, "merged").await;
    assert_eq!(
        repo.history_subjects("main"),
        ["Broken config", "Change 2 (#2)"]
    );
}

/// The queue moves the target itself, so it keeps the rule that changes arrive reviewed: a
/// pull request the branch's review rules do not approve waits (others pass it by); approved,
/// it is tested; changes requested while it tested, its merge is refused and the target is
/// left as it was.
async fn a_pull_request_merges_only_while_its_reviews_approve_it(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = env.repo("rocket");
    repo.add_prs(2, &[]);
    repo.set_pr_review(1, "review_required");
    env.create_queue(&repo, json!({"requiredStatuses": [CI]}))
        .await;
    env.submit(&repo, 1).await;
    env.submit(&repo, 2).await;
    env.pass(&repo, 2).await;
    env.wait_for_state(&repo, 2, "merged").await;
    assert_eq!(env.pull_request(&repo, 1).await["state"], "not_ready");
    repo.set_pr_review(1, "approved");
    env.tick().await;
    let run = env.wait_for_run(&repo, 1).await;
    repo.set_pr_review(1, "changes_requested");
    env.set_status(&repo, &run.sha, CI, StatusState::Success)
        .await;
    env.wait_for_state(&repo, 1, "failed").await;
    env.wait_for_comment(&repo, 1, "asked for changes on #1")
        .await;
    assert_eq!(repo.history_subjects("main"), ["Change 2 (#2)"]);
}
