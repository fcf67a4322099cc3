//! Submissions into one queue by 1, 8 and 32 concurrent clients, over HTTP with the local Git
//! host (real `git`), on the in-memory store, on the in-memory store behind a delay of
//! [`DELAY`] per call (every call waits side by side, as across a network: a model of a
//! store that answers in milliseconds and serves calls in parallel, as DynamoDB does; not a
//! measurement of DynamoDB), and on DynamoDB (moto). Each client submits its
//! share of [`SUBMISSIONS`] different pull requests one after the other, all clients starting
//! together. Two shapes:
//!
//! - the local gateway: one process serves every client;
//! - one instance per client, as Lambda runs concurrent requests: each client talks to a
//!   gateway of its own (its own application) over the same store and Git host, so the
//!   instances' commits race each other at the store.
//!
//! Printed per store, shape and level: submissions accepted per second, the latency of a
//! submission (p50, p99, slowest), the answers by status, and on DynamoDB the requests sent
//! per accepted submission, by operation (every attempt the SDK sent, token lookups and
//! effect rounds included).
//!
//! Each row on DynamoDB gets a moto server of its own: moto copies every table it holds at
//! each transaction (to roll it back on failure), so a server that kept the earlier rows'
//! tables would slow the later rows down.
//!
//! `cargo bench -p e2e-tests --bench contended_submissions`; `SUBMISSIONS=n` changes the
//! number of pull requests per row, `LEVELS=1,8` the levels, `STORES=memory,delayed,dynamodb`
//! the stores, `SHAPES=gateway` or `SHAPES=instances` one shape.

use e2e::git_repo::GitRepo;
use e2e::live::{body, pr_body};
use e2e::requests::{RequestLog, logged_store_at};
use e2e::{ACME, Backend, TestClock, TestEnv, new_store};
use mq_githost::local::LocalGitHost;
use mq_service::App;
use mq_store::FaultyStore;
use mq_store::Store;
use mq_tables::moto::MotoServer;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Barrier;

/// Pull requests submitted per level (each once).
const SUBMISSIONS: u32 = 96;
const LEVELS: [u32; 3] = [1, 8, 32];
/// The delay of every call to the delayed in-memory store.
const DELAY: Duration = Duration::from_millis(10);

#[tokio::main]
async fn main() {
    let submissions = setting("SUBMISSIONS").map_or(SUBMISSIONS, |s| s[0]);
    let levels = setting("LEVELS").unwrap_or_else(|| LEVELS.to_vec());
    let dir = tempfile::Builder::new()
        .prefix("mq-contended-")
        .tempdir()
        .expect("temporary directory");
    let repos_dir = dir.path().join("repos");
    let mut rows = Vec::new();
    for shape in shapes() {
        for &clients in &levels {
            if shape == Shape::Instances && clients == 1 {
                continue; // the same as one gateway
            }
            let name = format!("burst-{}-{clients}", shape.name());
            let repo = GitRepo::create(&repos_dir, &dir.path().join("work"), &name);
            repo.add_prs(submissions, &[]);
            rows.push((shape, clients, repo));
        }
    }
    for kind in stores() {
        for (shape, clients, repo) in &rows {
            let instances = match shape {
                Shape::Gateway => 1,
                Shape::Instances => *clients,
            };
            let env = Env::start(kind, &repos_dir, instances).await;
            let run = env.run(repo, *clients, submissions).await;
            println!("{}", run.line(kind, *shape, *clients));
        }
    }
}

/// Who serves the clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// One local gateway.
    Gateway,
    /// A gateway (an application) per client.
    Instances,
}

impl Shape {
    fn name(self) -> &'static str {
        match self {
            Self::Gateway => "gateway",
            Self::Instances => "instances",
        }
    }
}

/// The shapes `SHAPES` names (`gateway`, `instances`), by default both.
fn shapes() -> Vec<Shape> {
    let names = std::env::var("SHAPES").unwrap_or_else(|_| "gateway,instances".to_owned());
    names
        .split(',')
        .map(|name| match name.trim() {
            "gateway" => Shape::Gateway,
            "instances" => Shape::Instances,
            other => panic!("SHAPES: unknown shape {other}"),
        })
        .collect()
}

/// A store the clients' submissions go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Memory,
    /// The in-memory store behind [`DELAY`] per call.
    Delayed,
    /// DynamoDB on a moto server of its own.
    Moto,
}

/// The stores `STORES` names (`memory`, `delayed`, `dynamodb`), by default all three.
fn stores() -> Vec<Kind> {
    let names = std::env::var("STORES").unwrap_or_else(|_| "memory,delayed,dynamodb".to_owned());
    names
        .split(',')
        .map(|name| match name.trim() {
            "memory" => Kind::Memory,
            "delayed" => Kind::Delayed,
            "dynamodb" => Kind::Moto,
            other => panic!("STORES: unknown store {other}"),
        })
        .collect()
}

/// A comma-separated list of numbers from the environment.
fn setting(name: &str) -> Option<Vec<u32>> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .split(',')
            .map(|n| n.trim().parse().expect("a number"))
            .collect(),
    )
}

/// Gateways over one fresh store and the local Git host, the log of the store's DynamoDB
/// requests and its moto server (on DynamoDB).
struct Env {
    instances: Vec<Arc<TestEnv>>,
    log: Option<RequestLog>,
    _moto: Option<MotoServer>,
}

