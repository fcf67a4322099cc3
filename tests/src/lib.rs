//! The harness of the end-to-end tests: a gateway on a free loopback port over a fresh store
//! (in memory, or DynamoDB on the run's moto server), tokens for two organisations, and an
//! HTTP client. [`live`] adds a local Git host on real repositories ([`git_repo`]), CI, the
//! tick and a clock the test moves.

pub mod browser;
pub mod cli;
pub mod deliveries;
pub mod fixtures;
pub mod git_repo;
pub mod health;
pub mod lambda_runtime;
pub mod live;
pub mod matrix;
pub mod openapi;
pub mod prometheus;
pub mod requests;
pub mod tally;
pub mod template;
pub mod timeline;

use local_gateway::Gateway;
use local_gateway::server::Timeouts;
use mq_core::ids::{OrgId, OwnerRef};
use mq_core::time::Timestamp;
use mq_http::auth::record_for;
use mq_service::{App, Clock, SystemClock};
use mq_store::{DynamoStore, MemoryStore, OwnerLink, Store, TableNames};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// The token of organisation `acme`, which owns the queues the tests create.
pub const ACME: &str = "acme-token";
/// The token of organisation `umbrella`, which must never see acme's queues.
pub const UMBRELLA: &str = "umbrella-token";
/// A token of `acme` that was revoked.
pub const REVOKED: &str = "revoked-token";

/// Which store the gateway runs over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Memory,
    DynamoDb,
}

/// A running gateway and what it runs on.
pub struct TestEnv {
    pub gateway: Gateway,
    pub store: Arc<dyn Store>,
    pub http: reqwest::Client,
    /// The gateway's clock: the system's until a test sets it.
    pub clock: Arc<TestClock>,
    /// The application the gateway serves.
    pub app: Arc<App>,
    pub backend: Backend,
}

/// The system clock, moved forward by the test (`advance_minutes`), or stopped at a time the
/// test sets (`set`).
#[derive(Debug, Default)]
pub struct TestClock {
    stopped_at: std::sync::Mutex<Option<Timestamp>>,
    offset_ms: std::sync::atomic::AtomicI64,
}

impl TestClock {
    /// Stops the clock at `at`.
    pub fn set(&self, at: Timestamp) {
        *self.stopped_at.lock().unwrap_or_else(|p| p.into_inner()) = Some(at);
    }

    /// Moves the clock forward.
    pub fn advance_minutes(&self, minutes: i64) {
        self.advance_millis(minutes * 60_000);
    }

    /// Moves the clock forward.
    pub fn advance_millis(&self, millis: i64) {
        self.offset_ms.fetch_add(millis, Ordering::SeqCst);
    }
}

impl Clock for TestClock {
    fn now(&self) -> Timestamp {
        let stopped = *self.stopped_at.lock().unwrap_or_else(|p| p.into_inner());
        let base = stopped.unwrap_or_else(|| SystemClock.now());
        base.plus_millis(self.offset_ms.load(Ordering::SeqCst))
    }
}

/// A response: status and JSON body (`Value::Null` when the body is not JSON).
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub headers: reqwest::header::HeaderMap,
}

impl Reply {
    /// The error code of an error body.
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or_default()
    }

    /// The error message of an error body.
    pub fn message(&self) -> &str {
        self.body["error"]["message"].as_str().unwrap_or_default()
    }
}

impl TestEnv {
    pub async fn start(backend: Backend) -> Self {
        Self::start_with(backend, |app| app).await
    }

    /// Starts with the application changed by `configure` (an uploads bucket, say).
    pub async fn start_with(backend: Backend, configure: impl FnOnce(App) -> App) -> Self {
        let store = new_store(backend).await;
        let clock = Arc::new(TestClock::default());
        let app = Arc::new(configure(App::new(store.clone(), clock.clone())));
        Self::serve(backend, store, app, clock).await
    }

    /// A gateway serving `app`, whose store is `store` (made by [`new_store`] for `backend`)
    /// and whose clock is `clock`.
    pub async fn serve(
        backend: Backend,
        store: Arc<dyn Store>,
        app: Arc<App>,
        clock: Arc<TestClock>,
    ) -> Self {
        Self::serve_with(backend, store, app, clock, Timeouts::default()).await
    }

