//! GitHub deliveries to `POST /v1/webhooks/github`: signed `status` and `check_run` events,
//! shaped as GitHub sends them, complete the runs of a live queue; a delivery with a bad
//! signature gets 401 and changes nothing. The statuses exist only in the deliveries (the
//! Git host never records them), so nothing but the webhook can complete a run.

use e2e::deliveries::{
    check_run_event, check_run_on, comment_event, comment_event_by, deliver, post_delivery,
    pull_request_event, push_event, status_event, status_on,
};
use e2e::git_repo::GitRepo;
use e2e::live::{LiveEnv, Run, wait_for, wait_until};
use e2e::{Backend, live_on_both_stores};
use mq_core::git::StatusState;
use mq_githost::webhook::sign;
use serde_json::{Value, json};

live_on_both_stores!(
    signed_deliveries_complete_runs,
    a_bad_signature_is_refused_and_changes_nothing,
    a_closed_pull_request_leaves_the_queue,
    a_late_closed_delivery_leaves_a_reopened_pull_request_in_the_queue,
    comment_commands_submit_and_cancel_for_writers_only,
    a_reply_to_a_command_leaves_the_status_comment_alone,
    a_push_to_main_restarts_testing_on_the_new_head,
    a_push_delivered_late_restarts_nothing,
    a_push_whose_delivery_was_lost_restarts_testing_at_the_next_tick,
    deliveries_reach_only_the_queues_of_the_repositorys_owner,
    deliveries_from_another_account_under_a_linked_owners_name_reach_nothing,
    a_merge_command_merges_directly_when_a_submission_would,
    comment_commands_follow_the_pull_request_where_it_is,
);

const SECRET: &str = "webhook-secret";

async fn signed_deliveries_complete_runs(backend: Backend) {
    let env = LiveEnv::options().webhook(SECRET).start(backend).await;
    let repo = queue_requiring_build_and_lint(&env).await;
    env.submit(&repo, 1).await;
    let run = env.wait_for_run(&repo, 1).await;

    let status = status_event(&repo, &run, "build", "success");
    assert_eq!(deliver(&env, "status", &status, SECRET).await.status, 200);
    let partial = wait_for_details(&env, &repo, &run, |d| d["statusChecks"] != json!([])).await;
    assert_eq!(
        partial["statusChecks"],
        json!([{"context": "build", "url": "https://ci.example.com/build/1"}])
    );
    assert_eq!(partial["status"], "in_progress", "lint has not reported");

    let check = check_run_event(&repo, &run, "lint", "success");
    assert_eq!(deliver(&env, "check_run", &check, SECRET).await.status, 200);
    env.wait_for_state(&repo, 1, "merged").await;
    let finished = env.details(&repo, &run.id).await;
    assert_eq!(finished["status"], "succeeded");
    assert_eq!(
        finished["checkSuites"],
        json!([{"checkRuns": [{"name": "lint",
                               "url": "https://github.com/acme/rocket/runs/4001"}]}])
    );
    assert_eq!(repo.history_subjects("main"), ["Change 1 (#1)"]);

    env.submit(&repo, 2).await;
    let second = env.wait_for_run(&repo, 2).await;
    let failing = check_run_event(&repo, &second, "lint", "failure");
    assert_eq!(
        deliver(&env, "check_run", &failing, SECRET).await.status,
        200
    );
    env.wait_for_state(&repo, 2, "failed").await;
    assert_eq!(env.details(&repo, &second.id).await["status"], "failed");
    assert_eq!(repo.history_subjects("main"), ["Change 1 (#1)"]);
}

