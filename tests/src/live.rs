//! The live environment: the gateway over a store (memory, or DynamoDB on moto) with a local
//! Git host on a temporary directory, optionally a CI command, the status listener, a fast
//! in-process tick, and a clock the test moves forward. Its methods speak the API over HTTP and
//! wait for what a user would wait for.

use crate::git_repo::{GitRepo, HOST, OWNER};
use crate::{ACME, Backend, Reply, TestClock, TestEnv, new_store};
use local_gateway::background::{spawn_status_listener, spawn_tick};
use local_gateway::server::Timeouts;
use mq_core::git::StatusState;
use mq_core::ids::{RepoRef, Sha};
use mq_githost::local::{CiConfig, LocalGitHost};
use mq_githost::webhook::WebhookReceiver;
use mq_githost::{GitHost, StatusUpdate};
use mq_service::App;
use mq_service::tick;
use mq_store::{FaultyStore, Store};
use serde_json::{Value, json};
use std::future::Future;
use std::ops::Deref;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

/// The status context of the local CI, and of the statuses the tests set in its place.
pub const CI: &str = "local-ci";
/// How long a wait lasts before the test fails.
pub const DEADLINE: Duration = Duration::from_secs(60);
/// Between two looks while waiting.
const POLL: Duration = Duration::from_millis(25);
/// Where the CI command notes the branches it tested, in the temporary directory.
const TESTED_BRANCHES: &str = "tested-branches.log";

/// Wraps the store or the Git host the application works with (to inject faults, say).
pub type Wrap<T> = Arc<dyn Fn(Arc<T>) -> Arc<T> + Send + Sync>;

/// What runs beside the gateway.
#[derive(Clone)]
pub struct LiveOptions {
    ci_command: Option<String>,
    webhook_secret: Option<String>,
    status_listener: bool,
    /// `None`: no background tick (the test ticks).
    tick_every: Option<Duration>,
    wrap_store: Option<Wrap<dyn Store>>,
    wrap_host: Option<Wrap<dyn GitHost>>,
    timeouts: Timeouts,
    instances: usize,
    advice_work: Option<u64>,
}

impl Default for LiveOptions {
    fn default() -> Self {
        Self {
            ci_command: None,
            webhook_secret: None,
            status_listener: true,
            tick_every: Some(Duration::from_millis(100)),
            wrap_store: None,
            wrap_host: None,
            timeouts: Timeouts::default(),
            instances: 1,
            advice_work: None,
        }
    }
}

impl LiveOptions {
    /// Tests every test branch with this shell command (status `local-ci`); the command also
    /// notes each branch it tests (see [`LiveEnv::tested_branches`]).
    pub fn ci(mut self, command: &str) -> Self {
        self.ci_command = Some(command.to_owned());
        self
    }

    /// Accepts webhook deliveries signed with `secret`; statuses recorded on the host are
    /// then not delivered by the listener (deliveries are the only way in, with the tick).
    pub fn webhook(mut self, secret: &str) -> Self {
        self.webhook_secret = Some(secret.to_owned());
        self.status_listener = false;
        self
    }

    /// The tick runs in the background every `every` (every 100 ms unless told).
    pub fn tick_every(mut self, every: Duration) -> Self {
        self.tick_every = Some(every);
        self
    }

    /// No tick in the background: the test runs it ([`LiveEnv::tick`], [`tick::run`]).
    pub fn without_tick(mut self) -> Self {
        self.tick_every = None;
        self
    }

    /// Serves `n` instances of the application, each on a gateway of its own, over the same
    /// store, Git host and clock, as Lambda runs concurrent requests in instances of a
    /// function that share nothing but the store ([`LiveEnv::instance`]). The tick and the
    /// status listener run beside the first.
    pub fn instances(mut self, n: usize) -> Self {
        self.instances = n.max(1);
        self
    }

    /// The application works with `wrap(store)` instead of the store; `LiveEnv::store` is
    /// the wrapped one.
    pub fn wrap_store(
        mut self,
        wrap: impl Fn(Arc<dyn Store>) -> Arc<dyn Store> + Send + Sync + 'static,
    ) -> Self {
        self.wrap_store = Some(Arc::new(wrap));
        self
    }

