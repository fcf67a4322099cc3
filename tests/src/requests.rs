//! The DynamoDB requests each endpoint sends: an SDK interceptor on the store's client logs
//! every request (every attempt, with its operation and tables), and [`measure`] calls every
//! endpoint once, in the order a user would, on a store on the run's moto server with a local
//! Git host, logging what each call sent.
//!
//! The benchmark `dynamodb_requests` prints the table; the test `dynamodb_request_counts`
//! fails when an endpoint sends more (or fewer) requests than BENCHMARKS.md says.

use crate::git_repo::GitRepo;
use crate::health::{fixture, form, sha};
use crate::{ACME, TestClock, register_organisations};
use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use lambda_http::http::header::CONTENT_TYPE;
use lambda_http::{Body, Request, RequestExt};
use mq_core::entry::{Entry, ImpactedTargets, UploadedTargets};
use mq_core::git::PrFacts;
use mq_core::ids::{QueueId, RepoRef};
use mq_core::snapshot::{Commit, Transition};
use mq_githost::local::LocalGitHost;
use mq_githost::webhook::{SIGNATURE_HEADER, WebhookReceiver, sign};
use mq_http::routes::route;
use mq_lambda::s3::UploadBucket;
use mq_service::tick;
use mq_service::{App, Clock, SystemClock};
use mq_store::{DynamoStore, TableNames};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// The webhook secret of the measured application.
const WEBHOOK_SECRET: &str = "requests-secret";

/// One request to DynamoDB: its operation and the tables it names (without their prefix).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    pub operation: String,
    pub tables: Vec<String>,
    /// The IAM actions it needs, each on its resource: a table (`Queues`) or an index
    /// (`Queues/index/org-index`), without prefix.
    pub needs: Vec<(String, String)>,
}

impl Sent {
    /// A read of a repository owner's link (items of the tokens table).
    pub fn is_owner_lookup(&self) -> bool {
        self.operation == "GetItem" && self.tables == ["ApiTokens"]
    }
}

impl fmt::Display for Sent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.operation, self.tables.join("+"))
    }
}

/// Every request a client sent, in order.
#[derive(Debug, Default, Clone)]
pub struct RequestLog {
    sent: Arc<Mutex<Vec<Sent>>>,
    prefix: Arc<str>,
}

impl RequestLog {
    /// A log naming tables without `prefix`.
    pub fn new(prefix: &str) -> Self {
        Self {
            sent: Arc::default(),
            prefix: prefix.into(),
        }
    }

    /// What was sent since the last call.
    pub fn take(&self) -> Vec<Sent> {
        std::mem::take(&mut *self.sent.lock().unwrap_or_else(|p| p.into_inner()))
    }

    fn short_name(&self, table: &str) -> String {
        table
            .strip_prefix(&*self.prefix)
            .unwrap_or(table)
            .to_owned()
    }
}

impl Intercept for RequestLog {
    fn name(&self) -> &'static str {
        "RequestLog"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let request = context.request();
        let operation = request
            .headers()
            .get("x-amz-target")
            .and_then(|t| t.rsplit('.').next())
            .unwrap_or("?")
            .to_owned();
        let body: Value = request
            .body()
            .bytes()
            .and_then(|b| serde_json::from_slice(b).ok())
            .unwrap_or(Value::Null);
        let mut tables: Vec<String> = tables_of(&body)
            .iter()
            .map(|t| self.short_name(t))
            .collect();
        tables.sort();
        tables.dedup();
        let needs = needs_of(&operation, &body)
            .into_iter()
            .map(|(action, resource)| (action, self.short_name(&resource)))
            .collect();
        let mut sent = self.sent.lock().unwrap_or_else(|p| p.into_inner());
        sent.push(Sent {
            operation,
            tables,
            needs,
        });
        Ok(())
    }
}

/// The tables a request body names: `TableName`, the keys of `RequestItems`, or the tables
/// of a transaction's actions.
fn tables_of(body: &Value) -> Vec<String> {
    if let Some(name) = body["TableName"].as_str() {
        return vec![name.to_owned()];
    }
    if let Some(items) = body["RequestItems"].as_object() {
        return items.keys().cloned().collect();
    }
    body["TransactItems"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|action| action.as_object()?.values().next()?["TableName"].as_str())
        .map(str::to_owned)
        .collect()
}

