//! How long getMergeQueueMetrics takes for an organisation with 50 busy queues, over HTTP,
//! on the in-memory store and on DynamoDB (the moto server on loopback).
//!
//! `cargo bench -p e2e-tests --bench metrics_endpoint` prints, per store: the requests timed,
//! the median, 90th percentile and slowest answer, and the size of the answer.
//! Each queue has, within the last hour, 12 concluded entries, 12 finished runs and 4
//! restarts, and 4 live entries with 2 runs in flight. An answer reads the store with one
//! `Query` for the list of queues and four per queue, 16 queues at a time.
//!
//! On moto the figures are moto's: a Python server that handles one request at a time (and
//! copies every table on each transaction), far slower than DynamoDB; they bound the number
//! of round trips, not DynamoDB's latency.

use e2e::timeline::{Event::*, Timeline};
use e2e::{ACME, Auth, Backend, TestEnv, queue_body};
use mq_core::entry::EntryState;
use mq_core::ids::{QueueId, RepoRef};
use mq_core::run::RunStatus;
use mq_core::time::Timestamp;
use serde_json::json;
use std::time::{Duration, Instant};

const QUEUES: usize = 50;
/// Requests timed on each store.
const REQUESTS: [(Backend, usize); 2] = [(Backend::Memory, 20), (Backend::DynamoDb, 5)];
const NOW: Timestamp = Timestamp(1_795_000_000_000);
const RUNS: [&str; 12] = [
    "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11",
];

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    for (backend, requests) in REQUESTS {
        let env = TestEnv::start(backend).await;
        let setup = Instant::now();
        populate(&env).await;
        let setup = setup.elapsed();
        let (times, bytes) = measure(&env, requests).await;
        report(backend, setup, &times, bytes);
    }
}

async fn populate(env: &TestEnv) {
    env.clock.set(NOW.plus_millis(-3 * 3_600_000));
    for q in 0..QUEUES {
        let branch = format!("release/{q:02}");
        env.ok(
            "createQueue",
            &queue_body("rocket", json!({"targetBranch": branch, "concurrency": 2})),
        )
        .await;
        let id = QueueId::new(
            &RepoRef::new("github.com", "acme", "rocket").unwrap(),
            &branch,
        );
        busy_hour(&Timeline::new(env.store.as_ref(), id, NOW)).await;
    }
    env.clock.set(NOW);
}

/// Twelve pull requests through the queue in the last hour, then four waiting and testing.
async fn busy_hour(t: &Timeline<'_>) {
    for (i, run) in (0u32..).zip(RUNS) {
        let minute = 58 - i64::from(i) * 4;
        t.at(minute, vec![Submit(i), Start(run, vec![i])]).await;
        let outcome = if i % 3 == 0 {
            t.at(
                minute - 1,
                vec![Finish(run, RunStatus::Cancelled), Restart(i)],
            )
            .await;
            EntryState::Cancelled
        } else {
            t.at(minute - 1, vec![Finish(run, RunStatus::Succeeded)])
                .await;
            EntryState::Merged
        };
        t.at(minute - 2, vec![Conclude(i, outcome)]).await;
    }
    t.at(
        5,
        vec![
            Submit(100),
            Submit(101),
            SubmitNotReady(102),
            Submit(103),
            Start("live-a", vec![100]),
            Start("live-b", vec![101]),
        ],
    )
    .await;
}

async fn measure(env: &TestEnv, requests: usize) -> (Vec<Duration>, usize) {
    let mut times = Vec::with_capacity(requests);
    let mut bytes = 0;
    for _ in 0..requests {
        let started = Instant::now();
        let r = env.get("getMergeQueueMetrics", Auth::ApiToken(ACME)).await;
        times.push(started.elapsed());
        assert_eq!(r.status, 200, "{}", r.text);
        bytes = r.text.len();
    }
    times.sort();
    (times, bytes)
}

fn report(backend: Backend, setup: Duration, times: &[Duration], bytes: usize) {
    let at = |q: f64| times[((times.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "getMergeQueueMetrics, {QUEUES} queues, {backend:?}: {} requests, median {:.1} ms, \
         p90 {:.1} ms, slowest {:.1} ms; answer {} KiB (history written in {:.1} s)",
        times.len(),
        at(0.5).as_secs_f64() * 1e3,
        at(0.9).as_secs_f64() * 1e3,
        at(1.0).as_secs_f64() * 1e3,
        bytes / 1024,
        setup.as_secs_f64(),
    );
}