    /// The application works with `wrap(host)` instead of the local Git host (`LiveEnv::host`
    /// stays the local one).
    pub fn wrap_host(
        mut self,
        wrap: impl Fn(Arc<dyn GitHost>) -> Arc<dyn GitHost> + Send + Sync + 'static,
    ) -> Self {
        self.wrap_host = Some(Arc::new(wrap));
        self
    }

    /// One advice may spend this much of the simulator's work (`App::advice_work`), less
    /// than a deployment's budget to keep a test short.
    pub fn advice_work(mut self, work: u64) -> Self {
        self.advice_work = Some(work);
        self
    }

    /// The gateway gives clients these times to send a request.
    pub fn timeouts(mut self, timeouts: Timeouts) -> Self {
        self.timeouts = timeouts;
        self
    }

    pub async fn start(self, backend: Backend) -> LiveEnv {
        LiveEnv::start_with(backend, self).await
    }

    /// Starts with the store wrapped in a [`FaultyStore`] seeded with `seed` (it injects
    /// nothing until told to), and returns that wrapper too.
    pub async fn start_with_faulty_store(
        self,
        backend: Backend,
        seed: u64,
    ) -> (LiveEnv, Arc<FaultyStore>) {
        let slot = Arc::new(OnceLock::new());
        let set = slot.clone();
        let env = self
            .wrap_store(move |store| {
                let wrapper = Arc::new(FaultyStore::new(store, seed));
                let _ = set.set(wrapper.clone());
                wrapper
            })
            .start(backend)
            .await;
        let faulty = slot.get().expect("store wrapped").clone();
        (env, faulty)
    }
}

/// A test run as the tests see it.
#[derive(Debug, Clone)]
pub struct Run {
    pub id: String,
    pub sha: String,
    pub details: Value,
}

/// A gateway with a local Git host, its background work, and the repositories' directory.
pub struct LiveEnv {
    pub env: TestEnv,
    pub app: Arc<App>,
    pub host: LocalGitHost,
    pub clock: Arc<TestClock>,
    pub dir: tempfile::TempDir,
    /// The instances after the first ([`LiveOptions::instances`]).
    others: Vec<TestEnv>,
    tasks: Vec<JoinHandle<()>>,
}

impl Deref for LiveEnv {
    type Target = TestEnv;

    fn deref(&self) -> &TestEnv {
        &self.env
    }
}

impl Drop for LiveEnv {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl LiveEnv {
    /// The gateway with the status listener and the tick, without a CI command.
    pub async fn start(backend: Backend) -> Self {
        Self::start_with(backend, LiveOptions::default()).await
    }

    /// Options to start with: a CI command, a webhook secret.
    pub fn options() -> LiveOptions {
        LiveOptions::default()
    }

    async fn start_with(backend: Backend, options: LiveOptions) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("mq-live-")
            .tempdir()
            .expect("temporary directory");
        let mut host = LocalGitHost::new(dir.path().join("repos"));
        if let Some(command) = &options.ci_command {
            let log = dir.path().join(TESTED_BRANCHES);
            let noting = format!(
                "echo \"$MERGE_QUEUE_BRANCH\" >> '{}'; {command}",
                log.display()
            );
            host = host.with_ci(CiConfig::new(noting).with_concurrency(4));
        }
        let mut store = new_store(backend).await;
        if let Some(wrap) = &options.wrap_store {
            store = wrap(store);
        }
        let mut githost: Arc<dyn GitHost> = Arc::new(host.clone());
        if let Some(wrap) = &options.wrap_host {
            githost = wrap(githost);
        }
        let clock = Arc::new(TestClock::default());
        let new_app = || {
            let mut app = App::new(store.clone(), clock.clone()).with_githost(githost.clone());
            if let Some(secret) = &options.webhook_secret {
                app = app.with_webhook(WebhookReceiver::new(secret.as_bytes().to_vec(), HOST));
            }
            if let Some(work) = options.advice_work {
                app.advice_work = work;
            }
            Arc::new(app)
        };
        let app = new_app();
        let mut others = Vec::new();
        for _ in 1..options.instances {
            let app = new_app();
            others.push(TestEnv::serve(backend, store.clone(), app, clock.clone()).await);
        }
        let mut tasks = Vec::new();
        if let Some(every) = options.tick_every {
            tasks.push(spawn_tick(app.clone(), every));
        }
        if options.status_listener {
            tasks.push(spawn_status_listener(app.clone(), host.subscribe()));
        }
        let env =
            TestEnv::serve_with(backend, store, app.clone(), clock.clone(), options.timeouts).await;
        Self {
            env,
            app,
            host,
            clock,
            dir,
            others,
            tasks,
        }
    }

