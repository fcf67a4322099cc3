//! The real `mq` binary (`infra/cli`), built once per test run, run as a CI job or an
//! operator would run it; and a proxy on loopback that answers chosen requests with 503, to
//! watch the client retry.

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use tokio::task::JoinHandle;

/// The workspace's root directory.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is in the workspace")
        .to_owned()
}

/// The debug `mq` binary, built by cargo on first use.
pub fn mq_binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| build_mq(&[])).clone()
}

/// The release `mq` binary (for benchmarks), built by cargo.
pub fn mq_release_binary() -> PathBuf {
    build_mq(&["--release"])
}

/// Builds `mq` with cargo and returns the executable cargo reports.
fn build_mq(extra: &[&str]) -> PathBuf {
    let cargo = std::env::var("CARGO")
        .ok()
        .or_else(|| option_env!("CARGO").map(str::to_owned))
        .unwrap_or_else(|| "cargo".to_owned());
    let out = Command::new(cargo)
        .args(["build", "--quiet", "-p", "mq-cli", "--bin", "mq"])
        .arg("--message-format=json-render-diagnostics")
        .args(extra)
        .current_dir(workspace_root())
        .stderr(Stdio::inherit())
        .output()
        .expect("cargo runs");
    assert!(out.status.success(), "cargo build -p mq-cli failed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "mq")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .expect("cargo names the mq executable")
}

/// How `mq` is run: its environment (nothing else of this process's, but `PATH` and `HOME`)
/// and its working directory.
#[derive(Debug, Clone)]
pub struct Mq {
    binary: PathBuf,
    vars: Vec<(String, String)>,
    dir: PathBuf,
}

/// What a run of `mq` left.
#[derive(Debug, Clone)]
pub struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    /// Fails the test with what `mq` printed unless it exited with `code`.
    pub fn expect(self, code: i32) -> Self {
        assert_eq!(
            self.code, code,
            "mq exited {} instead of {code}\nstdout:\n{}\nstderr:\n{}",
            self.code, self.stdout, self.stderr
        );
        self
    }
}

impl Mq {
    /// `mq` against the API at `api_url` with `token` (`MQ_API_URL`, `MQ_API_TOKEN`), in a
    /// directory that is no checkout.
    pub fn new(api_url: &str, token: &str) -> Self {
        Self {
            binary: mq_binary(),
            vars: vec![
                ("MQ_API_URL".to_owned(), api_url.to_owned()),
                ("MQ_API_TOKEN".to_owned(), token.to_owned()),
            ],
            dir: std::env::temp_dir(),
        }
    }

    /// The same, with the binary given.
    pub fn with_binary(mut self, binary: PathBuf) -> Self {
        self.binary = binary;
        self
    }

    /// Sets a variable of `mq`'s environment.
    pub fn var(mut self, name: &str, value: &str) -> Self {
        self.vars.retain(|(n, _)| n != name);
        self.vars.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Removes a variable from `mq`'s environment.
    pub fn unset(mut self, name: &str) -> Self {
        self.vars.retain(|(n, _)| n != name);
        self
    }

    /// Runs `mq` in `dir`.
    pub fn in_dir(mut self, dir: &Path) -> Self {
        self.dir = dir.to_owned();
        self
    }

    /// The command, ready to run.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.binary);
        command.args(args).current_dir(&self.dir).env_clear();
        for name in ["PATH", "HOME"] {
            if let Ok(value) = std::env::var(name) {
                command.env(name, value);
            }
        }
        command.envs(self.vars.iter().map(|(k, v)| (k, v)));
        command.stdin(Stdio::null());
        command
    }

