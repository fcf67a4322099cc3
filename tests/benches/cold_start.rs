//! Cold start of a function binary: the time from starting the process to its first request
//! for an invocation, against a Lambda runtime API served here on loopback
//! ([`e2e::lambda_runtime`]). The same is measured for an empty `lambda_runtime` function (the
//! `empty_lambda` bench binary) in the same run, as the baseline.
//!
//! `infra/scripts/bench-cold-start` builds both binaries and runs this with
//! `COLD_START_FUNCTION` and `COLD_START_BASELINE` set to their paths; without them it only
//! says so. The function runs over DynamoDB on the run's moto server (tables created, tokens
//! registered) and answers one `getSubmittedPullRequest` invocation (a 404: no such queue).

use e2e::lambda_runtime::{RuntimeApi, function_env, http_api_event};
use serde_json::json;
use std::path::Path;
use std::time::Duration;

const RUNS: usize = 15;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let (Ok(function), Ok(baseline)) = (
        std::env::var("COLD_START_FUNCTION"),
        std::env::var("COLD_START_BASELINE"),
    ) else {
        println!(
            "cold_start: set COLD_START_FUNCTION and COLD_START_BASELINE (see infra/scripts/bench-cold-start)"
        );
        return;
    };
    let (env, _) = function_env(&format!("cold{}-", std::process::id())).await;
    let body = json!({
        "repo": {"host": "github.com", "owner": "acme", "name": "rocket"},
        "targetBranch": "main",
        "pr": {"number": 1},
    });
    let api = RuntimeApi::start(&http_api_event("getSubmittedPullRequest", &body)).await;
    let mut results = Vec::new();
    for (name, path) in [
        ("empty lambda_runtime function", &baseline),
        ("getSubmittedPullRequest", &function),
    ] {
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or_default();
        let mut ready = Vec::new();
        let mut answered = Vec::new();
        let mut answer = String::new();
        for _ in 0..RUNS {
            let invocation = api.invoke_once(Path::new(path), &env).await;
            ready.push(invocation.ready);
            answered.push(invocation.answered);
            answer = invocation.answer;
        }
        results.push((name, size, ready, answered, answer));
    }
    for (name, size, ready, answered, answer) in results {
        println!(
            "{name}: binary {:.2} MB; ready for its first invocation: median {:.1} ms, \
             slowest {:.1} ms; first answer after: median {:.1} ms ({RUNS} starts)\n    answer: {}",
            size as f64 / 1e6,
            ms(median(&ready)),
            ms(*ready.iter().max().unwrap()),
            ms(median(&answered)),
            truncate(&answer),
        );
    }
}

fn median(times: &[Duration]) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted[sorted.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn truncate(text: &str) -> String {
    text.chars().take(200).collect()
}