/// The IAM actions a request of `operation` with `body` needs, each with its resource (a
/// table's name, or `<table>/index/<index>`): a transaction needs its actions' own.
fn needs_of(operation: &str, body: &Value) -> Vec<(String, String)> {
    let action = |name: &str| format!("dynamodb:{name}");
    if let Some(actions) = body["TransactItems"].as_array() {
        return actions
            .iter()
            .filter_map(|a| a.as_object()?.iter().next())
            .filter_map(|(kind, a)| {
                let name = match kind.as_str() {
                    "Put" => "PutItem",
                    "Update" => "UpdateItem",
                    "Delete" => "DeleteItem",
                    "ConditionCheck" => "ConditionCheckItem",
                    "Get" => "GetItem",
                    _ => return None,
                };
                Some((action(name), a["TableName"].as_str()?.to_owned()))
            })
            .collect();
    }
    let resources = match (body["TableName"].as_str(), body["IndexName"].as_str()) {
        (Some(table), Some(index)) => vec![format!("{table}/index/{index}")],
        _ => tables_of(body),
    };
    resources
        .into_iter()
        .map(|resource| (action(operation), resource))
        .collect()
}

/// What one call of an endpoint sent.
#[derive(Debug, Clone)]
pub struct Measured {
    pub endpoint: &'static str,
    /// What the call did.
    pub case: &'static str,
    /// Its answer (JSON, else `Null`).
    pub answer: Value,
    pub sent: Vec<Sent>,
}

impl Measured {
    /// Whether the call looked up its API token first (every endpoint but the webhook's).
    pub fn authenticated(&self) -> bool {
        self.endpoint != "webhooks/github"
            && self.endpoint != "tick"
            && self.sent.first().is_some_and(|s| s.operation == "GetItem")
    }

    /// The requests after the token lookup.
    fn after_auth(&self) -> &[Sent] {
        &self.sent[usize::from(self.authenticated())..]
    }

    /// Lookups of the repository's owner (a `GetItem` on the tokens table after the token
    /// lookup; sent at once with the call's first read, so in no fixed order among them).
    pub fn owner_lookups(&self) -> usize {
        self.after_auth()
            .iter()
            .filter(|s| s.is_owner_lookup())
            .count()
    }

    /// The requests of the call itself: all but the token and owner lookups and the rounds
    /// of Git host effects after its first transaction (each round commits the effects'
    /// outcomes in one more transaction, starting from the snapshot the previous one
    /// committed; any other request after the first transaction, a re-read say, counts as
    /// the call's own).
    pub fn own(&self) -> Vec<&Sent> {
        let mut transactions = 0;
        self.after_auth()
            .iter()
            .filter(|s| !s.is_owner_lookup())
            .filter(|s| {
                if s.operation != "TransactWriteItems" {
                    return true;
                }
                transactions += 1;
                transactions == 1
            })
            .collect()
    }

    /// Rounds of Git host effects whose outcomes the call committed.
    pub fn effect_rounds(&self) -> usize {
        let transactions = self
            .after_auth()
            .iter()
            .filter(|s| s.operation == "TransactWriteItems")
            .count();
        transactions.saturating_sub(1)
    }

