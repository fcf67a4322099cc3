//! The tick heals what a late or lost answer left behind, from the Git host's state, on
//! DynamoDB (moto) with latency injected into every store and Git host call; and reports the
//! entries that stopped moving.
//!
//! - A test branch built twice (its creation executed again after its lease ran out, while the
//!   first execution's answer was still on its way) by a host whose builds are new commits: the
//!   late first answer records a commit CI no longer tests. The run follows its branch.
//! - A merge whose answer was lost is on the target: it is recorded as done at the next tick,
//!   not after its retry's back-off; also when someone pushed on top of it meanwhile (it is not
//!   made again, as an empty squash commit).
//! - An entry with nothing in flight that could move it is marked in `getQueue`, counted by
//!   `mq_entries_stuck`.
//! - A Git host that does not answer an effect: the request stops waiting once its time is
//!   up, answers within the functions' limit, and the tick executes the effect again.

use e2e::Backend;
use e2e::git_repo::GitRepo;
use e2e::live::{CI, LiveEnv, LiveOptions, repo_ref};
use e2e::prometheus::scrape;
use mq_core::engine::Transition;
use mq_core::ids::QueueId;
use mq_core::snapshot::Commit;
use mq_githost::GitHost;
use mq_githost::faults::{FaultyGitHost, HeldAnswer, MergeFault};
use mq_service::Clock;
use mq_store::{FaultyStore, Store};
use serde_json::json;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// How long a healed entry may take to conclude, in real time, without the clock moving.
const HEALED_WITHIN: Duration = Duration::from_secs(30);

/// A live environment whose store and Git host wait 20-150 ms before every call, and the
/// wrapper of its Git host.
async fn slow_env(ci: &str) -> (LiveEnv, Arc<FaultyGitHost>) {
    let slot = Arc::new(OnceLock::new());
    let set = slot.clone();
    let env = LiveOptions::default()
        .ci(ci)
        .tick_every(Duration::from_millis(500))
        .wrap_store(|store| {
            let slow = FaultyStore::new(store, 3);
            slow.set_latency(Duration::from_millis(20), Duration::from_millis(150));
            Arc::new(slow) as Arc<dyn Store>
        })
        .wrap_host(move |host| {
            let slow = Arc::new(FaultyGitHost::new(host, 5));
            slow.set_latency(Duration::from_millis(20), Duration::from_millis(150));
            let _ = set.set(slow.clone());
            slow as Arc<dyn GitHost>
        })
        .start(Backend::DynamoDb)
        .await;
    let host = slot.get().expect("host wrapped").clone();
    (env, host)
}

/// Releases a held answer after `wait`, unless the task is aborted first.
fn release_after(held: &Arc<HeldAnswer>, wait: Duration) -> tokio::task::JoinHandle<()> {
    let held = held.clone();
    tokio::spawn(async move {
        tokio::time::sleep(wait).await;
        held.release.notify_one();
    })
}