async fn a_bad_signature_is_refused_and_changes_nothing(backend: Backend) {
    let env = LiveEnv::options().webhook(SECRET).start(backend).await;
    let repo = queue_requiring_build_and_lint(&env).await;
    env.submit(&repo, 1).await;
    let run = env.wait_for_run(&repo, 1).await;
    let before = env.details(&repo, &run.id).await;

    let failing = status_event(&repo, &run, "build", "failure");
    let forged = deliver(&env, "status", &failing, "not-the-secret").await;
    assert_eq!((forged.status, forged.code()), (401, "BAD_SIGNATURE"));
    let unsigned = env
        .http
        .post(env.url("webhooks/github"))
        .header("X-GitHub-Event", "status")
        .header("content-type", "application/json")
        .body(failing.to_string())
        .send()
        .await
        .expect("request sent");
    assert_eq!(unsigned.status().as_u16(), 401);
    let mut altered = failing.clone();
    let signature = sign(SECRET.as_bytes(), failing.to_string().as_bytes());
    altered["state"] = json!("success");
    let tampered = post_delivery(&env, "status", &altered, &signature).await;
    assert_eq!(tampered.status, 401, "a signature covers the exact body");

    env.tick().await;
    assert_eq!(env.details(&repo, &run.id).await, before);
    assert_eq!(env.pull_request(&repo, 1).await["state"], "testing");
}

async fn a_closed_pull_request_leaves_the_queue(backend: Backend) {
    let env = LiveEnv::options().webhook(SECRET).start(backend).await;
    let repo = queue_requiring_build_and_lint(&env).await;
    env.submit(&repo, 1).await;
    env.wait_for_run(&repo, 1).await;
    repo.set_pr_state(1, "closed");
    let closed = pull_request_event(&repo, 1, "closed");
    assert_eq!(
        deliver(&env, "pull_request", &closed, SECRET).await.status,
        200
    );
    env.wait_for_state(&repo, 1, "cancelled").await;
    assert!(env.current_run(&repo, 1).await.is_none(), "its run stopped");
}

/// #1 was closed, reopened and submitted again; the `closed` delivery comes late (or is
/// delivered again). The pull request is open on the host: its entry stays.
async fn a_late_closed_delivery_leaves_a_reopened_pull_request_in_the_queue(backend: Backend) {
    let env = LiveEnv::options().webhook(SECRET).start(backend).await;
    let repo = queue_requiring_build_and_lint(&env).await;
    env.submit(&repo, 1).await;
    env.wait_for_run(&repo, 1).await;
    let late = pull_request_event(&repo, 1, "closed");
    assert_eq!(
        deliver(&env, "pull_request", &late, SECRET).await.status,
        200
    );
    env.tick().await;
    assert_eq!(env.pull_request(&repo, 1).await["state"], "testing");
}

