//! A function binary run as Lambda runs it: a Lambda runtime API served on loopback, the
//! environment Lambda gives a function (over DynamoDB on the run's moto server), and one
//! invocation at a time.
//!
//! The runtime API: `GET /2018-06-01/runtime/invocation/next` records the time of the first
//! request and answers with the event; the next such request waits until the process is
//! killed. `POST .../invocation/{id}/response` (or `/error`, or `/init/error`) records the
//! answer.

use crate::register_organisations;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use mq_store::tables::TABLES;
use mq_store::{DynamoStore, TableNames};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// The request id of every invocation handed out.
pub const REQUEST_ID: &str = "invocation-1";

/// What the runtime API saw of one process.
#[derive(Default)]
struct Seen {
    first_next: Option<Instant>,
    answered: Option<(Instant, String)>,
    handed_out: bool,
}

#[derive(Clone, Default)]
struct Shared {
    seen: Arc<Mutex<Seen>>,
    done: Arc<Notify>,
    event: Arc<String>,
}

/// A runtime API on a free loopback port that hands out one event per process.
pub struct RuntimeApi {
    pub addr: SocketAddr,
    shared: Shared,
}

/// One process's invocation: when it first asked for work, when it answered, and its answer
/// (the JSON Lambda would get).
#[derive(Debug)]
pub struct Invocation {
    pub ready: Duration,
    pub answered: Duration,
    pub answer: String,
}