/// Waits until `pr` merged, in real time, without moving the queue's clock.
async fn merged_within(env: &LiveEnv, repo: &GitRepo, pr: u32, within: Duration) {
    let started = Instant::now();
    loop {
        let seen = env.pull_request(repo, pr).await;
        if seen["state"] == "merged" {
            return;
        }
        assert!(
            started.elapsed() < within,
            "#{pr} did not merge within {within:?}: {seen}; queue: {}",
            env.queue(repo).await
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_run_follows_its_branch_built_again_after_a_late_answer() {
    let (env, host) = slow_env("sleep 3").await;
    let env = Arc::new(env);
    let repo = env.repo("rocket");
    repo.add_prs(1, &[]);
    env.create_queue(&repo, json!({"requiredStatuses": [CI]}))
        .await;
    host.build_unstamped();

    // The submission builds the branch; its answer is held back.
    let first = host.hold_next_test_branch_answer();
    let submit = {
        let (env, repo) = (env.clone(), repo.clone());
        tokio::spawn(async move { env.submit(&repo, 1).await })
    };
    first.reached.notified().await;
    // The creation's lease runs out; the tick builds the branch again, a new commit, on which
    // CI now runs (the first commit's CI is abandoned). Its answer is held back too.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let second = host.hold_next_test_branch_answer();
    env.clock.advance_minutes(3);
    second.reached.notified().await;
    // The first answer lands: the run records the first commit, which CI no longer tests.
    first.release.notify_one();
    submit.await.expect("the submission answered");
    second.release.notify_one();

    merged_within(&env, &repo, 1, HEALED_WITHIN).await;
}

/// The submission's branch build gets no answer (the host is held for 35 s): the request
/// stops waiting once its time is up, the build failing as if its answer were lost, and
/// answers within the functions' 29 s, where Lambda would have stopped it; the tick builds
/// the branch again once its retry is due, and the pull request merges.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_request_stops_waiting_for_a_git_host_that_does_not_answer() {
    use mq_service::drive::{EFFECT_OVERRUN, OUTCOMES_GRACE};
    use mq_service::shell::CONTENTION_BUDGET;
    let (env, host) = slow_env("true").await;
    let repo = env.repo("rocket");
    repo.add_prs(1, &[]);
    env.create_queue(&repo, json!({"requiredStatuses": [CI]}))
        .await;
    let held = host.hold_next_test_branch_answer();
    let release = release_after(&held, Duration::from_secs(35));
    let started = Instant::now();
    let answer = env.submit_with(&repo, 1, json!({})).await;
    let took = started.elapsed();
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    let most = CONTENTION_BUDGET + EFFECT_OVERRUN + OUTCOMES_GRACE;
    assert!(took < most, "answered after {took:?}");
    release.abort();
    env.clock.advance_minutes(3);
    merged_within(&env, &repo, 1, HEALED_WITHIN).await;
}

/// The Git host does not answer a submission's read of the pull request (held for 35 s): the
/// request answers 503 once its time is up, having changed nothing, and the same submission
/// sent again goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_submission_stops_waiting_for_a_pull_request_read() {
    use mq_service::shell::CONTENTION_BUDGET;
    let (env, host) = slow_env("true").await;
    let repo = env.repo("rocket");
    repo.add_prs(1, &[]);
    env.create_queue(&repo, json!({"requiredStatuses": [CI]}))
        .await;
    let held = host.hold_next_pull_request_answer();
    let release = release_after(&held, Duration::from_secs(35));
    let started = Instant::now();
    let answer = env.submit_with(&repo, 1, json!({})).await;
    let took = started.elapsed();
    release.abort();
    assert_eq!(answer.status, 503, "{:?}", answer.body);
    assert!(
        took < CONTENTION_BUDGET + Duration::from_secs(2),
        "answered after {took:?}"
    );
    assert_eq!(
        env.pr_call("getSubmittedPullRequest", &repo, 1)
            .await
            .status,
        404
    );
    assert_eq!(env.submit_with(&repo, 1, json!({})).await.status, 200);
    merged_within(&env, &repo, 1, HEALED_WITHIN).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_merge_whose_answer_was_lost_is_recorded_at_the_next_tick() {
    let (env, host) = slow_env("true").await;
    let repo = env.repo("rocket");
    repo.add_prs(1, &[]);
    env.create_queue(&repo, json!({"requiredStatuses": [CI]}))
        .await;
    host.fail_merges(1, MergeFault::After);
    env.submit(&repo, 1).await;
    merged_within(&env, &repo, 1, HEALED_WITHIN).await;
    assert_eq!(host.merge_faults_left(), 0, "the merge's answer was lost");
    assert_eq!(repo.moves("main").len(), 1, "merged once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lost_squash_merge_under_a_later_push_is_recorded_and_not_made_again() {
    let (env, host) = slow_env("true").await;
    let env = Arc::new(env);
    let repo = env.repo("rocket");
    repo.add_prs(2, &[]);
    env.create_queue(
        &repo,
        json!({"requiredStatuses": [CI], "mergeMethod": "squash"}),
    )
    .await;
    host.fail_merges(1, MergeFault::After);
    let held = host.hold_next_merge_answer();
    // The merge may be made by the submission itself (CI answers at once), which then waits
    // for the held answer.
    let submit = {
        let (env, repo) = (env.clone(), repo.clone());
        tokio::spawn(async move { env.submit(&repo, 1).await })
    };
    held.reached.notified().await;
    // #1 is squashed onto the target; before anyone hears of it, someone pushes on top.
    let squashed = repo.head("main").expect("main");
    let pushed = repo.push_commit("main", "pushed.txt");
    held.release.notify_one();
    submit.await.expect("the submission answered");

    merged_within(&env, &repo, 1, HEALED_WITHIN).await;
    env.submit(&repo, 2).await;
    merged_within(&env, &repo, 2, HEALED_WITHIN).await;
    let moves = repo.moves("main");
    assert_eq!(
        moves[..2],
        [squashed, pushed],
        "#1 landed once, under the push"
    );
    assert_eq!(moves.len(), 3, "then #2 alone: {moves:?}");
    let subjects = repo.history_subjects("main");
    let of_one = subjects.iter().filter(|s| s.ends_with("(#1)")).count();
    assert_eq!(of_one, 1, "one squash commit of #1: {subjects:?}");
    // The queue knew the target was at the push once #1 was recorded: #2 was tested once,
    // on it, not first on the squash commit alone.
    let tested = repo.commits_with_status(CI, "success");
    assert_eq!(tested.len(), 2, "one test run each: {tested:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_entry_with_nothing_in_flight_is_reported_stuck() {
    let (env, _host) = slow_env("sleep 600").await;
    let repo = env.repo("rocket");
    repo.add_prs(1, &[]);
    env.create_queue(&repo, json!({"requiredStatuses": [CI]}))
        .await;
    env.submit(&repo, 1).await;
    env.wait_for_run(&repo, 1).await;

    // A state the queue has no rule for: #1 testing in no run, nothing in flight.
    let id = QueueId::new(&repo_ref(&repo), "main");
    let before = env.store.load(&id).await.unwrap().unwrap();
    let mut lost = before.clone();
    lost.runs.clear();
    lost.outbox.clear();
    std::sync::Arc::make_mut(&mut lost.entries[0]).current_run = None;
    let commit = Commit::between(&before, &Transition::unchanged(&lost), env.clock.now());
    env.store.commit(&commit).await.unwrap();

    let stuck = |queue: serde_json::Value| queue["enqueuedPullRequests"][0]["stuck"].clone();
    assert_eq!(
        stuck(env.queue(&repo).await),
        false,
        "not for long enough yet"
    );
    env.clock.advance_minutes(61);
    assert_eq!(stuck(env.queue(&repo).await), true);
    let metrics = scrape(&env, "metrics?repo=acme/rocket&repoHost=github.com").await;
    let labels = [
        ("repo", "acme/rocket"),
        ("branch", "main"),
        ("queue_type", "main"),
    ];
    assert_eq!(metrics.value("mq_entries_stuck", &labels), 1.0);
}
