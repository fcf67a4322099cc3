//! Cold start of a function binary: the time from starting the process to its first request
//! for an invocation, against a Lambda runtime API served here on loopback. The same is
//! measured for an empty `lambda_runtime` function (the `empty_lambda` bench binary) in the
//! same run, as the baseline.
//!
//! `infra/scripts/bench-cold-start` builds both binaries and runs this with
//! `COLD_START_FUNCTION` and `COLD_START_BASELINE` set to their paths; without them it only
//! says so. The function runs over DynamoDB on the run's moto server (tables created, tokens
//! registered) and answers one `getSubmittedPullRequest` invocation (a 404: no such queue).
//!
//! The runtime API: `GET /2018-06-01/runtime/invocation/next` records the time of the first
//! request and answers with one API Gateway (HTTP API) event; the next such request waits
//! until the process is killed. `POST .../invocation/{id}/response` (or `/error`) records the
//! answer.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use e2e::register_tokens;
use mq_store::tables::TABLES;
use mq_store::{DynamoStore, TableNames};
use serde_json::json;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

const RUNS: usize = 15;

/// What the runtime API saw in one run.
#[derive(Default)]
struct Seen {
    first_next: Option<Instant>,
    answered: Option<(Instant, String)>,
    handed_out: bool,
}

#[derive(Clone, Default)]
struct Api {
    seen: Arc<Mutex<Seen>>,
    done: Arc<Notify>,
    event: Arc<String>,
}

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
    let env = dynamo_env().await;
    let api = Api {
        event: Arc::new(event().to_string()),
        ..Api::default()
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = router(api.clone());
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
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
            let (r, a, text) = run_once(&api, path, &addr.to_string(), &env).await;
            ready.push(r);
            answered.push(a);
            answer = text;
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

fn router(api: Api) -> Router {
    Router::new()
        .route("/2018-06-01/runtime/invocation/next", get(next))
        .route(
            "/2018-06-01/runtime/invocation/{id}/response",
            post(response),
        )
        .route("/2018-06-01/runtime/invocation/{id}/error", post(response))
        .route("/2018-06-01/runtime/init/error", post(init_error))
        .with_state(api)
}

async fn next(State(api): State<Api>) -> (StatusCode, HeaderMap, String) {
    let first = {
        let mut seen = api.seen.lock().unwrap();
        seen.first_next.get_or_insert_with(Instant::now);
        !std::mem::replace(&mut seen.handed_out, true)
    };
    if !first {
        std::future::pending::<()>().await;
    }
    let mut headers = HeaderMap::new();
    let deadline = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 30_000;
    for (name, value) in [
        ("lambda-runtime-aws-request-id", "cold-start-1".to_owned()),
        ("lambda-runtime-deadline-ms", deadline.to_string()),
        (
            "lambda-runtime-invoked-function-arn",
            "arn:aws:lambda:us-east-1:123456789012:function:bench".to_owned(),
        ),
        (
            "lambda-runtime-trace-id",
            "Root=1-00000000-000000000000000000000000".to_owned(),
        ),
    ] {
        headers.insert(name, value.parse().unwrap());
    }
    (StatusCode::OK, headers, api.event.to_string())
}

async fn response(State(api): State<Api>, Path(_id): Path<String>, body: Bytes) -> StatusCode {
    api.seen.lock().unwrap().answered =
        Some((Instant::now(), String::from_utf8_lossy(&body).into_owned()));
    api.done.notify_one();
    StatusCode::ACCEPTED
}

async fn init_error(State(api): State<Api>, body: Bytes) -> StatusCode {
    api.seen.lock().unwrap().answered = Some((
        Instant::now(),
        format!("init error: {}", String::from_utf8_lossy(&body)),
    ));
    api.done.notify_one();
    StatusCode::ACCEPTED
}

/// Starts `path`, waits for its answer, kills it: (ready, answered) after the start.
async fn run_once(
    api: &Api,
    path: &str,
    addr: &str,
    env: &[(String, String)],
) -> (Duration, Duration, String) {
    *api.seen.lock().unwrap() = Seen::default();
    let started = Instant::now();
    let mut child = Command::new(path)
        .env_clear()
        .envs(env.iter().cloned())
        .env("AWS_LAMBDA_RUNTIME_API", addr)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary starts");
    tokio::time::timeout(Duration::from_secs(30), api.done.notified())
        .await
        .expect("an answer within 30 s");
    child.kill().ok();
    child.wait().ok();
    let seen = api.seen.lock().unwrap();
    let ready = seen.first_next.expect("a request for an invocation") - started;
    let (at, text) = seen.answered.clone().expect("an answer");
    (ready, at - started, text)
}

/// The environment of a function: Lambda's variables, AWS settings for moto, the tables.
async fn dynamo_env() -> Vec<(String, String)> {
    let endpoint = mq_tables::moto::endpoint();
    let client = mq_tables::local_client(&endpoint).await;
    let tables = TableNames::with_prefix(&format!("cold{}-", std::process::id()));
    mq_tables::create_missing_tables(&client, &tables)
        .await
        .expect("tables created on moto");
    register_tokens(&DynamoStore::new(client, tables.clone())).await;
    let mut env: Vec<(String, String)> = [
        ("AWS_LAMBDA_FUNCTION_NAME", "bench"),
        ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256"),
        ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST"),
        ("AWS_LAMBDA_LOG_STREAM_NAME", "bench"),
        ("AWS_LAMBDA_LOG_GROUP_NAME", "bench"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_EC2_METADATA_DISABLED", "true"),
        ("MQ_DYNAMODB_ENDPOINT", endpoint.as_str()),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    for (logical, var) in TABLES {
        let name = tables.by_logical_id(logical).unwrap().to_owned();
        env.push((var.to_owned(), name));
    }
    env
}

/// An HTTP API (payload 2.0) event for `POST /v1/getSubmittedPullRequest`.
fn event() -> serde_json::Value {
    let body = json!({
        "repo": {"host": "github.com", "owner": "acme", "name": "rocket"},
        "targetBranch": "main",
        "pr": {"number": 1},
    });
    json!({
        "version": "2.0",
        "routeKey": "POST /v1/getSubmittedPullRequest",
        "rawPath": "/v1/getSubmittedPullRequest",
        "rawQueryString": "",
        "headers": {"content-type": "application/json", "x-api-token": e2e::ACME},
        "requestContext": {
            "accountId": "123456789012", "apiId": "bench", "domainName": "localhost",
            "domainPrefix": "bench",
            "http": {"method": "POST", "path": "/v1/getSubmittedPullRequest",
                     "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1", "userAgent": "bench"},
            "requestId": "cold-start-1", "routeKey": "POST /v1/getSubmittedPullRequest",
            "stage": "$default", "time": "23/Nov/2026:00:00:00 +0000", "timeEpoch": 0
        },
        "body": body.to_string(),
        "isBase64Encoded": false,
    })
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