async fn comment_commands_submit_and_cancel_for_writers_only(backend: Backend) {
    let env = LiveEnv::options().webhook(SECRET).start(backend).await;
    let repo = queue_requiring_build_and_lint(&env).await;

    repo.set_role("hubot", "read");
    let stranger = comment_event(&repo, 1, "/service merge", "NONE");
    assert_eq!(
        deliver(&env, "issue_comment", &stranger, SECRET)
            .await
            .status,
        200
    );
    env.wait_for_reply(&repo, 1, &stranger, "Only people who can write")
        .await;
    let never = env.pr_call("getSubmittedPullRequest", &repo, 1).await;
    assert_eq!(never.status, 404, "a stranger's command submits nothing");
    // Answered once per pull request and person: more comments do not make the App write more.
    let again = comment_event(&repo, 1, "/service merge --priority urgent", "NONE");
    let status = deliver(&env, "issue_comment", &again, SECRET).await.status;
    assert_eq!(status, 200);
    assert_eq!(env.reply(&repo, 1, &again).await, "", "no second reply");
    env.clock.advance_minutes(10);
    let later = comment_event(&repo, 1, "/service merge", "NONE");
    let status = deliver(&env, "issue_comment", &later, SECRET).await.status;
    assert_eq!(status, 200);
    assert_eq!(env.reply(&repo, 1, &later).await, "", "nor minutes later");

    // A member of the organisation whose role on the repository is read (or triage) may not.
    repo.set_role("reader", "triage");
    let reader = comment_event_by(&repo, 1, "/service merge", "MEMBER", "reader");
    assert_eq!(
        deliver(&env, "issue_comment", &reader, SECRET).await.status,
        200
    );
    let never = env.pr_call("getSubmittedPullRequest", &repo, 1).await;
    assert_eq!(never.status, 404, "a reader's command submits nothing");

    // A maintainer who writes through a team, their membership private: GitHub's delivery
    // says `CONTRIBUTOR` (it cannot see the membership); the Git host says they may write.
    repo.set_role("maintainer", "write");
    let merge = comment_event_by(
        &repo,
        1,
        "Looks good.\n/service merge --priority high",
        "CONTRIBUTOR",
        "maintainer",
    );
    assert_eq!(
        deliver(&env, "issue_comment", &merge, SECRET).await.status,
        200
    );
    let submitted = env.pull_request(&repo, 1).await;
    assert_eq!(submitted["priorityName"], "high");
    assert_eq!(submitted["isCurrentlySubmittedToQueue"], true);

    let cancel = comment_event_by(&repo, 1, "/service cancel", "OWNER", "maintainer");
    assert_eq!(
        deliver(&env, "issue_comment", &cancel, SECRET).await.status,
        200
    );
    env.wait_for_state(&repo, 1, "cancelled").await;

    // GitHub sends deliveries again (a redelivery by hand, a retrying proxy): a comment is
    // one command, followed once.
    env.submit(&repo, 1).await;
    for again in [&cancel, &merge] {
        let status = deliver(&env, "issue_comment", again, SECRET).await.status;
        assert_eq!(status, 200);
    }
    let resubmitted = env.pull_request(&repo, 1).await;
    assert_eq!(
        resubmitted["isCurrentlySubmittedToQueue"], true,
        "{resubmitted}"
    );
    assert_eq!(resubmitted["priorityName"], "medium", "{resubmitted}");
}

/// The queue answers a command in a comment of its own: the pull request's status comment
/// (here, why it failed) stays as it was, whoever comments.
async fn a_reply_to_a_command_leaves_the_status_comment_alone(backend: Backend) {
    let env = LiveEnv::options().webhook(SECRET).start(backend).await;
    let repo = queue_requiring_build_and_lint(&env).await;
    env.submit(&repo, 1).await;
    let cancel = env.pr_call("cancelPullRequest", &repo, 1).await;
    assert_eq!(cancel.status, 200);
    let status = env.wait_for_comment(&repo, 1, "Cancelled").await;

    repo.set_role("stranger", "read");
    let stranger = comment_event_by(&repo, 1, "/service merge", "NONE", "stranger");
    let writer = comment_event(&repo, 1, "/service cancel --now", "OWNER");
    for command in [&stranger, &writer] {
        let delivered = deliver(&env, "issue_comment", command, SECRET).await;
        assert_eq!(delivered.status, 200);
    }
    env.wait_for_reply(&repo, 1, &stranger, "Only people who can write")
        .await;
    env.wait_for_reply(&repo, 1, &writer, "takes no arguments, got `--now`")
        .await;
    assert_eq!(env.comment(&repo, 1).await, status);
}

/// `/service merge` is a submission as through the API: with `directMergeMode: always`, a
/// pull request up to date with the target whose head passed the required checks merges at
/// once, without a test run. A command shown in a code block is not given.
async fn a_merge_command_merges_directly_when_a_submission_would(backend: Backend) {
    let env = LiveEnv::options().webhook(SECRET).start(backend).await;
    let repo = env.repo("rocket");
    repo.add_prs(1, &[]);
    let settings = json!({"requiredStatuses": ["build"], "directMergeMode": "always"});
    env.create_queue(&repo, settings).await;
    env.set_status(&repo, &repo.pr_head(1), "build", StatusState::Success)
        .await;

    let shown = comment_event(&repo, 1, "Once green:\n```\n/service merge\n```", "OWNER");
    assert_eq!(
        deliver(&env, "issue_comment", &shown, SECRET).await.status,
        200
    );
    let never = env.pr_call("getSubmittedPullRequest", &repo, 1).await;
    assert_eq!(never.status, 404, "a command in a code block is not given");

    let merge = comment_event(&repo, 1, "/Service Merge", "OWNER");
    assert_eq!(
        deliver(&env, "issue_comment", &merge, SECRET).await.status,
        200
    );
    let merged = env.pull_request(&repo, 1).await;
    assert_eq!(merged["state"], "merged", "merged directly: {merged}");
    assert!(repo.test_branches().is_empty(), "no test branch was made");
    assert_eq!(repo.tree("main"), repo.tree(&repo.pr_head(1)));
}

