//! Advice and auto-tuning on a live queue (docs/queue-semantics.md §13): a queue at
//! concurrency 1 whose CI takes an hour per run while pull requests keep coming has a
//! history that calls for more concurrency. `getQueueAdvice` says so, and with `autoTune`
//! on the tick proposes it at one check and makes it at the next, a day later, once; the
//! queue then tests more than one group at a time; an operator's later change holds. CI is
//! played by the test, and the clock is the test's.

use e2e::git_repo::{GitRepo, PrSpec};
use e2e::live::{CI, LiveEnv, body};
use e2e::{Backend, live_on_both_stores};
use serde_json::{Value, json};

live_on_both_stores!(auto_tuning_gives_a_queue_that_falls_behind_more_concurrency_once);

/// Pull requests waiting behind the one testing.
const WAITING: u32 = 6;
/// Minutes each run takes.
const CI_MINUTES: i64 = 60;
const DAY_MINUTES: i64 = 24 * 60;

/// Merges the pull request at the front after an hour of CI and submits the next one, so
/// that the queue always has [`WAITING`] pull requests waiting; returns the next number.
async fn one_hour(live: &LiveEnv, repo: &GitRepo, front: u32) -> u32 {
    live.wait_for_testing_to_start(repo, front).await;
    live.clock.advance_minutes(CI_MINUTES);
    live.pass(repo, front).await;
    live.wait_for_state(repo, front, "merged").await;
    let next = front + WAITING + 1;
    repo.add_pr(PrSpec::new(next));
    live.submit(repo, next).await;
    front + 1
}

async fn hours(live: &LiveEnv, repo: &GitRepo, front: u32, hours: u32) -> u32 {
    let mut front = front;
    for _ in 0..hours {
        front = one_hour(live, repo, front).await;
    }
    front
}

/// The answer of `path` is one the API document allows.
fn conforms(path: &str, answer: &Value) {
    let contract = e2e::openapi::Contract::load();
    let body = answer.to_string();
    let checked = contract.check("post", path, 200, "application/json", body.as_bytes());
    checked.unwrap_or_else(|drift| panic!("{drift}"));
}

async fn advice(live: &LiveEnv, repo: &GitRepo) -> Value {
    live.ok("getQueueAdvice", &body(repo, json!({}))).await
}