    /// The call's own requests, counted by kind: `Query Queues ×2, TransactWriteItems …`.
    pub fn own_summary(&self) -> String {
        let own = self.own();
        let mut parts: Vec<(String, usize)> = Vec::new();
        for s in own {
            let label = s.to_string();
            match parts.iter_mut().find(|(l, _)| *l == label) {
                Some((_, n)) => *n += 1,
                None => parts.push((label, 1)),
            }
        }
        parts
            .into_iter()
            .map(|(label, n)| match n {
                1 => label,
                n => format!("{label} ×{n}"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `endpoint | case | token | owner | own requests (count) | effect rounds | all`, for a
    /// table.
    pub fn row(&self) -> String {
        format!(
            "| `{}` | {} | {} | {} | {} ({}) | {} | {} |",
            self.endpoint,
            self.case,
            if self.authenticated() { "1" } else { "–" },
            self.owner_lookups(),
            self.own_summary(),
            self.own().len(),
            self.effect_rounds(),
            self.sent.len(),
        )
    }
}

/// The header of [`Measured::row`]'s table.
pub const TABLE_HEADER: &str = "| endpoint | call | token lookup | owner lookup | the call's own requests (count) | effect rounds | all requests |\n|---|---|---|---|---|---|---|";

/// An application over a DynamoDB store on the run's moto server whose client logs what it
/// sends, a local Git host with one repository (`acme/rocket`, pull requests #1–#3) and a
/// bucket for presigned uploads.
pub struct Bench {
    pub app: App,
    pub log: RequestLog,
    pub repo: GitRepo,
    pub clock: Arc<TestClock>,
    _dir: tempfile::TempDir,
}

impl Bench {
    pub async fn start() -> Self {
        let endpoint = mq_tables::moto::endpoint();
        let (store, log, prefix) = logged_store().await;
        let dir = tempfile::Builder::new()
            .prefix("mq-requests-")
            .tempdir()
            .expect("temporary directory");
        let repos = dir.path().join("repos");
        let repo = GitRepo::create(&repos, &dir.path().join("work"), "rocket");
        repo.add_prs(3, &[]);
        let clock = Arc::new(TestClock::default());
        let bucket = UploadBucket::local(
            &mq_tables::local_config(&endpoint).await,
            &format!("{prefix}uploads"),
        );
        let app = App::new(store, clock.clone())
            .with_githost(Arc::new(LocalGitHost::new(repos)))
            .with_webhook(WebhookReceiver::new(
                WEBHOOK_SECRET.as_bytes().to_vec(),
                "github.com",
            ))
            .with_uploads(std::sync::Arc::new(bucket));
        log.take();
        Self {
            app,
            log,
            repo,
            clock,
            _dir: dir,
        }
    }

    /// Calls `endpoint` (its path under `/v1/`) with `request` and logs what it sent.
    pub async fn call(&self, endpoint: &'static str, case: &'static str, req: Request) -> Measured {
        self.call_answered(endpoint, case, req, 200).await
    }

    /// [`Bench::call`], expecting the answer `expected`.
    pub async fn call_answered(
        &self,
        endpoint: &'static str,
        case: &'static str,
        req: Request,
        expected: u16,
    ) -> Measured {
        let route = route(endpoint).unwrap_or_else(|| panic!("no route {endpoint}"));
        self.log.take();
        let response = route.serve(&self.app, req).await;
        let status = response.status().as_u16();
        assert!(
            status == expected,
            "{endpoint} ({case}) answered {status}: {}",
            String::from_utf8_lossy(response.body().as_ref())
        );
        Measured {
            endpoint,
            case,
            answer: serde_json::from_slice(response.body().as_ref()).unwrap_or(Value::Null),
            sent: self.log.take(),
        }
    }

    /// Runs one tick and logs what it sent.
    pub async fn tick(&self, case: &'static str) -> Measured {
        self.log.take();
        tick::run(&self.app, "requests").await.expect("tick runs");
        Measured {
            endpoint: "tick",
            case,
            answer: Value::Null,
            sent: self.log.take(),
        }
    }

    /// The id of the run testing `pr` now, from the test branches of the repository.
    fn run_testing(&self, pr: u32) -> (String, String) {
        let branch = self
            .repo
            .test_branches()
            .into_iter()
            .find(|b| {
                let subjects = self.repo.history_subjects(b);
                subjects.iter().any(|s| s.contains(&format!("#{pr}")))
            })
            .unwrap_or_else(|| panic!("no test branch for #{pr}"));
        let sha = self.repo.head(&branch).expect("branch head");
        let id = branch.rsplit('/').next().unwrap_or_default().to_owned();
        (id, sha)
    }
}

/// A DynamoDB store on the run's moto server, with tables of its own and the test tokens
/// registered, whose client logs every request it sends (the registration's are taken out);
/// and the tables' prefix.
pub async fn logged_store() -> (Arc<DynamoStore>, RequestLog, String) {
    logged_store_at(&mq_tables::moto::endpoint()).await
}

/// [`logged_store`] on the server at `endpoint`.
pub async fn logged_store_at(endpoint: &str) -> (Arc<DynamoStore>, RequestLog, String) {
    let plain = mq_tables::local_client(endpoint).await;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let prefix = format!(
        "req{}-{}-{}-",
        std::process::id(),
        SystemClock.now().millis(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let tables = TableNames::with_prefix(&prefix);
    mq_tables::create_missing_tables(&plain, &tables)
        .await
        .expect("tables created on moto");
    let log = RequestLog::new(&prefix);
    let config = plain.config().to_builder().interceptor(log.clone()).build();
    let store = Arc::new(DynamoStore::new(
        aws_sdk_dynamodb::Client::from_conf(config),
        tables,
    ));
    register_organisations(store.as_ref()).await;
    log.take();
    (store, log, prefix)
}

/// A JSON POST with acme's token.
pub fn post(body: &Value) -> Request {
    lambda_http::http::Request::builder()
        .method("POST")
        .header("x-api-token", ACME)
        .header(CONTENT_TYPE, "application/json")
        .body(Body::Binary(body.to_string().into_bytes()))
        .expect("request")
}

/// A GET with acme's token and query parameters.
pub fn get(query: &[(&str, &str)]) -> Request {
    let params: HashMap<String, Vec<String>> = query
        .iter()
        .map(|(k, v)| ((*k).to_owned(), vec![(*v).to_owned()]))
        .collect();
    lambda_http::http::Request::builder()
        .method("GET")
        .header("x-api-token", ACME)
        .body(Body::Empty)
        .expect("request")
        .with_query_string_parameters(params)
}

fn queue(branch: &str, extra: Value) -> Value {
    let mut body = json!({
        "repo": {"host": "github.com", "owner": "acme", "name": "rocket"},
        "targetBranch": branch,
    });
    merge(&mut body, extra);
    body
}

fn pr(number: u32, extra: Value) -> Value {
    let mut body = queue("main", json!({"pr": {"number": number}}));
    merge(&mut body, extra);
    body
}

fn health(extra: Value) -> Value {
    let mut body = json!({
        "repo": {"host": "github.com", "owner": "acme", "name": "rocket"},
        "org_url_slug": "acme",
    });
    merge(&mut body, extra);
    body
}

fn merge(body: &mut Value, extra: Value) {
    if let (Some(b), Value::Object(e)) = (body.as_object_mut(), extra) {
        b.extend(e);
    }
}

/// Calls every endpoint once, in the order of a queue's life, and returns what each sent.
pub async fn measure() -> Vec<Measured> {
    let b = Bench::start().await;
    let mut out = Vec::new();
    out.extend(queue_endpoints(&b).await);
    out.extend(test_health_endpoints(&b).await);
    out
}

/// Calls that take other paths than [`measure`]'s, with what each sent: a creation of a queue
/// that exists (it reads the queue, to know whether it is its own), reads of a queue larger
/// than one page of a query (read with its queue item before and after), and a tick that
/// finds flaky tests due for recovery (it reclassifies them).
pub async fn measure_other_paths() -> Vec<Measured> {
    let b = Bench::start().await;
    let body = post(&queue("main", json!({"state": "paused"})));
    let created = b.call("createQueue", "a queue", body).await;
    let again = post(&queue("main", json!({})));
    let refused = b
        .call_answered("createQueue", "a queue that exists", again, 409)
        .await;
    let mut out = vec![created, refused];
    out.extend(pull_requests_no_longer_active(&b).await);
    let id = QueueId::new(
        &RepoRef::new("github.com", "acme", "rocket").unwrap(),
        "main",
    );
    fill_beyond_a_page(&b.app, &id).await;
    let read = b
        .call(
            "getQueue",
            "a queue over one page",
            post(&queue("main", json!({}))),
        )
        .await;
    let listed = b
        .call("listQueues", "a queue over one page", post(&json!({})))
        .await;
    let uploaded = b
        .call(
            "flaky-tests/upload",
            "a report of a few test cases, all new",
            flaky_report_upload(),
        )
        .await;
    b.clock.advance_minutes(8 * 24 * 60);
    let recovered = b.tick("flaky tests due for recovery").await;
    let reclassified = recovered
        .sent
        .iter()
        .any(|s| s.operation == "TransactWriteItems" && s.tables == ["TestHealth"]);
    assert!(reclassified, "the tick reclassified: {:?}", recovered.sent);
    out.extend([read, listed, uploaded, recovered]);
    out
}

/// On the paused queue: a switch to parallel mode with a pull request waiting (its stored
/// targets are read), then calls on pull requests with no active entry, refused 409 or 404
/// after a read of their history.
async fn pull_requests_no_longer_active(b: &Bench) -> Vec<Measured> {
    let submitted = b
        .call(
            "submitPullRequest",
            "#1 into a paused queue",
            post(&pr(1, json!({}))),
        )
        .await;
    let switched = b
        .call(
            "updateQueue",
            "to parallel mode, #1 waiting",
            post(&queue("main", json!({"mode": "parallel"}))),
        )
        .await;
    let cancelled = b
        .call("cancelPullRequest", "#1", post(&pr(1, json!({}))))
        .await;
    let again = b
        .call_answered(
            "cancelPullRequest",
            "#1 again (no longer active)",
            post(&pr(1, json!({}))),
            409,
        )
        .await;
    let never = b
        .call_answered(
            "restartTestsOnPullRequest",
            "#9, never submitted",
            post(&pr(9, json!({}))),
            404,
        )
        .await;
    vec![submitted, switched, cancelled, again, never]
}

/// Gives queue `id` 40 entries of about 30 KB (300 impacted targets of 100 characters): more
/// than one page of a query (1 MB).
async fn fill_beyond_a_page(app: &App, id: &QueueId) {
    let before = app.store.load(id).await.unwrap().expect("the queue");
    let mut after = before.clone();
    for pr in 100..140 {
        let mut entry = Entry::submitted(
            format!("big-{pr}"),
            u64::from(pr),
            PrFacts::sample(pr),
            before.queue.created_at,
        );
        let targets = (0..300)
            .map(|i| format!("//services/{pr:04}/target-{i:04}/{}", "x".repeat(70)))
            .collect();
        entry.impacted = Some(UploadedTargets {
            head_sha: entry.pr_facts.head_sha.clone(),
            targets: ImpactedTargets::List(targets),
            uploaded_at: before.queue.created_at,
        });
        after.entries.push(Arc::new(entry));
    }
    let transition = Transition {
        snapshot: after,
        effects: vec![],
        concluded: vec![],
        finished_runs: vec![],
    };
    let mut commit = Commit::between(&before, &transition, before.queue.created_at);
    commit.queue.record_commit("filled".to_owned());
    app.store.commit(&commit).await.unwrap();
}

/// The queue and pull request endpoints, the webhook and the tick.
async fn queue_endpoints(b: &Bench) -> Vec<Measured> {
    let mut out = Vec::new();
    let required = json!({"requiredStatuses": ["build"]});
    out.push(
        b.call("createQueue", "a queue", post(&queue("main", required)))
            .await,
    );
    out.push(
        b.call(
            "updateQueue",
            "settings of an empty queue",
            post(&queue("main", json!({"concurrency": 2}))),
        )
        .await,
    );
    let head3 = b.repo.pr_head(3);
    out.push(
        b.call(
            "setImpactedTargets",
            "#3, not submitted yet",
            post(&pr(
                3,
                json!({"pr": {"number": 3, "sha": head3}, "impactedTargets": ["//app"]}),
            )),
        )
        .await,
    );
    out.push(
        b.call(
            "submitPullRequest",
            "#1 into an empty queue (it starts testing)",
            post(&pr(1, json!({}))),
        )
        .await,
    );
    out.push(
        b.call(
            "submitPullRequest",
            "#2 behind #1 (it starts testing on top of #1)",
            post(&pr(2, json!({}))),
        )
        .await,
    );
    out.push(
        b.call(
            "getQueue",
            "two pull requests",
            post(&queue("main", json!({}))),
        )
        .await,
    );
    out.push(
        b.call("getSubmittedPullRequest", "#1", post(&pr(1, json!({}))))
            .await,
    );
    let (run1, _) = b.run_testing(1);
    let run1: &'static str = Box::leak(run1.into_boxed_str());
    out.push(
        b.call(
            "getMergeQueueTestingDetails",
            "#1's run",
            post(&queue("main", json!({"testRunId": run1}))),
        )
        .await,
    );
    let head1 = b.repo.pr_head(1);
    out.push(
        b.call(
            "setImpactedTargets",
            "#1, testing",
            post(&pr(
                1,
                json!({"pr": {"number": 1, "sha": head1}, "impactedTargets": ["//app"]}),
            )),
        )
        .await,
    );
    out.push(
        b.call(
            "restartTestsOnPullRequest",
            "#1 (its run and #2's are cancelled and rebuilt)",
            post(&pr(1, json!({}))),
        )
        .await,
    );
    out.push(
        b.call(
            "cancelPullRequest",
            "#2 (its run is cancelled)",
            post(&pr(2, json!({}))),
        )
        .await,
    );
    out.push(b.tick("one queue has work (#1 testing)").await);
    let (_, sha1) = b.run_testing(1);
    out.push(
        b.call(
            "webhooks/github",
            "`build` passed on #1's run (it merges)",
            status_delivery(&sha1),
        )
        .await,
    );
    out.extend(webhook_deliveries(b).await);
    out.push(
        b.call(
            "getMergeQueueMetrics",
            "one queue",
            get(&[("repo", "acme/rocket"), ("repoHost", "github.com")]),
        )
        .await,
    );
    out.extend(dashboard_endpoints(b).await);
    out.push(b.tick("no queue has work").await);
    out.push(
        b.call(
            "createQueue",
            "a second queue",
            post(&queue("dev", json!({}))),
        )
        .await,
    );
    out.push(
        b.call(
            "deleteQueue",
            "the empty second queue",
            post(&queue("dev", json!({}))),
        )
        .await,
    );
    out
}

/// The dashboard's reads and the advice, once #1 merged.
async fn dashboard_endpoints(b: &Bench) -> Vec<Measured> {
    let calls = [
        ("listQueues", "the organisation's queues (one)", json!({})),
        (
            "getQueueActivity",
            "the queue, #1 merged",
            queue("main", json!({})),
        ),
        ("getPullRequestHistory", "#1, merged", pr(1, json!({}))),
        (
            "getQueueAdvice",
            "a history too short for advice",
            queue("main", json!({})),
        ),
    ];
    let mut out = Vec::new();
    for (endpoint, case, body) in calls {
        out.push(b.call(endpoint, case, post(&body)).await);
    }
    out
}

/// The deliveries about pull requests, once #1 merged and #2 was cancelled: a change to a
/// pull request in no queue, a `/service merge` comment (the queue's only submission that
/// comes from the webhook), and a push to the pull request it submitted.
async fn webhook_deliveries(b: &Bench) -> Vec<Measured> {
    let mut out = Vec::new();
    let edited = pull_request_delivery(b, "edited", 3);
    out.push(
        b.call("webhooks/github", "#3 edited (in no queue)", edited)
            .await,
    );
    b.repo.set_role("octocat", "write");
    let merge = comment_delivery(3, 901, "/service merge");
    out.push(
        b.call(
            "webhooks/github",
            "`/service merge` on #3 (it starts testing)",
            merge,
        )
        .await,
    );
    b.repo.push_to_pr(3, "more.txt");
    let pushed = pull_request_delivery(b, "synchronize", 3);
    out.push(
        b.call(
            "webhooks/github",
            "a push to #3 (it leaves the queue)",
            pushed,
        )
        .await,
    );
    out
}

/// A signed delivery of `event`.
fn delivery(event: &str, payload: Value) -> Request {
    let payload = payload.to_string();
    lambda_http::http::Request::builder()
        .method("POST")
        .header("x-github-event", event)
        .header(
            SIGNATURE_HEADER,
            sign(WEBHOOK_SECRET.as_bytes(), payload.as_bytes()),
        )
        .header(CONTENT_TYPE, "application/json")
        .body(Body::Binary(payload.into_bytes()))
        .expect("request")
}

/// The repository as deliveries name it.
fn repository() -> Value {
    json!({"name": "rocket", "full_name": "acme/rocket",
           "owner": {"login": "acme"}, "default_branch": "main"})
}

/// A signed `status` delivery: `build` passed on `sha`.
fn status_delivery(sha: &str) -> Request {
    let payload = json!({
        "id": 1, "sha": sha, "name": "acme/rocket", "context": "build",
        "state": "success", "description": "build passed",
        "target_url": "https://ci.example.com/build/1",
        "commit": {"sha": sha},
        "branches": [],
        "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
        "repository": repository(),
        "sender": {"login": "ci-bot[bot]", "type": "Bot"},
    });
    delivery("status", payload)
}

/// A signed `pull_request` delivery of `action` on pull request `pr`, at its head.
fn pull_request_delivery(b: &Bench, action: &str, pr: u32) -> Request {
    let payload = json!({
        "action": action, "number": pr,
        "pull_request": {
            "number": pr, "title": format!("Change {pr}"), "user": {"login": "octocat"},
            "head": {"ref": format!("pr-{pr}"), "sha": b.repo.pr_head(pr)},
            "base": {"ref": "main", "sha": b.repo.head("main").expect("main")},
            "state": "open", "merged": false, "draft": false, "mergeable": true,
        },
        "repository": repository(),
        "sender": {"login": "octocat", "type": "User"},
    });
    delivery("pull_request", payload)
}

/// A signed `issue_comment` delivery: `octocat`, a member, comments `body` on pull request
/// `pr` (comment `id`).
fn comment_delivery(pr: u32, id: u64, body: &str) -> Request {
    let payload = json!({
        "action": "created",
        "issue": {"number": pr, "pull_request": {"url": "https://api.github.com/repos/acme/rocket/pulls/3"}},
        "comment": {"id": id, "body": body, "user": {"login": "octocat"},
                    "author_association": "MEMBER"},
        "repository": repository(),
        "sender": {"login": "octocat", "type": "User"},
    });
    delivery("issue_comment", payload)
}

/// An upload of a small report, in which a test passed on its retry (flaky).
fn flaky_report_upload() -> Request {
    let commit = sha("R1");
    let fields = [
        ("repo", "github.com/acme/rocket"),
        ("commit_sha", commit.as_str()),
        ("branch", "main"),
        ("upload_id", "requests-1"),
    ];
    let report = "surefire-2.22-rerun-flaky.xml";
    let (content_type, body) = form(&fields, &[(report, fixture(report))]);
    lambda_http::http::Request::builder()
        .method("POST")
        .header("x-api-token", ACME)
        .header(CONTENT_TYPE, content_type)
        .body(Body::Binary(body))
        .expect("request")
}

/// The test-health endpoints, on a small report.
async fn test_health_endpoints(b: &Bench) -> Vec<Measured> {
    let mut out = Vec::new();
    out.push(
        b.call(
            "flaky-tests/upload",
            "a report of a few test cases, all new",
            flaky_report_upload(),
        )
        .await,
    );
    let page = json!({"page_query": {"page_size": 10}});
    let mut unhealthy = health(json!({"status": "FLAKY"}));
    merge(&mut unhealthy, page.clone());
    let listed = b
        .call(
            "flaky-tests/list-unhealthy-tests",
            "one page",
            post(&unhealthy),
        )
        .await;
    let flaky = listed.answer["tests"][0]["id"]
        .as_str()
        .expect("a flaky test case")
        .to_owned();
    out.push(listed);
    out.push(
        b.call(
            "flaky-tests/list-quarantined-tests",
            "one page",
            post(&health(page)),
        )
        .await,
    );
    out.push(
        b.call(
            "flaky-tests/update-settings",
            "turn quarantining on",
            post(&health(json!({"quarantining": true}))),
        )
        .await,
    );
    let failed = json!({"failed_tests": [{"name": "nope", "classname": "x", "parent": "x"}]});
    out.push(
        b.call(
            "flaky-tests/check-quarantined",
            "one failed test",
            post(&health(failed)),
        )
        .await,
    );
    let ticket = json!({"test_case_id": flaky, "ticket_url": "https://tracker.example/T-1"});
    out.push(
        b.call(
            "flaky-tests/link-ticket",
            "one test case",
            post(&health(ticket)),
        )
        .await,
    );
    let large = json!({
        "repo": {"host": "github.com", "owner": "acme", "name": "rocket"},
        "commit_sha": sha("R2"), "branch": "main", "upload_id": "requests-2",
    });
    out.push(
        b.call(
            "flaky-tests/upload-url",
            "a presigned URL (signed locally; no S3 request)",
            post(&large),
        )
        .await,
    );
    out
}