impl Env {
    async fn start(kind: Kind, repos: &Path, instances: u32) -> Self {
        let (store, log, moto): (Arc<dyn Store>, _, _) = match kind {
            Kind::Memory => (new_store(Backend::Memory).await, None, None),
            Kind::Delayed => {
                let delayed = FaultyStore::new(new_store(Backend::Memory).await, 0);
                delayed.set_latency(DELAY, DELAY);
                (Arc::new(delayed), None, None)
            }
            Kind::Moto => {
                let moto = MotoServer::start().expect("moto starts");
                let (store, log, _) = logged_store_at(&moto.endpoint).await;
                (store, Some(log), Some(moto))
            }
        };
        let backend = match kind {
            Kind::Moto => Backend::DynamoDb,
            Kind::Memory | Kind::Delayed => Backend::Memory,
        };
        let host = Arc::new(LocalGitHost::new(repos.to_path_buf()));
        let clock = Arc::new(TestClock::default());
        let mut gateways = Vec::new();
        for _ in 0..instances {
            let app = App::new(store.clone(), clock.clone()).with_githost(host.clone());
            let env = TestEnv::serve(backend, store.clone(), Arc::new(app), clock.clone()).await;
            gateways.push(Arc::new(env));
        }
        Self {
            instances: gateways,
            log,
            _moto: moto,
        }
    }

    /// Creates the queue of `repo`, then `clients` clients submit its pull requests 1 to
    /// `submissions`.
    async fn run(&self, repo: &GitRepo, clients: u32, submissions: u32) -> Run {
        let settings = json!({"requiredStatuses": ["build"]});
        self.instances[0]
            .ok("createQueue", &body(repo, settings))
            .await;
        if let Some(log) = &self.log {
            log.take();
        }
        let barrier = Arc::new(Barrier::new(clients as usize));
        let started = Instant::now();
        let tasks: Vec<_> = (0..clients)
            .map(|c| {
                let prs: Vec<u32> = (1..=submissions).filter(|n| n % clients == c).collect();
                let bodies: Vec<_> = prs.iter().map(|&n| pr_body(repo, n, json!({}))).collect();
                let env = self.instances[c as usize % self.instances.len()].clone();
                let barrier = barrier.clone();
                tokio::spawn(async move {
                    barrier.wait().await;
                    let mut answers = Vec::new();
                    for body in bodies {
                        let at = Instant::now();
                        let reply = env.post("submitPullRequest", Some(ACME), &body).await;
                        answers.push((reply.status, at.elapsed()));
                    }
                    answers
                })
            })
            .collect();
        let mut answers = Vec::new();
        for task in tasks {
            answers.extend(task.await.expect("client finished"));
        }
        let elapsed = started.elapsed();
        let sent = self.log.as_ref().map(RequestLog::take).unwrap_or_default();
        let mut requests: BTreeMap<String, usize> = BTreeMap::new();
        for s in sent {
            *requests.entry(s.operation).or_default() += 1;
        }
        Run {
            answers,
            elapsed,
            requests,
        }
    }
}

/// What one level measured.
struct Run {
    /// Status and latency of every submission.
    answers: Vec<(u16, Duration)>,
    elapsed: Duration,
    /// DynamoDB requests by operation (empty on the in-memory store).
    requests: BTreeMap<String, usize>,
}

impl Run {
    fn line(&self, kind: Kind, shape: Shape, clients: u32) -> String {
        let accepted = self.answers.iter().filter(|(s, _)| *s == 200).count();
        let mut statuses: BTreeMap<u16, usize> = BTreeMap::new();
        for (s, _) in &self.answers {
            *statuses.entry(*s).or_default() += 1;
        }
        let statuses: Vec<String> = statuses.iter().map(|(s, n)| format!("{s}×{n}")).collect();
        let mut latencies: Vec<Duration> = self.answers.iter().map(|(_, d)| *d).collect();
        latencies.sort_unstable();
        let store = match kind {
            Kind::Memory => "in-memory store".to_owned(),
            Kind::Delayed => format!("in-memory store, {} ms per call", DELAY.as_millis()),
            Kind::Moto => "DynamoDB (moto)".to_owned(),
        };
        let served = match shape {
            Shape::Gateway => "one gateway",
            Shape::Instances => "an instance each",
        };
        let mut line = format!(
            "{store}, {clients:>2} clients, {served}: {} submissions in {:.2} s, {:.1} accepted/s; \
             latency p50 {:.1} ms, p99 {:.1} ms, slowest {:.1} ms; answers {}",
            self.answers.len(),
            self.elapsed.as_secs_f64(),
            accepted as f64 / self.elapsed.as_secs_f64(),
            ms(percentile(&latencies, 0.50)),
            ms(percentile(&latencies, 0.99)),
            ms(latencies.last().copied().unwrap_or_default()),
            statuses.join(" ")
        );
        if !self.requests.is_empty() && accepted > 0 {
            let total: usize = self.requests.values().sum();
            let each: Vec<String> = self
                .requests
                .iter()
                .map(|(op, n)| format!("{op} {:.2}", *n as f64 / accepted as f64))
                .collect();
            line.push_str(&format!(
                "\n    DynamoDB requests per accepted submission: {:.2} ({})",
                total as f64 / accepted as f64,
                each.join(", ")
            ));
        }
        line
    }
}

/// The latency below which a `share` of the sorted `latencies` fall (nearest rank).
fn percentile(latencies: &[Duration], share: f64) -> Duration {
    if latencies.is_empty() {
        return Duration::ZERO;
    }
    let rank = (share * latencies.len() as f64).ceil() as usize;
    latencies[rank.clamp(1, latencies.len()) - 1]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