    /// Instance `n` of the application (modulo their number), each serving on its own
    /// gateway; instance 0 is the environment itself.
    pub fn instance(&self, n: usize) -> &TestEnv {
        match n % (self.others.len() + 1) {
            0 => &self.env,
            i => &self.others[i - 1],
        }
    }

    /// A new repository `acme/<name>` with a `main` branch.
    pub fn repo(&self, name: &str) -> GitRepo {
        self.repo_of(OWNER, name)
    }

    /// A new repository `<owner>/<name>` with a `main` branch.
    pub fn repo_of(&self, owner: &str, name: &str) -> GitRepo {
        GitRepo::create_of(
            &self.repos_dir(),
            &self.dir.path().join("work"),
            owner,
            name,
        )
    }

    pub fn repos_dir(&self) -> PathBuf {
        self.dir.path().join("repos")
    }

    /// The branches the CI command tested, in the order it started them.
    pub fn tested_branches(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join(TESTED_BRANCHES))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Creates the queue of `repo`'s `main` with `settings`.
    pub async fn create_queue(&self, repo: &GitRepo, settings: Value) -> Value {
        self.ok("createQueue", &body(repo, settings)).await
    }

    pub async fn update_queue(&self, repo: &GitRepo, settings: Value) -> Value {
        self.ok("updateQueue", &body(repo, settings)).await
    }

    pub async fn queue(&self, repo: &GitRepo) -> Value {
        self.ok("getQueue", &body(repo, json!({}))).await
    }

    /// Submits pull request `pr`, expecting 200.
    pub async fn submit(&self, repo: &GitRepo, pr: u32) -> Value {
        self.ok("submitPullRequest", &pr_body(repo, pr, json!({})))
            .await
    }

    /// Submits with extra fields (`priority`, `noBatch`), whatever the answer.
    pub async fn submit_with(&self, repo: &GitRepo, pr: u32, extra: Value) -> Reply {
        self.post("submitPullRequest", Some(ACME), &pr_body(repo, pr, extra))
            .await
    }

    /// `getSubmittedPullRequest`, expecting 200.
    pub async fn pull_request(&self, repo: &GitRepo, pr: u32) -> Value {
        self.ok("getSubmittedPullRequest", &pr_body(repo, pr, json!({})))
            .await
    }

    /// POSTs a pull request endpoint for `pr` as acme.
    pub async fn pr_call(&self, path: &str, repo: &GitRepo, pr: u32) -> Reply {
        self.post(path, Some(ACME), &pr_body(repo, pr, json!({})))
            .await
    }

    /// Uploads impacted targets (a list, or `"ALL"`) for `pr` at `sha`.
    pub async fn set_impacted_targets(
        &self,
        repo: &GitRepo,
        pr: u32,
        sha: &str,
        targets: Value,
    ) -> Reply {
        let mut body = body(repo, json!({ "impactedTargets": targets }));
        body["pr"] = json!({"number": pr, "sha": sha});
        self.post("setImpactedTargets", Some(ACME), &body).await
    }

    /// `getMergeQueueTestingDetails`, expecting 200.
    pub async fn details(&self, repo: &GitRepo, run_id: &str) -> Value {
        self.ok(
            "getMergeQueueTestingDetails",
            &body(repo, json!({ "testRunId": run_id })),
        )
        .await
    }

    /// Waits until `pr` is in `state` and returns its `getSubmittedPullRequest`; fails at once
    /// if it ends in another state.
    pub async fn wait_for_state(&self, repo: &GitRepo, pr: u32, state: &str) -> Value {
        let what = format!("#{pr} to be {state}");
        wait_for(&what, || async {
            let seen = self.pull_request(repo, pr).await;
            let now = seen["state"].as_str().unwrap_or_default();
            let terminal = ["merged", "failed", "cancelled"].contains(&now);
            assert!(
                now == state || !terminal,
                "#{pr} ended {now}, expected {state}: {seen}"
            );
            if now == state {
                Ok(seen)
            } else {
                Err(format!("{seen}; queue: {}", self.queue(repo).await))
            }
        })
        .await
    }

