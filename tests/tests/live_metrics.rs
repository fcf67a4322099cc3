//! getMergeQueueMetrics after a queue's history driven through the service itself: pull
//! requests submitted, tested on a real repository, restarted, cancelled, merged and failed
//! over HTTP, with the clock stopped at each step so every figure is exact.

use e2e::live::{CI, LiveEnv};
use e2e::prometheus::scrape;
use e2e::{Backend, live_on_both_stores};
use mq_core::git::StatusState;
use mq_core::time::Timestamp;
use serde_json::json;

live_on_both_stores!(figures_of_a_queue_worked_through_the_api);

/// The start of the history: 2026-11-18T19:00:00Z.
const START: Timestamp = Timestamp(1_795_028_400_000);

const MAIN: [(&str, &str); 3] = [
    ("repo", "acme/rocket"),
    ("branch", "main"),
    ("queue_type", "main"),
];

fn at(minutes: i64) -> Timestamp {
    START.plus_millis(minutes * 60_000)
}

fn with<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    MAIN.iter().chain(extra).copied().collect()
}

/// | minute | what happens |
/// |---|---|
/// | 0 | queue of concurrency 1; #1, #2, #3 submitted; r1 tests #1 |
/// | 10 | r1 passes: #1 merges (600 s in the queue); r2 tests #2 (waited 600 s) |
/// | 20 | #3 cancelled while waiting (1,200 s in the queue) |
/// | 25 | #2 restarted: r2 cancelled, r3 tests #2 |
/// | 35 | r3 fails: #2 fails (2,100 s in the queue) |
/// | 36 | #4 submitted; r4 tests it |
/// | 40 | the metrics are read |
async fn figures_of_a_queue_worked_through_the_api(backend: Backend) {
    let env = LiveEnv::start(backend).await;
    let repo = env.repo("rocket");
    repo.require_statuses("main", &[CI]);
    repo.add_prs(4, &[]);

    env.clock.set(at(0));
    env.create_queue(&repo, json!({"concurrency": 1})).await;
    for pr in 1..=3 {
        env.submit(&repo, pr).await;
    }
    let r1 = env.wait_for_run(&repo, 1).await;

    env.clock.set(at(10));
    env.set_status(&repo, &r1.sha, CI, StatusState::Success)
        .await;
    env.wait_for_state(&repo, 1, "merged").await;
    let r2 = env.wait_for_run(&repo, 2).await;

    env.clock.set(at(20));
    assert_eq!(env.pr_call("cancelPullRequest", &repo, 3).await.status, 200);

    env.clock.set(at(25));
    let restart = env.pr_call("restartTestsOnPullRequest", &repo, 2).await;
    assert_eq!(restart.status, 200, "{:?}", restart.body);
    let r3 = e2e::live::wait_for("a new run for #2", || async {
        match env.current_run(&repo, 2).await {
            Some(run) if run.id != r2.id => Ok(run),
            other => Err(format!("{:?}", other.map(|r| r.id))),
        }
    })
    .await;

    env.clock.set(at(35));
    env.set_status(&repo, &r3.sha, CI, StatusState::Failure)
        .await;
    env.wait_for_state(&repo, 2, "failed").await;

    env.clock.set(at(36));
    env.submit(&repo, 4).await;
    env.wait_for_run(&repo, 4).await;

    env.clock.set(at(40));
    let s = scrape(&env, "metrics?repo=acme/rocket&repoHost=github.com").await;

    // Now: #4 testing in r4.
    assert_eq!(s.value("mq_queue_depth_current", &MAIN), 1.0);
    assert_eq!(s.value("mq_awaiting_mergeability", &MAIN), 0.0);
    assert_eq!(s.value("mq_testing_slots_active", &MAIN), 1.0);
    assert_eq!(s.value("mq_test_runs_active", &MAIN), 1.0);
    assert_eq!(s.value("mq_test_runs_limit", &MAIN), 1.0);
    assert_eq!(
        s.value("mq_queue_state", &with(&[("state", "running")])),
        1.0
    );

    // The hour: #1 merged, #2 failed, #3 cancelled; #2 restarted once.
    let conclusion = |c| s.value("mq_pr_conclusions_1h_total", &with(&[("conclusion", c)]));
    assert_eq!(
        (
            conclusion("merged"),
            conclusion("failed"),
            conclusion("cancelled")
        ),
        (1.0, 1.0, 1.0)
    );
    assert_eq!(s.value("mq_pr_restarts_1h_total", &MAIN), 1.0);
    let runs = |status| s.value("mq_test_runs_finished_1h", &with(&[("status", status)]));
    assert_eq!(
        (runs("succeeded"), runs("failed"), runs("cancelled")),
        (1.0, 1.0, 1.0),
        "r1, r3, r2"
    );

    // Waits from ready to first test: #1 0 s, #2 600 s, #4 0 s.
    s.assert_histogram(
        "mq_pr_wait_duration_1h_seconds",
        &MAIN,
        [2., 2., 3., 3., 3., 3., 3., 3., 3.],
        600.0,
    );
    // Runs with a result: r1 600 s (#1), r3 600 s (#2); r2 was cancelled.
    s.assert_histogram(
        "mq_pr_test_duration_1h_seconds",
        &MAIN,
        [0., 0., 2., 2., 2., 2., 2., 2., 2.],
        1200.0,
    );
    let tiq = "mq_pr_time_in_queue_1h_seconds";
    s.assert_histogram(
        tiq,
        &with(&[("conclusion", "merged")]),
        [0., 0., 1., 1., 1., 1., 1., 1., 1.],
        600.0,
    );
    s.assert_histogram(
        tiq,
        &with(&[("conclusion", "failed")]),
        [0., 0., 0., 0., 0., 1., 1., 1., 1.],
        2100.0,
    );
    s.assert_histogram(
        tiq,
        &with(&[("conclusion", "cancelled")]),
        [0., 0., 0., 0., 1., 1., 1., 1., 1.],
        1200.0,
    );
    // CI runs per pull request: #1 one, #2 two (r2 cancelled by the restart, r3), #3 none.
    assert_eq!(
        s.value("mq_pr_ci_runs_1h_sum", &with(&[("conclusion", "merged")])),
        1.0
    );
    assert_eq!(
        s.value("mq_pr_ci_runs_1h_sum", &with(&[("conclusion", "failed")])),
        2.0
    );
    assert_eq!(
        s.value(
            "mq_pr_ci_runs_1h_sum",
            &with(&[("conclusion", "cancelled")])
        ),
        0.0
    );
}