impl RuntimeApi {
    /// Serves `event` to every process started by [`RuntimeApi::invoke_once`].
    pub async fn start(event: &Value) -> Self {
        let shared = Shared {
            event: Arc::new(event.to_string()),
            ..Shared::default()
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let addr = listener.local_addr().expect("its address");
        let app = router(shared.clone());
        tokio::spawn(async move {
            axum::serve(listener, app)
                .await
                .expect("the runtime API serves");
        });
        Self { addr, shared }
    }

    /// Starts `binary` with `env` (and `AWS_LAMBDA_RUNTIME_API`), waits for its answer to
    /// the event, and kills it.
    pub async fn invoke_once(&self, binary: &Path, env: &[(String, String)]) -> Invocation {
        *self.shared.seen.lock().unwrap() = Seen::default();
        let started = Instant::now();
        let mut child = Command::new(binary)
            .env_clear()
            .envs(env.iter().cloned())
            .env("AWS_LAMBDA_RUNTIME_API", self.addr.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{} starts: {e}", binary.display()));
        let answered =
            tokio::time::timeout(Duration::from_secs(30), self.shared.done.notified()).await;
        child.kill().ok();
        child.wait().ok();
        answered.expect("an answer within 30 s");
        let seen = self.shared.seen.lock().unwrap();
        let ready = seen.first_next.expect("a request for an invocation") - started;
        let (at, answer) = seen.answered.clone().expect("an answer");
        Invocation {
            ready,
            answered: at - started,
            answer,
        }
    }
}

fn router(shared: Shared) -> Router {
    Router::new()
        .route("/2018-06-01/runtime/invocation/next", get(next))
        .route(
            "/2018-06-01/runtime/invocation/{id}/response",
            post(response),
        )
        .route("/2018-06-01/runtime/invocation/{id}/error", post(response))
        .route("/2018-06-01/runtime/init/error", post(init_error))
        .with_state(shared)
}

async fn next(State(shared): State<Shared>) -> (StatusCode, HeaderMap, String) {
    let first = {
        let mut seen = shared.seen.lock().unwrap();
        seen.first_next.get_or_insert_with(Instant::now);
        !std::mem::replace(&mut seen.handed_out, true)
    };
    if !first {
        std::future::pending::<()>().await;
    }
    let deadline = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 30_000;
    let mut headers = HeaderMap::new();
    for (name, value) in [
        ("lambda-runtime-aws-request-id", REQUEST_ID.to_owned()),
        ("lambda-runtime-deadline-ms", deadline.to_string()),
        (
            "lambda-runtime-invoked-function-arn",
            "arn:aws:lambda:us-east-1:123456789012:function:local".to_owned(),
        ),
        (
            "lambda-runtime-trace-id",
            "Root=1-00000000-000000000000000000000000".to_owned(),
        ),
    ] {
        headers.insert(name, value.parse().unwrap());
    }
    (StatusCode::OK, headers, shared.event.to_string())
}

async fn response(
    State(shared): State<Shared>,
    UrlPath(_id): UrlPath<String>,
    body: Bytes,
) -> StatusCode {
    answered(&shared, String::from_utf8_lossy(&body).into_owned())
}

async fn init_error(State(shared): State<Shared>, body: Bytes) -> StatusCode {
    answered(
        &shared,
        format!("init error: {}", String::from_utf8_lossy(&body)),
    )
}

fn answered(shared: &Shared, answer: String) -> StatusCode {
    shared.seen.lock().unwrap().answered = Some((Instant::now(), answer));
    shared.done.notify_one();
    StatusCode::ACCEPTED
}

/// The environment of a deployed function over tables of its own (named `<prefix>...`) on
/// the run's moto server, created, with the tokens of [`crate::ACME`] and the others
/// registered: Lambda's variables, AWS settings for moto, the tables' names. Also the store
/// over those tables, for setting up what the invocation reads.
pub async fn function_env(prefix: &str) -> (Vec<(String, String)>, DynamoStore) {
    let endpoint = mq_tables::moto::endpoint();
    let client = mq_tables::local_client(&endpoint).await;
    let tables = TableNames::with_prefix(prefix);
    mq_tables::create_missing_tables(&client, &tables)
        .await
        .expect("tables created on moto");
    let store = DynamoStore::new(client, tables.clone());
    register_organisations(&store).await;
    let mut env: Vec<(String, String)> = [
        ("AWS_LAMBDA_FUNCTION_NAME", "local"),
        ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256"),
        ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST"),
        ("AWS_LAMBDA_LOG_STREAM_NAME", "local"),
        ("AWS_LAMBDA_LOG_GROUP_NAME", "local"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_SESSION_TOKEN", "test"),
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
    (env, store)
}

/// An API Gateway HTTP API (payload 2.0) event: `POST /v1/<endpoint>` with `body`, from
/// organisation acme.
pub fn http_api_event(endpoint: &str, body: &Value) -> Value {
    let path = format!("/v1/{endpoint}");
    let route = format!("POST {path}");
    json!({
        "version": "2.0",
        "routeKey": route,
        "rawPath": path,
        "rawQueryString": "",
        "headers": {"content-type": "application/json", "x-api-token": crate::ACME},
        "requestContext": {
            "accountId": "123456789012", "apiId": "local", "domainName": "localhost",
            "domainPrefix": "local",
            "http": {"method": "POST", "path": path, "protocol": "HTTP/1.1",
                     "sourceIp": "127.0.0.1", "userAgent": "e2e"},
            "requestId": REQUEST_ID, "routeKey": route,
            "stage": "$default", "time": "23/Nov/2026:00:00:00 +0000", "timeEpoch": 0
        },
        "body": body.to_string(),
        "isBase64Encoded": false,
    })
}

/// The debug build of a function's binary, built (`cargo build -p <name>`) if need be.
pub fn function_binary(name: &str) -> PathBuf {
    let output = Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "--message-format=json",
            "-p",
            name,
            "--bin",
            name,
        ])
        .current_dir(mq_tables::moto::workspace_root())
        .stderr(Stdio::inherit())
        .output()
        .expect("cargo runs");
    assert!(output.status.success(), "cargo build -p {name}");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find_map(|message| Some(PathBuf::from(message["executable"].as_str()?)))
        .unwrap_or_else(|| panic!("cargo built no executable for {name}"))
}