async fn auto_tuning_gives_a_queue_that_falls_behind_more_concurrency_once(backend: Backend) {
    let live = LiveEnv::options()
        .without_tick()
        .advice_work(150_000_000)
        .start(backend)
        .await;
    let repo = live.repo("tuned");
    let settings = json!({"requiredStatuses": [CI], "testingTimeoutMinutes": 100_000});
    live.create_queue(&repo, settings).await;
    for pr in 1..=WAITING + 1 {
        repo.add_pr(PrSpec::new(pr));
        live.submit(&repo, pr).await;
    }
    let front = hours(&live, &repo, 1, 20).await;

    let advised = advice(&live, &repo).await;
    let estimates = &advised["estimates"];
    let ci_minutes = estimates["ciMinutes"]["value"].as_f64().unwrap();
    assert!((ci_minutes - 60.0).abs() < 0.5, "{estimates}");
    assert_eq!(estimates["brokenRate"]["value"], 0.0, "{estimates}");
    let best = &advised["advice"]["best"];
    let current = &advised["advice"]["current"];
    assert_eq!(current["settings"]["concurrency"], 1, "{advised}");
    assert_eq!(current["projection"]["keepsUp"], false, "{advised}");
    assert_eq!(best["projection"]["keepsUp"], true, "{advised}");
    assert!(
        best["settings"]["concurrency"].as_u64() > Some(1),
        "{advised}"
    );
    assert_eq!(advised["autoTune"], false);
    assert_eq!(best["settings"]["summary"], advised["advice"]["summary"]);
    conforms("/getQueueAdvice", &advised);

    // A tick with no time left for a check (its queues took the minute) leaves it to the next.
    live.update_queue(&repo, json!({"autoTune": true})).await;
    let late = mq_service::tick::Pace {
        tune_by: std::time::Duration::ZERO,
        ..mq_service::tick::Pace::STANDARD
    };
    let report = mq_service::tick::run_at_pace(&live.app, "late", late)
        .await
        .unwrap();
    assert_eq!(report.tuned, None, "{report:?}");
    let queue = live.queue(&repo).await;
    assert!(queue["tuning"]["checkedAt"].is_null(), "{queue}");

    // A check begun but not done in the tick's time is stopped, unrecorded: the function is
    // not killed with it.
    let short = mq_service::tick::Pace {
        tune_until: std::time::Duration::ZERO,
        ..mq_service::tick::Pace::STANDARD
    };
    let report = mq_service::tick::run_at_pace(&live.app, "short", short)
        .await
        .unwrap();
    assert_eq!(report.tuned, None, "{report:?}");
    let queue = live.queue(&repo).await;
    assert!(queue["tuning"]["checkedAt"].is_null(), "{queue}");

    // The first check proposes; nothing changes yet.
    live.tick().await;
    let queue = live.queue(&repo).await;
    assert_eq!(queue["concurrency"], 1, "{queue}");
    let proposed = queue["tuning"]["proposed"].clone();
    assert!(
        proposed["after"]["concurrency"].as_u64() > Some(1),
        "{queue}"
    );
    assert!(queue["tuning"]["checkedAt"].is_string(), "{queue}");

    // A day later, the queue still behind, the second check makes the change.
    let front = hours(&live, &repo, front, 23).await;
    live.clock.advance_minutes(DAY_MINUTES - 23 * CI_MINUTES);
    live.tick().await;
    let queue = live.queue(&repo).await;
    let changes = queue["tuning"]["changes"].as_array().cloned().unwrap();
    assert_eq!(changes.len(), 1, "{queue}");
    let tuned = changes[0]["after"]["concurrency"].as_u64().unwrap();
    assert!(tuned > 1, "{queue}");
    assert_eq!(queue["concurrency"], tuned, "{queue}");
    assert_eq!(changes[0]["before"]["concurrency"], 1);
    let summary = changes[0]["after"]["summary"].as_str().unwrap_or_default();
    assert!(
        summary.starts_with(&format!("concurrency {tuned}")),
        "{queue}"
    );
    conforms("/getQueue", &queue);
    assert!(
        changes[0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("merges per hour") || r.contains("pull requests per hour")),
        "{queue}"
    );
    // The queue tests more than one group at once now.
    live.wait_for_testing_to_start(&repo, front + 1).await;

    // Once: checks within the window change nothing.
    for _ in 0..3 {
        live.clock.advance_minutes(DAY_MINUTES);
        live.tick().await;
    }
    let queue = live.queue(&repo).await;
    assert_eq!(queue["tuning"]["changes"].as_array().map(Vec::len), Some(1));
    assert_eq!(queue["concurrency"], tuned, "{queue}");
    let advised = advice(&live, &repo).await;
    assert_eq!(advised["autoTune"], true);
    assert_eq!(
        advised["tuning"]["changes"][0]["after"]["concurrency"],
        tuned
    );

    // A window after the change, an operator's own choice holds for another window: the
    // ticks that would check the queue leave it alone.
    live.clock.advance_minutes(5 * DAY_MINUTES);
    let checked = live.queue(&repo).await["tuning"]["checkedAt"].clone();
    live.update_queue(&repo, json!({"concurrency": 2})).await;
    for _ in 0..2 {
        live.clock.advance_minutes(DAY_MINUTES);
        live.tick().await;
    }
    let queue = live.queue(&repo).await;
    assert_eq!(queue["concurrency"], 2, "{queue}");
    assert!(queue["tuning"]["operatorChangedAt"].is_string(), "{queue}");
    assert_eq!(queue["tuning"]["checkedAt"], checked, "{queue}");
    assert_eq!(queue["tuning"]["changes"].as_array().map(Vec::len), Some(1));
}
