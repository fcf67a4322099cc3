//! When everything is slow: rows of the settings matrix (see `e2e::matrix`) on DynamoDB (moto),
//! with 20-200 ms of latency (uniform, seeded) before every store and Git host call, a CI that
//! takes 0.3 to 0.9 s, and the tick racing the requests every half second. Every pull request
//! still concludes within the rows' deadline (five minutes a row; they take well under one),
//! and the target still only takes values CI passed. Rows without batching run on real time
//! alone: nothing in them may wait for an effect's lease or back-off.

use e2e::Backend;
use e2e::matrix::{Row, World, run_rows};
use std::time::Duration;

const SLOW: World = World {
    store_latency: (Duration::from_millis(20), Duration::from_millis(200)),
    host_latency: (Duration::from_millis(20), Duration::from_millis(200)),
    ci_tenths: (3, 9),
};

fn row(method: &'static str, concurrency: u32, batch: bool, optimistic: bool) -> Row {
    Row {
        method,
        concurrency,
        batch,
        optimistic,
        parallel: false,
        flaky: 0,
        retune: false,
    }
}

/// Each merge method alone and with three groups tested at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_merge_method_concludes_on_a_slow_dynamodb() {
    let mut rows = Vec::new();
    for method in ["merge_commit", "squash", "rebase"] {
        rows.push(row(method, 1, false, false));
        rows.push(row(method, 3, true, true));
    }
    run_rows(Backend::DynamoDb, SLOW, rows).await;
}

/// The cases users reported: `concurrency` 4 with batching; optimistic merge with a CI that
/// fails at random; and parallel lanes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn batches_lanes_and_flakes_conclude_on_a_slow_dynamodb() {
    let rows = vec![
        row("squash", 4, true, false),
        Row {
            flaky: 15,
            retune: false,
            ..row("merge_commit", 4, true, true)
        },
        Row {
            parallel: true,
            ..row("merge_commit", 3, false, false)
        },
    ];
    run_rows(Backend::DynamoDb, SLOW, rows).await;
}