/// A pull request submitted through the API to the queue of `main` while it targets another
/// branch (a stack: it waits `not_ready` until retargeted) is cancelled by `/service cancel`
/// in that queue. `/service merge` on a pull request whose base branch has no queue is
/// answered, not ignored.
async fn comment_commands_follow_the_pull_request_where_it_is(backend: Backend) {
    use e2e::git_repo::PrSpec;
    let env = LiveEnv::options().webhook(SECRET).start(backend).await;
    let repo = env.repo("rocket");
    repo.add_branch("feature");
    repo.add_pr(PrSpec::new(1).based_on("feature"));
    env.create_queue(&repo, json!({})).await;
    env.submit(&repo, 1).await;
    assert_eq!(env.pull_request(&repo, 1).await["state"], "not_ready");

    let merge = comment_event(&repo, 1, "/service merge", "OWNER");
    assert_eq!(
        deliver(&env, "issue_comment", &merge, SECRET).await.status,
        200
    );
    env.wait_for_reply(&repo, 1, &merge, "no merge queue for `feature`")
        .await;

    let cancel = comment_event(&repo, 1, "/service cancel", "OWNER");
    assert_eq!(
        deliver(&env, "issue_comment", &cancel, SECRET).await.status,
        200
    );
    env.wait_for_state(&repo, 1, "cancelled").await;
}

async fn a_push_to_main_restarts_testing_on_the_new_head(backend: Backend) {
    let env = LiveEnv::options().webhook(SECRET).start(backend).await;
    let repo = queue_requiring_build_and_lint(&env).await;
    env.submit(&repo, 1).await;
    let first = env.wait_for_run(&repo, 1).await;
    let before = repo.head("main").expect("main exists");
    let after = repo.push_commit("main", "hotfix.txt");
    let push = push_event(&repo, &before, &after);
    assert_eq!(deliver(&env, "push", &push, SECRET).await.status, 200);
    let second = wait_until("a new run on the pushed head", || async {
        env.current_run(&repo, 1)
            .await
            .filter(|run| run.id != first.id)
    })
    .await;
    let tested = repo.git(&["rev-list", &second.sha]);
    assert!(
        tested.contains(&after),
        "the new run contains the pushed commit"
    );
}

/// Two pushes to `main`, delivered in the wrong order: the queue follows the newer, and the
/// older one, delivered last, restarts nothing.
async fn a_push_delivered_late_restarts_nothing(backend: Backend) {
    let env = LiveEnv::options().webhook(SECRET).start(backend).await;
    let repo = queue_requiring_build_and_lint(&env).await;
    env.submit(&repo, 1).await;
    let first = env.wait_for_run(&repo, 1).await;
    let base = repo.head("main").expect("main exists");
    let older = repo.push_commit("main", "hotfix.txt");
    let newer = repo.push_commit("main", "hotfix-2.txt");
    let push = push_event(&repo, &older, &newer);
    assert_eq!(deliver(&env, "push", &push, SECRET).await.status, 200);
    let second = wait_until("a new run on the newer head", || async {
        env.current_run(&repo, 1)
            .await
            .filter(|run| run.id != first.id)
    })
    .await;
    assert!(repo.git(&["rev-list", &second.sha]).contains(&newer));
    let late = push_event(&repo, &base, &older);
    assert_eq!(deliver(&env, "push", &late, SECRET).await.status, 200);
    env.tick().await;
    let now = env.current_run(&repo, 1).await.expect("still testing");
    assert_eq!(now.id, second.id, "the late push restarted nothing");
}