    /// The run testing `pr` now, once its branch exists.
    pub async fn wait_for_run(&self, repo: &GitRepo, pr: u32) -> Run {
        let what = format!("a test branch for #{pr}");
        wait_until(&what, || self.current_run(repo, pr)).await
    }

    /// Waits until `pr`'s testing has started: it is testing, or already past it (a quick CI
    /// may have passed it and the queue merged it before a poll saw its run in progress).
    pub async fn wait_for_testing_to_start(&self, repo: &GitRepo, pr: u32) -> Value {
        let what = format!("#{pr} to start testing");
        wait_for(&what, || async {
            let seen = self.pull_request(repo, pr).await;
            let waiting = ["not_ready", "pending"].contains(&seen["state"].as_str().unwrap_or(""));
            if waiting {
                Err(seen.to_string())
            } else {
                Ok(seen)
            }
        })
        .await
    }

    /// Waits for a run that tested `pr`, in progress or finished, and returns its id. With a
    /// quick CI, a run can finish and the queue delete its branch between two polls, so the
    /// branches the CI command tested are looked at too.
    pub async fn wait_for_tested_run(&self, repo: &GitRepo, pr: u32) -> String {
        let what = format!("a run that tested #{pr}");
        wait_until(&what, || async {
            let mut branches = repo.test_branches();
            branches.extend(self.tested_branches());
            for branch in branches {
                let id = branch.rsplit('/').next().unwrap_or_default();
                let query = body(repo, json!({ "testRunId": id }));
                // The CI command's log has every repository's branches: others are 404.
                let reply = self.post("getMergeQueueTestingDetails", Some(ACME), &query);
                let reply = reply.await;
                if reply.status == 200 && tests_pr(&reply.body, pr) {
                    return Some(id.to_owned());
                }
            }
            None
        })
        .await
    }

    /// The run in progress whose tested pull requests include `pr` and whose branch exists.
    pub async fn current_run(&self, repo: &GitRepo, pr: u32) -> Option<Run> {
        for branch in repo.test_branches() {
            let id = branch.rsplit('/').next().unwrap_or_default().to_owned();
            let details = self.details(repo, &id).await;
            let tests_pr = tests_pr(&details, pr);
            let sha = details["testBranchSha"].as_str().unwrap_or_default();
            if tests_pr && details["status"] == "in_progress" && !sha.is_empty() {
                return Some(Run {
                    id,
                    sha: sha.to_owned(),
                    details,
                });
            }
        }
        None
    }

    /// Reports `local-ci` as passed on the run testing `pr`, as CI would.
    pub async fn pass(&self, repo: &GitRepo, pr: u32) -> Run {
        let run = self.wait_for_run(repo, pr).await;
        self.set_status(repo, &run.sha, CI, StatusState::Success)
            .await;
        run
    }

    /// Sets a commit status through the Git host, as a CI system does.
    pub async fn set_status(&self, repo: &GitRepo, sha: &str, context: &str, state: StatusState) {
        let update = StatusUpdate {
            context: context.to_owned(),
            state,
            description: format!("{context} {}", state.as_str()),
            target_url: Some(format!("https://ci.example.com/{context}/{sha}")),
        };
        self.host
            .set_status(&repo_ref(repo), &Sha::new(sha), &update)
            .await
            .expect("status recorded");
    }

    /// The queue's comment on a pull request.
    pub async fn comment(&self, repo: &GitRepo, pr: u32) -> String {
        self.host
            .comment(&repo_ref(repo), pr)
            .await
            .expect("comment readable")
            .unwrap_or_default()
    }

    /// The queue's own status check (`merge-queue`) on a commit: its state and description.
    pub async fn queue_status(&self, repo: &GitRepo, sha: &str) -> Option<(StatusState, String)> {
        let checks = self
            .host
            .commit_checks(&repo_ref(repo), &Sha::new(sha))
            .await
            .expect("statuses readable");
        checks
            .statuses
            .into_iter()
            .find(|s| s.context == "merge-queue")
            .map(|s| (s.state, s.description))
    }

