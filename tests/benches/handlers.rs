//! The time a handler takes on the in-memory store, called directly as the Lambda runtime
//! would call it (a `lambda_http::Request` in, a response out; no HTTP server).
//!
//! `cargo bench -p e2e-tests --bench handlers` prints, per endpoint, the calls timed and the
//! median, 90th percentile and slowest call. submitPullRequest asks the Git host for the pull
//! request: it is timed twice, once with the local Git host's answers replayed from memory
//! (the handler's own time, as the in-memory store leaves out DynamoDB's), once with the
//! local Git host itself (`git` processes), followed by the time of that Git host call alone.

use async_trait::async_trait;
use e2e::git_repo::GitRepo;
use e2e::requests::{get, post};
use e2e::timeline::{Event::*, Timeline};
use e2e::{TestClock, register_organisations};
use lambda_http::{Body, Request, Response};
use mq_core::engine::BranchPr;
use mq_core::git::{PrFacts, RequiredStatuses};
use mq_core::ids::{PrNumber, Sha};
use mq_core::ids::{QueueId, RepoRef};
use mq_core::time::Timestamp;
use mq_githost::local::LocalGitHost;
use mq_githost::{
    CommandComment, CommitChecks, GitHost, HostResult, MergeOutcome, MergeRequest, StatusUpdate,
    TestBranchOutcome, TestBranchRequest, TestPullRequest,
};
use mq_http::routes::route;
use mq_metrics::prometheus_text::render;
use mq_service::App;
use mq_service::metrics::figures_of;
use mq_store::{MemoryStore, Store};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const NOW: Timestamp = Timestamp(1_795_000_000_000);
const WARM_UP: usize = 20;
const CALLS: usize = 300;
/// Submissions are slower (the Git host runs `git`): fewer are timed.
const SUBMISSIONS: usize = 50;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let dir = tempfile::Builder::new()
        .prefix("mq-handlers-")
        .tempdir()
        .expect("temporary directory");
    let repos = dir.path().join("repos");
    let repo = GitRepo::create(&repos, &dir.path().join("work"), "rocket");
    repo.add_prs(1, &[]);
    let host = Arc::new(LocalGitHost::new(repos));
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    register_organisations(store.as_ref()).await;
    let clock = Arc::new(TestClock::default());
    clock.set(NOW);
    let app = App::new(store, clock.clone()).with_githost(host.clone());

    create(&app, "main").await;
    fill(&app, "main", 100).await;
    let body = queue("main", json!({}));
    report(
        "getQueue, 100 entries",
        time(&app, "getQueue", &body, CALLS).await,
    );
    if only("getMergeQueueMetrics") {
        metrics(&app, &clock).await;
        return;
    }
    if only("getQueue") {
        // For a profiler: the same call, many times, and nothing else.
        time(&app, "getQueue", &body, 20 * CALLS).await;
        return;
    }

    create(&app, "big").await;
    fill(&app, "big", 1_000).await;
    let replayed = App::new(app.store.clone(), app.clock.clone())
        .with_githost(Arc::new(Replayed::new(host.clone())));
    report(
        "submitPullRequest, queue of 1,000 entries, the Git host's answers replayed",
        submissions(&replayed).await,
    );
    if only("submitPullRequest") {
        for _ in 0..40 {
            submissions(&replayed).await;
        }
        return;
    }
    report(
        "submitPullRequest, queue of 1,000 entries, the local Git host (git)",
        submissions(&app).await,
    );
    report(
        "  of which the Git host's pull request read",
        host_reads(host.as_ref()).await,
    );

    let body = queue("main", json!({"pr": {"number": 100}}));
    report(
        "getSubmittedPullRequest",
        time(&app, "getSubmittedPullRequest", &body, CALLS).await,
    );

    metrics(&app, &clock).await;
}

/// getMergeQueueMetrics for every queue so far and fifty more with a busy hour. The fifty are
/// created three hours before, so that the whole hour is in their window.
async fn metrics(app: &App, clock: &TestClock) {
    clock.set(NOW.plus_millis(-3 * 3_600_000));
    for q in 0..50 {
        create(app, &format!("release/{q:02}")).await;
    }
    clock.set(NOW);
    for q in 0..50 {
        busy_hour(app, &format!("release/{q:02}")).await;
    }
    let org = mq_core::ids::OrgId::parse("acme").unwrap();
    let queues = app.store.queues_of_org(&org).await.expect("queues").len();
    report(
        &format!("getMergeQueueMetrics, {queues} queues (50 with a busy hour)"),
        time_get(app, "getMergeQueueMetrics", CALLS).await,
    );
    let (reading, rendering, bytes) = metrics_parts(app).await;
    report("  of which reading the figures", reading);
    report(
        &format!(
            "  of which rendering the Prometheus text ({} KiB)",
            bytes / 1024
        ),
        rendering,
    );
    if only("getMergeQueueMetrics") {
        time_get(app, "getMergeQueueMetrics", 20 * CALLS).await;
    }
}