/// A push to `main` whose delivery never comes: the tick reads the target branch and restarts
/// the group on the pushed head, before CI's result could lead to a merge.
async fn a_push_whose_delivery_was_lost_restarts_testing_at_the_next_tick(backend: Backend) {
    let env = LiveEnv::options().webhook(SECRET).start(backend).await;
    let repo = queue_requiring_build_and_lint(&env).await;
    env.submit(&repo, 1).await;
    let first = env.wait_for_run(&repo, 1).await;
    let pushed = repo.push_commit("main", "hotfix.txt");
    env.tick().await;
    let second = env.current_run(&repo, 1).await.expect("testing");
    assert_ne!(second.id, first.id, "the tick restarted the group");
    assert!(
        repo.git(&["rev-list", &second.sha]).contains(&pushed),
        "the new run contains the pushed commit"
    );
    env.tick().await;
    let still = env.current_run(&repo, 1).await.expect("testing");
    assert_eq!(still.id, second.id, "a second tick restarts nothing");
}

/// A CI result names its repository: one for another organisation's repository, or for an
/// owner linked to none, does not reach acme's run on the same commit, nor does a pull
/// request event of theirs reach acme's entry of the same number.
async fn deliveries_reach_only_the_queues_of_the_repositorys_owner(backend: Backend) {
    let env = LiveEnv::options().webhook(SECRET).start(backend).await;
    let repo = queue_requiring_build_and_lint(&env).await;
    env.submit(&repo, 1).await;
    let run = env.wait_for_run(&repo, 1).await;
    let branch = run.details["testBranch"].as_str().unwrap().to_owned();
    let before = env.details(&repo, &run.id).await;
    for owner in ["umbrella", "nobody"] {
        let theirs = env.repo_of(owner, "rocket");
        let status = status_on(&theirs, &run.sha, &branch, "build", "failure");
        assert_eq!(deliver(&env, "status", &status, SECRET).await.status, 200);
        let check = check_run_on(&theirs, &run.sha, &branch, "lint", "failure");
        assert_eq!(deliver(&env, "check_run", &check, SECRET).await.status, 200);
        theirs.add_prs(1, &[]);
        let closed = pull_request_event(&theirs, 1, "closed");
        assert_eq!(
            deliver(&env, "pull_request", &closed, SECRET).await.status,
            200
        );
    }
    assert_eq!(
        env.details(&repo, &run.id).await,
        before,
        "acme's run heard nothing"
    );
    assert_eq!(env.pull_request(&repo, 1).await["state"], "testing");
    let status = status_event(&repo, &run, "build", "success");
    assert_eq!(deliver(&env, "status", &status, SECRET).await.status, 200);
    let check = check_run_event(&repo, &run, "lint", "success");
    assert_eq!(deliver(&env, "check_run", &check, SECRET).await.status, 200);
    env.wait_for_state(&repo, 1, "merged").await;
}