    /// [`TestEnv::serve`] giving clients `timeouts` to send a request.
    pub async fn serve_with(
        backend: Backend,
        store: Arc<dyn Store>,
        app: Arc<App>,
        clock: Arc<TestClock>,
        timeouts: Timeouts,
    ) -> Self {
        let listen = "127.0.0.1:0".parse().unwrap();
        let gateway = Gateway::start_with(app.clone(), listen, timeouts)
            .await
            .expect("gateway starts");
        Self {
            gateway,
            store,
            http: reqwest::Client::new(),
            clock,
            app,
            backend,
        }
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The application the gateway serves (to call the service directly).
    pub fn app(&self) -> Arc<App> {
        self.app.clone()
    }

    pub fn url(&self, path: &str) -> String {
        format!(
            "{}/{}",
            self.gateway.base_url(),
            path.trim_start_matches('/')
        )
    }

    /// POSTs a JSON body with a token (`None`: no token header).
    pub async fn post(&self, path: &str, token: Option<&str>, body: &Value) -> Reply {
        let mut req = self.http.post(self.url(path)).json(body);
        if let Some(t) = token {
            req = req.header("x-api-token", t);
        }
        reply(req.send().await.expect("request sent")).await
    }

    /// POSTs a JSON body with a token and extra headers.
    pub async fn post_with_headers(
        &self,
        path: &str,
        token: &str,
        headers: &[(&str, &str)],
        body: &Value,
    ) -> Reply {
        let mut req = self
            .http
            .post(self.url(path))
            .header("x-api-token", token)
            .json(body);
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        reply(req.send().await.expect("request sent")).await
    }

    /// POSTs raw bytes with a content type.
    pub async fn post_raw(
        &self,
        path: &str,
        token: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> Reply {
        let req = self
            .http
            .post(self.url(path))
            .header("x-api-token", token)
            .header("content-type", content_type)
            .body(body);
        reply(req.send().await.expect("request sent")).await
    }

    /// POSTs as acme, expecting 200.
    pub async fn ok(&self, path: &str, body: &Value) -> Value {
        let r = self.post(path, Some(ACME), body).await;
        assert_eq!(r.status, 200, "{path} {body}: {:?}", r.body);
        r.body
    }
}

/// How a GET request presents its token.
#[derive(Debug, Clone, Copy)]
pub enum Auth<'a> {
    None,
    ApiToken(&'a str),
    Bearer(&'a str),
}

/// A response with a text body.
#[derive(Debug)]
pub struct TextReply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
}

impl TextReply {
    /// The body as JSON (`Value::Null` when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }

    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }
}

impl TestEnv {
    /// GETs `path` (with its query string) under the base URL.
    pub async fn get(&self, path_and_query: &str, auth: Auth<'_>) -> TextReply {
        let mut req = self.http.get(self.url(path_and_query));
        req = match auth {
            Auth::None => req,
            Auth::ApiToken(t) => req.header("x-api-token", t),
            Auth::Bearer(t) => req.bearer_auth(t),
        };
        let response = req.send().await.expect("request sent");
        TextReply {
            status: response.status().as_u16(),
            headers: response.headers().clone(),
            text: response.text().await.expect("body read"),
        }
    }
}

async fn reply(response: reqwest::Response) -> Reply {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = response.bytes().await.expect("body read");
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Reply {
        status,
        body,
        headers,
    }
}

/// A fresh store of `backend` with the test organisations registered.
pub async fn new_store(backend: Backend) -> Arc<dyn Store> {
    let store = match backend {
        Backend::Memory => Arc::new(MemoryStore::new()) as Arc<dyn Store>,
        Backend::DynamoDb => dynamo_store().await,
    };
    register_organisations(store.as_ref()).await;
    store
}

/// The repository owner of organisation `acme` (the tests' repositories are its).
pub const ACME_OWNER: &str = "github.com/acme";
/// The repository owner of organisation `umbrella`.
pub const UMBRELLA_OWNER: &str = "github.com/umbrella";
/// A repository owner linked to no organisation.
pub const UNLINKED_OWNER: &str = "github.com/nobody";

/// Registers the organisations of the tests in `store`: their tokens ([`ACME`],
/// [`UMBRELLA`], [`REVOKED`]) and their repository owners ([`ACME_OWNER`],
/// [`UMBRELLA_OWNER`]).
pub async fn register_organisations(store: &dyn Store) {
    let now = Timestamp(0);
    let acme = OrgId::parse("acme").unwrap();
    let umbrella = OrgId::parse("umbrella").unwrap();
    for record in [
        record_for(ACME, acme.clone(), "e2e", now),
        record_for(UMBRELLA, umbrella.clone(), "e2e", now),
        record_for(REVOKED, acme.clone(), "e2e", now),
    ] {
        store.put_token(&record).await.unwrap();
    }
    let revoked = record_for(REVOKED, acme.clone(), "", now);
    store.revoke_token(&revoked.id, Timestamp(1)).await.unwrap();
    for (owner, org) in [(ACME_OWNER, acme), (UMBRELLA_OWNER, umbrella)] {
        let link = OwnerLink {
            owner: OwnerRef::parse("owner", owner).unwrap(),
            org,
            linked_at: now,
            account_id: None,
        };
        store.link_owner(&link).await.unwrap();
    }
}

/// A DynamoDB store on the run's moto server, with tables of its own.
async fn dynamo_store() -> Arc<dyn Store> {
    dynamo_store_of_its_own().await
}

/// A fresh DynamoDB store with the test organisations registered, as its own type: for a test
/// that writes items the store would not (one this version cannot decode, say).
pub async fn new_dynamo_store() -> Arc<DynamoStore> {
    let store = dynamo_store_of_its_own().await;
    register_organisations(store.as_ref()).await;
    store
}

/// A fresh DynamoDB store on tables of its own on the run's moto server.
async fn dynamo_store_of_its_own() -> Arc<DynamoStore> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let endpoint = mq_tables::moto::endpoint();
    let client = mq_tables::local_client(&endpoint).await;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let prefix = format!(
        "e{}-{}-{nanos}-",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let tables = TableNames::with_prefix(&prefix);
    mq_tables::create_missing_tables(&client, &tables)
        .await
        .unwrap();
    Arc::new(DynamoStore::new(client, tables))
}

/// `{repo, targetBranch}` of a test queue, merged with `extra` fields.
pub fn queue_body(repo: &str, extra: Value) -> Value {
    let mut body = json!({
        "repo": {"host": "github.com", "owner": "acme", "name": repo},
        "targetBranch": "main",
    });
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            b.insert(k.clone(), v.clone());
        }
    }
    body
}

/// A loopback port that was free when asked for, for a server a test starts (ChromeDriver,
/// Prometheus).
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("an address").port()
}

/// Declares each scenario twice: over the in-memory store and over DynamoDB on moto.
#[macro_export]
macro_rules! on_both_stores {
    ($($name:ident),+ $(,)?) => {
        mod in_memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::TestEnv::start($crate::Backend::Memory).await).await;
                }
            )+
        }
        mod dynamodb_on_moto {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::TestEnv::start($crate::Backend::DynamoDb).await).await;
                }
            )+
        }
    };
}