    /// Runs `mq args...` to its end (on a blocking thread: the gateway shares the runtime).
    pub async fn run(&self, args: &[&str]) -> Ran {
        let mut command = self.command(args);
        let out = tokio::task::spawn_blocking(move || command.output())
            .await
            .expect("mq's thread")
            .expect("mq runs");
        Ran {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// What the proxy does with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Passes it on and passes the answer back.
    None,
    /// Answers 503 without passing it on.
    Refuse,
    /// Passes it on, then answers 503 in place of the answer (the answer was lost).
    LoseAnswer,
    /// Answers 502 without passing it on, as API Gateway does when a function crashed.
    BadGateway,
}

/// A request the proxy saw, and what the client got.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub idempotency_key: Option<String>,
    pub fault: Fault,
    pub status: u16,
    /// The gateway's answer was a replay (`Idempotency-Replayed: true`).
    pub replayed: bool,
}

/// Decides the fault for the `n`th request (from 0) to a path.
type Plan = Arc<dyn Fn(&str, usize) -> Fault + Send + Sync>;

struct ProxyState {
    upstream: String,
    http: reqwest::Client,
    plan: Plan,
    seen: Mutex<Vec<Seen>>,
}

/// An HTTP proxy on loopback in front of a gateway, failing requests as planned.
pub struct Proxy {
    pub url: String,
    state: Arc<ProxyState>,
    task: JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    /// A proxy to `upstream` (a base URL such as `http://127.0.0.1:PORT/v1`); `plan` is told
    /// each request's path (after the base) and how many requests to that path came before.
    pub async fn start(
        upstream: &str,
        plan: impl Fn(&str, usize) -> Fault + Send + Sync + 'static,
    ) -> Self {
        let state = Arc::new(ProxyState {
            upstream: upstream.trim_end_matches('/').to_owned(),
            http: reqwest::Client::new(),
            plan: Arc::new(plan),
            seen: Mutex::new(Vec::new()),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("proxy listens");
        let url = format!("http://{}/v1", listener.local_addr().expect("address"));
        let app = Router::new().fallback(forward).with_state(state.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { url, state, task }
    }

    /// Every request seen so far, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().expect("proxy log").clone()
    }
}

async fn forward(State(state): State<Arc<ProxyState>>, request: Request) -> Response {
    let path = request.uri().path().trim_start_matches("/v1/").to_owned();
    let key = header(request.headers(), "idempotency-key");
    let nth = {
        let seen = state.seen.lock().expect("proxy log");
        seen.iter().filter(|s| s.path == path).count()
    };
    let fault = (state.plan)(&path, nth);
    let (status, replayed, response) = match fault {
        Fault::Refuse => (503, false, unavailable()),
        Fault::BadGateway => (502, false, bad_gateway()),
        Fault::None | Fault::LoseAnswer => {
            let (status, replayed, passed) = pass_on(&state, request).await;
            if fault == Fault::LoseAnswer {
                (503, replayed, unavailable())
            } else {
                (status, replayed, passed)
            }
        }
    };
    state.seen.lock().expect("proxy log").push(Seen {
        path,
        idempotency_key: key,
        fault,
        status,
        replayed,
    });
    response
}

/// Sends the request to the gateway; its status, whether it was a replay, and the answer.
async fn pass_on(state: &ProxyState, request: Request) -> (u16, bool, Response) {
    let method = request.method().clone();
    let path_and_query = request
        .uri()
        .path_and_query()
        .map(|p| p.as_str().trim_start_matches("/v1").to_owned())
        .unwrap_or_default();
    let mut headers = request.headers().clone();
    headers.remove("host");
    let body = axum::body::to_bytes(request.into_body(), 64 * 1024 * 1024)
        .await
        .expect("request body");
    let answer = state
        .http
        .request(method, format!("{}{path_and_query}", state.upstream))
        .headers(headers)
        .body(body)
        .send()
        .await
        .expect("gateway answers");
    let status = answer.status();
    let replayed = header(answer.headers(), "idempotency-replayed").as_deref() == Some("true");
    let mut response = Response::builder().status(status);
    for (name, value) in answer.headers() {
        response = response.header(name, value);
    }
    let bytes = answer.bytes().await.expect("answer body");
    let response = response.body(Body::from(bytes)).expect("response");
    (status.as_u16(), replayed, response)
}

/// The API's 503, with `Retry-After: 1`.
fn unavailable() -> Response {
    let body = r#"{"error":{"code":"UNAVAILABLE","message":"the store is unavailable; retry"}}"#;
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    let headers = response.headers_mut();
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    headers.insert("retry-after", HeaderValue::from_static("1"));
    response
}

/// API Gateway's 502 for a function that crashed.
fn bad_gateway() -> Response {
    let mut response = Response::new(Body::from(r#"{"message":"Internal Server Error"}"#));
    *response.status_mut() = StatusCode::BAD_GATEWAY;
    response
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}