/// The owner `github.com/acme` was linked as GitHub account 2; its login was then taken over
/// by account 1, which created a repository of the same name and installed the App (GitHub
/// signs those deliveries with the App's secret too): what account 1 delivers reaches
/// nothing, what account 2 delivers reaches acme's queues.
async fn deliveries_from_another_account_under_a_linked_owners_name_reach_nothing(
    backend: Backend,
) {
    use mq_service::Clock;
    use mq_store::OwnerLink;
    let env = LiveEnv::options().webhook(SECRET).start(backend).await;
    let owner = mq_core::ids::OwnerRef::parse("owner", e2e::ACME_OWNER).unwrap();
    let org = mq_core::ids::OrgId::parse("acme").unwrap();
    env.store.unlink_owner(&owner, &org).await.unwrap();
    let link = OwnerLink {
        owner,
        org,
        linked_at: env.clock.now(),
        account_id: Some(2),
    };
    env.store.link_owner(&link).await.unwrap();
    let repo = queue_requiring_build_and_lint(&env).await;
    env.submit(&repo, 1).await;
    let run = env.wait_for_run(&repo, 1).await;
    let before = env.details(&repo, &run.id).await;
    let from = |mut delivery: Value, account: u64| {
        delivery["repository"]["owner"]["id"] = json!(account);
        delivery
    };

    let failed = from(status_event(&repo, &run, "build", "failure"), 1);
    assert_eq!(deliver(&env, "status", &failed, SECRET).await.status, 200);
    let closed = from(pull_request_event(&repo, 1, "closed"), 1);
    assert_eq!(
        deliver(&env, "pull_request", &closed, SECRET).await.status,
        200
    );
    assert_eq!(env.details(&repo, &run.id).await, before, "heard nothing");
    assert_eq!(env.pull_request(&repo, 1).await["state"], "testing");

    let passed = from(status_event(&repo, &run, "build", "success"), 2);
    assert_eq!(deliver(&env, "status", &passed, SECRET).await.status, 200);
    let check = from(check_run_event(&repo, &run, "lint", "success"), 2);
    assert_eq!(deliver(&env, "check_run", &check, SECRET).await.status, 200);
    env.wait_for_state(&repo, 1, "merged").await;
}

/// The repository's `beta` queue (listed before `main`'s) has an item this version cannot
/// read (a newer version wrote a state it does not know, then was rolled back): a pull
/// request's change still reaches `main`'s queue, and the delivery fails for `beta` alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_this_version_cannot_read_keeps_no_other_from_a_delivery() {
    use aws_sdk_dynamodb::types::AttributeValue;
    use e2e::live::{body, repo_ref};
    use mq_core::ids::QueueId;
    use mq_store::Store;
    use std::sync::Arc;

    let store = e2e::new_dynamo_store().await;
    let own = store.clone();
    let env = LiveEnv::options()
        .webhook(SECRET)
        .wrap_store(move |_| own.clone() as Arc<dyn Store>)
        .start(Backend::DynamoDb)
        .await;
    let repo = queue_requiring_build_and_lint(&env).await;
    let mut beta = body(&repo, json!({}));
    beta["targetBranch"] = json!("beta");
    env.ok("createQueue", &beta).await;
    let beta = QueueId::new(&repo_ref(&repo), "beta");
    let key = std::collections::HashMap::from([
        ("pk".to_owned(), AttributeValue::S(beta.as_str().to_owned())),
        ("sk".to_owned(), AttributeValue::S("QUEUE".to_owned())),
    ]);
    store
        .client()
        .update_item()
        .table_name(&store.tables().queues)
        .set_key(Some(key))
        .update_expression("SET #state = :frozen")
        .expression_attribute_names("#state", "state")
        .expression_attribute_values(":frozen", AttributeValue::S("frozen".to_owned()))
        .send()
        .await
        .unwrap();
    env.submit(&repo, 1).await;
    env.wait_for_run(&repo, 1).await;

    repo.set_pr_state(1, "closed");
    let closed = pull_request_event(&repo, 1, "closed");
    let answer = deliver(&env, "pull_request", &closed, SECRET).await;
    assert_eq!(answer.status, 500, "`beta` could not hear of it");
    env.wait_for_state(&repo, 1, "cancelled").await;
}

async fn queue_requiring_build_and_lint(env: &LiveEnv) -> GitRepo {
    let repo = env.repo("rocket");
    repo.add_prs(2, &[]);
    env.create_queue(&repo, json!({"requiredStatuses": ["build", "lint"]}))
        .await;
    repo
}

async fn wait_for_details(
    env: &LiveEnv,
    repo: &GitRepo,
    run: &Run,
    done: impl Fn(&Value) -> bool,
) -> Value {
    wait_for("the delivery in the run's details", || async {
        let details = env.details(repo, &run.id).await;
        if done(&details) {
            Ok(details)
        } else {
            Err(details.to_string())
        }
    })
    .await
}
