//! When everything is slow: the settings matrix's rows (see `e2e::matrix`) on DynamoDB (moto),
//! with latency injected before every store and Git host call (tens to hundreds of
//! milliseconds, with jitter), a CI that takes up to a second, and the tick racing the
//! requests every half second. Every pull request still concludes, within the rows' deadline,
//! and the target still only takes values CI passed.

use e2e::Backend;
use e2e::matrix::{Row, World, run_rows};
use std::time::Duration;

const SLOW: World = World {
    store_latency: (Duration::from_millis(20), Duration::from_millis(200)),
    host_latency: (Duration::from_millis(20), Duration::from_millis(200)),
    ci_tenths: (3, 9),
};

/// The case users reported: `concurrency` 4 with batching, then optimistic merge with a CI
/// that fails at random.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn batches_with_concurrency_conclude_on_a_slow_dynamodb() {
    let rows = vec![
        Row {
            method: "squash",
            concurrency: 4,
            batch: true,
            optimistic: false,
            parallel: false,
            flaky: 0,
        },
        Row {
            method: "merge_commit",
            concurrency: 4,
            batch: true,
            optimistic: true,
            parallel: false,
            flaky: 15,
        },
    ];
    run_rows(Backend::DynamoDb, SLOW, rows).await;
}