/// Whether `HANDLERS_ONLY` names `endpoint`: for a profiler, that call many times more.
fn only(endpoint: &str) -> bool {
    std::env::var("HANDLERS_ONLY").is_ok_and(|only| only == endpoint)
}

/// The two halves of getMergeQueueMetrics: the figures read from the store, their text.
async fn metrics_parts(app: &App) -> (Vec<Duration>, Vec<Duration>, usize) {
    let org = mq_core::ids::OrgId::parse("acme").unwrap();
    let (mut reading, mut rendering, mut bytes) = (Vec::new(), Vec::new(), 0);
    for _ in 0..CALLS {
        let started = Instant::now();
        let (figures, unreadable) = figures_of(app, &org, None).await.expect("figures");
        reading.push(started.elapsed());
        let started = Instant::now();
        bytes = render(&figures, &unreadable).expect("text").len();
        rendering.push(started.elapsed());
    }
    (reading, rendering, bytes)
}

fn queue(branch: &str, extra: Value) -> Value {
    let mut body = json!({
        "repo": {"host": "github.com", "owner": "acme", "name": "rocket"},
        "targetBranch": branch,
    });
    if let (Some(b), Value::Object(e)) = (body.as_object_mut(), extra) {
        b.extend(e);
    }
    body
}

fn queue_id(branch: &str) -> QueueId {
    QueueId::new(
        &RepoRef::new("github.com", "acme", "rocket").unwrap(),
        branch,
    )
}

async fn call(app: &App, endpoint: &str, req: Request) -> Response<Body> {
    let route = route(endpoint).unwrap_or_else(|| panic!("no route {endpoint}"));
    let response = route.serve(app, req).await;
    assert_eq!(
        response.status(),
        200,
        "{endpoint}: {}",
        String::from_utf8_lossy(response.body().as_ref())
    );
    response
}

async fn create(app: &App, branch: &str) {
    call(
        app,
        "createQueue",
        post(&queue(branch, json!({"concurrency": 1}))),
    )
    .await;
}

/// `entries` pull requests (#100 on) waiting in the queue, the first one testing.
async fn fill(app: &App, branch: &str, entries: u32) {
    let t = Timeline::new(app.store.as_ref(), queue_id(branch), NOW);
    let mut events: Vec<_> = (100..100 + entries).map(Submit).collect();
    events.push(Start("busy", vec![100]));
    t.at(30, events).await;
}

/// Twelve pull requests through the queue in the last hour, then four waiting and testing
/// (the history of the `metrics_endpoint` benchmark).
async fn busy_hour(app: &App, branch: &str) {
    let t = Timeline::new(app.store.as_ref(), queue_id(branch), NOW);
    const RUNS: [&str; 12] = [
        "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11",
    ];
    for (i, run) in (0u32..).zip(RUNS) {
        let minute = 58 - i64::from(i) * 4;
        t.at(minute, vec![Submit(i), Start(run, vec![i])]).await;
        t.at(
            minute - 1,
            vec![Finish(run, mq_core::run::RunStatus::Succeeded)],
        )
        .await;
        t.at(
            minute - 2,
            vec![Conclude(i, mq_core::entry::EntryState::Merged)],
        )
        .await;
    }
    t.at(
        5,
        vec![
            Submit(100),
            Submit(101),
            Start("live-a", vec![100]),
            Start("live-b", vec![101]),
        ],
    )
    .await;
}

async fn time(app: &App, endpoint: &str, body: &Value, calls: usize) -> Vec<Duration> {
    let mut times = Vec::with_capacity(calls);
    for i in 0..WARM_UP + calls {
        let req = post(body);
        let started = Instant::now();
        call(app, endpoint, req).await;
        if i >= WARM_UP {
            times.push(started.elapsed());
        }
    }
    times
}

async fn time_get(app: &App, endpoint: &str, calls: usize) -> Vec<Duration> {
    let mut times = Vec::with_capacity(calls);
    for i in 0..WARM_UP + calls {
        let req = get(&[]);
        let started = Instant::now();
        call(app, endpoint, req).await;
        if i >= WARM_UP {
            times.push(started.elapsed());
        }
    }
    times
}

/// Submits #1 to the queue of 1,000 entries (it waits: the one run allowed is in flight),
/// then cancels it, untimed, so that the next submission is a new one again.
async fn submissions(app: &App) -> Vec<Duration> {
    let body = queue("big", json!({"pr": {"number": 1}}));
    let mut times = Vec::with_capacity(SUBMISSIONS);
    for i in 0..5 + SUBMISSIONS {
        let req = post(&body);
        let started = Instant::now();
        call(app, "submitPullRequest", req).await;
        if i >= 5 {
            times.push(started.elapsed());
        }
        call(app, "cancelPullRequest", post(&body)).await;
    }
    times
}