    /// The queue's reply to the comment command delivered in `delivery` (an `issue_comment`
    /// delivery), or `""`.
    pub async fn reply(&self, repo: &GitRepo, pr: u32, delivery: &Value) -> String {
        let id = delivery["comment"]["id"].as_u64().expect("a comment id");
        self.host
            .reply_posted(&repo_ref(repo), mq_githost::CommandComment { pr, id })
            .await
            .expect("reply readable")
            .unwrap_or_default()
    }

    /// Waits for the queue's reply to the comment command delivered in `delivery` to say
    /// `words`.
    pub async fn wait_for_reply(
        &self,
        repo: &GitRepo,
        pr: u32,
        delivery: &Value,
        words: &str,
    ) -> String {
        let what = format!("a reply on #{pr} saying \"{words}\"");
        wait_for(&what, || async {
            let reply = self.reply(repo, pr, delivery).await;
            if reply.contains(words) {
                Ok(reply)
            } else {
                Err(reply)
            }
        })
        .await
    }

    /// Waits until the queue's comment on `pr` says `words`.
    pub async fn wait_for_comment(&self, repo: &GitRepo, pr: u32, words: &str) -> String {
        let what = format!("a comment on #{pr} saying \"{words}\"");
        wait_for(&what, || async {
            let comment = self.comment(repo, pr).await;
            if comment.contains(words) {
                Ok(comment)
            } else {
                Err(comment)
            }
        })
        .await
    }

    /// Runs the tick over every queue with work, as the schedule does, until it worked on
    /// each (the background tick may hold a queue's lease for a moment).
    pub async fn tick(&self) {
        wait_until("a tick over every queue", || async {
            let report = tick::run(&self.app, "e2e").await.expect("tick runs");
            (report.worked == report.queues).then_some(())
        })
        .await
    }
}

/// Whether a run's testing details list `pr` among its tested pull requests.
fn tests_pr(details: &Value, pr: u32) -> bool {
    details["testedPullRequests"]
        .as_array()
        .is_some_and(|prs| prs.iter().any(|p| p["prNumber"] == pr))
}

/// Polls `look` until it returns something, for at most [`DEADLINE`].
pub async fn wait_until<T, F, Fut>(what: &str, mut look: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    wait_for(what, || {
        let fut = look();
        async move { fut.await.ok_or_else(String::new) }
    })
    .await
}

/// Polls `look` until it returns `Ok`, for at most [`DEADLINE`]; on timeout the test fails
/// with the last `Err` (what was seen instead).
pub async fn wait_for<T, F, Fut>(what: &str, mut look: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let started = Instant::now();
    loop {
        let seen = match look().await {
            Ok(found) => return found,
            Err(seen) => seen,
        };
        assert!(
            started.elapsed() < DEADLINE,
            "gave up waiting for {what} after {DEADLINE:?}; last seen: {seen}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// The repository of a test repository, as the API names it.
pub fn repo_ref(repo: &GitRepo) -> RepoRef {
    RepoRef::new(HOST, &repo.owner, &repo.name).expect("valid repository")
}

/// `{repo, targetBranch: "main"}` of `repo`, with `extra` fields.
pub fn body(repo: &GitRepo, extra: Value) -> Value {
    let mut body = crate::queue_body(&repo.name, extra);
    body["repo"]["owner"] = json!(repo.owner);
    body
}

/// [`body`] with `pr: {number}`.
pub fn pr_body(repo: &GitRepo, pr: u32, extra: Value) -> Value {
    let mut b = body(repo, extra);
    b["pr"] = json!({ "number": pr });
    b
}

/// Declares each scenario twice, over the in-memory store and over DynamoDB on moto; a
/// scenario is `async fn name(backend: Backend)`, and may carry attributes (`#[ignore]`).
#[macro_export]
macro_rules! live_on_both_stores {
    ($( $(#[$attr:meta])* $name:ident ),+ $(,)?) => {
        mod in_memory {
            $(
                $(#[$attr])*
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::Backend::Memory).await;
                }
            )+
        }
        mod dynamodb_on_moto {
            $(
                $(#[$attr])*
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::Backend::DynamoDb).await;
                }
            )+
        }
    };
}