async fn host_reads(host: &dyn GitHost) -> Vec<Duration> {
    let repo = RepoRef::new("github.com", "acme", "rocket").unwrap();
    let mut times = Vec::with_capacity(SUBMISSIONS);
    for _ in 0..SUBMISSIONS {
        let started = Instant::now();
        host.pull_request(&repo, 1, "big")
            .await
            .expect("pull request #1");
        times.push(started.elapsed());
    }
    times
}

fn report(what: &str, mut times: Vec<Duration>) {
    times.sort();
    let at = |q: f64| times[((times.len() as f64 - 1.0) * q).round() as usize];
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "{what}: {} calls, median {:.1} µs, p90 {:.1} µs, slowest {:.1} µs",
        times.len(),
        us(at(0.5)),
        us(at(0.9)),
        us(at(1.0)),
    );
}

/// A Git host that asks the one it wraps once per question and replays the answer after:
/// the handler's own time without the Git host's. Writes (comments, statuses, branches) are
/// accepted without being made.
struct Replayed {
    inner: Arc<LocalGitHost>,
    pull_requests: Mutex<HashMap<(PrNumber, String), PrFacts>>,
    checks: Mutex<HashMap<Sha, CommitChecks>>,
    required: Mutex<HashMap<String, RequiredStatuses>>,
}

impl Replayed {
    fn new(inner: Arc<LocalGitHost>) -> Self {
        Self {
            inner,
            pull_requests: Mutex::default(),
            checks: Mutex::default(),
            required: Mutex::default(),
        }
    }
}

#[async_trait]
impl GitHost for Replayed {
    async fn pull_request(
        &self,
        repo: &RepoRef,
        pr: PrNumber,
        target: &str,
    ) -> HostResult<PrFacts> {
        let key = (pr, target.to_owned());
        if let Some(facts) = self.pull_requests.lock().unwrap().get(&key) {
            return Ok(facts.clone());
        }
        let facts = self.inner.pull_request(repo, pr, target).await?;
        self.pull_requests
            .lock()
            .unwrap()
            .insert(key, facts.clone());
        Ok(facts)
    }

    async fn branch_head(&self, repo: &RepoRef, branch: &str) -> HostResult<Option<Sha>> {
        self.inner.branch_head(repo, branch).await
    }

    async fn create_test_branch(
        &self,
        repo: &RepoRef,
        request: &TestBranchRequest,
    ) -> HostResult<TestBranchOutcome> {
        self.inner.create_test_branch(repo, request).await
    }

    async fn merge(&self, repo: &RepoRef, request: &MergeRequest) -> HostResult<MergeOutcome> {
        self.inner.merge(repo, request).await
    }

    async fn merge_landed(
        &self,
        repo: &RepoRef,
        request: &MergeRequest,
    ) -> HostResult<Option<Sha>> {
        self.inner.merge_landed(repo, request).await
    }

    async fn close_landed_pull_request(&self, repo: &RepoRef, pr: &BranchPr) -> HostResult<()> {
        self.inner.close_landed_pull_request(repo, pr).await
    }

    async fn delete_branch(&self, _: &RepoRef, _: &str) -> HostResult<()> {
        Ok(())
    }

    async fn upsert_comment(&self, _: &RepoRef, _: PrNumber, _: &str) -> HostResult<()> {
        Ok(())
    }

    async fn reply(&self, _: &RepoRef, _: CommandComment, _: &str) -> HostResult<()> {
        Ok(())
    }

    async fn open_test_pull_request(&self, _: &RepoRef, _: &TestPullRequest) -> HostResult<()> {
        Ok(())
    }

    async fn close_test_pull_request(&self, _: &RepoRef, _: &str) -> HostResult<()> {
        Ok(())
    }

    async fn set_status(&self, _: &RepoRef, _: &Sha, _: &StatusUpdate) -> HostResult<()> {
        Ok(())
    }

    async fn required_statuses(
        &self,
        repo: &RepoRef,
        branch: &str,
    ) -> HostResult<RequiredStatuses> {
        if let Some(required) = self.required.lock().unwrap().get(branch) {
            return Ok(required.clone());
        }
        let required = self.inner.required_statuses(repo, branch).await?;
        self.required
            .lock()
            .unwrap()
            .insert(branch.to_owned(), required.clone());
        Ok(required)
    }

    async fn may_write(&self, repo: &RepoRef, login: &str) -> HostResult<bool> {
        self.inner.may_write(repo, login).await
    }

    async fn commit_checks(&self, repo: &RepoRef, sha: &Sha) -> HostResult<CommitChecks> {
        if let Some(checks) = self.checks.lock().unwrap().get(sha) {
            return Ok(checks.clone());
        }
        let checks = self.inner.commit_checks(repo, sha).await?;
        self.checks
            .lock()
            .unwrap()
            .insert(sha.clone(), checks.clone());
        Ok(checks)
    }
}
