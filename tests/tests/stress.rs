//! Sixteen clients at once on three queues, over DynamoDB (moto) and real repositories: they
//! submit, cancel, restart, change settings, deliver signed GitHub statuses, check runs and
//! "pull request closed" events, and run the tick, in a random order decided by a seed. They
//! open with a burst: every client submits a pull request of its own to the first queue at
//! the same instant, through one gateway. Then the clients talk to [`INSTANCES`] instances of
//! the application (the same clients to the same instance), sharing only the store, as Lambda
//! runs concurrent requests on several instances, so their commits race each other at the
//! store. Then the queues are drained, and every promise must hold:
//!
//! - every answer is a documented status, and none is a 503: no fault is injected, so the
//!   version conflicts between the clients' requests are the service's to absorb;
//! - the engine's invariants hold on what the store holds, during the run and after it;
//! - every pull request whose submission was acknowledged concluded exactly once (merged,
//!   failed or cancelled), one never acknowledged was never submitted, and a merged one is in
//!   `main`'s history exactly once (the others not at all);
//! - `main` only ever moved to trees on which CI passed.
//!
//! Figures (requests by endpoint and status, version conflicts absorbed, durations) are printed:
//! `cargo test -p e2e-tests --test stress -- --nocapture`.

use e2e::deliveries::{check_run_on, deliver, pull_request_event, status_on};
use e2e::git_repo::GitRepo;
use e2e::live::{LiveEnv, body, pr_body, repo_ref};
use e2e::tally::Tally;
use e2e::{ACME, Backend, TestEnv};
use mq_core::engine::invariants;
use mq_core::ids::QueueId;
use mq_service::App;
use mq_service::tick;
use mq_store::FaultyStore;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Barrier;

const SECRET: &str = "stress-secret";
const SEED: u64 = 0x5eed_2026;

/// The clients' seed: [`SEED`], or `MQ_STRESS_SEED` to explore others.
fn seed() -> u64 {
    std::env::var("MQ_STRESS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(SEED)
}
const CLIENTS: u64 = 16;
/// Instances of the application the clients share after the burst. Moto serves one request
/// at a time, so every writer racing on a queue slows every other: with an instance per
/// client, a request can lose the race for longer than the 15 s a request keeps at it, where
/// DynamoDB serves the racing reads in parallel (BENCHMARKS.md, contended submissions).
const INSTANCES: usize = 2;
const PRS: u32 = 6;
/// Pull requests of the first queue: one per client for the opening burst, then [`PRS`] of
/// them in the clients' random requests.
const BURST_PRS: u32 = CLIENTS as u32;
/// Requests per client, and the time the clients may take at most.
const OPS_PER_CLIENT: usize = 12;
const CHAOS_LIMIT: Duration = Duration::from_secs(15);
const DRAIN_ROUNDS: usize = 120;
const BUILD: &str = "build";

/// What the clients learned: answers, acknowledged submissions, commits CI passed.
#[derive(Default)]
struct Ledger {
    tally: Tally,
    /// (queue index, pull request) whose submission got 200.
    submitted: Mutex<BTreeSet<(usize, u32)>>,
    /// (repository, commit) on which a `build` success was delivered and accepted.
    passed: Mutex<BTreeSet<(String, String)>>,
}

struct World {
    env: LiveEnv,
    repos: Vec<GitRepo>,
    ledger: Ledger,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_clients_on_three_queues_keep_every_promise() {
    let started = Instant::now();
    let (env, store) = LiveEnv::options()
        .webhook(SECRET)
        .without_tick()
        .instances(INSTANCES)
        .start_with_faulty_store(Backend::DynamoDb, 0)
        .await;
    let repos = make_queues(&env).await;
    let world = Arc::new(World {
        env,
        repos,
        ledger: Ledger::default(),
    });

    let chaos_started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = tokio::spawn(watch_invariants(world.clone(), store.clone(), stop.clone()));
    let burst = Arc::new(Barrier::new(CLIENTS as usize));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|n| tokio::spawn(client(world.clone(), n, burst.clone())))
        .collect();
    for c in clients {
        c.await.expect("client finished");
    }
    let chaos = chaos_started.elapsed();
    let chaos_requests = world.ledger.tally.total();
    let conflicts_during_chaos = store.counts().conflicts;
    stop.store(true, Ordering::SeqCst);
    let watched = watcher.await.expect("watcher finished");

    let drain_started = Instant::now();
    let rounds = drain(&world).await;
    let drain_time = drain_started.elapsed();

    let states = check_outcomes(&world, &store).await;
    let counts = store.counts();
    println!(
        "stress: {CLIENTS} clients, 3 queues, {BURST_PRS}, {PRS} and {PRS} pull requests, seed {}",
        seed()
    );
    println!(
        "clients: {chaos_requests} requests in {:.1} s; drain: {rounds} rounds in {:.1} s; \
         total {:.1} s",
        chaos.as_secs_f64(),
        drain_time.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    print!(
        "requests by endpoint and status (clients and drain):\n{}",
        world.ledger.tally.table()
    );
    println!(
        "version conflicts absorbed: {conflicts_during_chaos} during the clients' run, {} in all; \
         store calls: {}",
        counts.conflicts, counts.calls
    );
    println!("invariant checks while running: {watched} snapshots");
    println!("final states: {states:?}");
    let unexpected = world.ledger.tally.unexpected_answers();
    assert!(unexpected.is_empty(), "unexpected answers: {unexpected:#?}");
    assert_eq!(
        world.ledger.tally.with_status(503),
        0,
        "no fault was injected, yet some requests were refused with 503:\n{}",
        world.ledger.tally.table()
    );
    assert!(
        world.ledger.tally.with_status(200) > world.ledger.tally.total() / 2,
        "most requests succeed"
    );
}

/// Three queues with different settings, each on its own repository with its pull requests
/// ([`prs_of`]); CI is the `build` status, delivered by the clients.
async fn make_queues(env: &LiveEnv) -> Vec<GitRepo> {
    let settings = [
        json!({"requiredStatuses": [BUILD], "concurrency": 2}),
        json!({"requiredStatuses": [BUILD], "concurrency": 2, "batch": true,
               "batchingMinSize": 2, "batchingMaxWaitTimeMinutes": 1}),
        json!({"requiredStatuses": [BUILD], "concurrency": 3, "canOptimisticallyMerge": true,
               "pendingFailureDepth": 1}),
    ];
    let mut repos = Vec::new();
    for (i, s) in settings.into_iter().enumerate() {
        let repo = env.repo(&format!("stress{i}"));
        repo.add_prs(prs_of(i), &[]);
        env.create_queue(&repo, s).await;
        repos.push(repo);
    }
    repos
}

/// The pull requests of queue `q`.
fn prs_of(q: usize) -> u32 {
    if q == 0 { BURST_PRS } else { PRS }
}

/// CI's verdict on a commit: decided by the commit, so every delivery for it agrees; four in
/// five pass.
fn passes(sha: &str) -> bool {
    !u8::from_str_radix(&sha[..2], 16)
        .unwrap_or(0)
        .is_multiple_of(5)
}

/// One client: a submission to the first queue through the first instance when every
/// client is ready, then [`OPS_PER_CLIENT`] requests chosen by its seed, to its instance.
async fn client(world: Arc<World>, n: u64, burst: Arc<Barrier>) {
    let mut rng = fastrand::Rng::with_seed(seed() + n);
    burst.wait().await;
    let pr = u32::try_from(n).expect("a few clients") % BURST_PRS + 1;
    submit(&world, &world.env, 0, pr, &mut rng).await;
    let at = world.env.instance(n as usize % INSTANCES);
    let deadline = Instant::now() + CHAOS_LIMIT;
    for _ in 0..OPS_PER_CLIENT {
        if Instant::now() > deadline {
            return;
        }
        let q = rng.usize(0..world.repos.len());
        let pr = rng.u32(1..=PRS);
        match rng.u32(0..20) {
            0..=5 => submit(&world, at, q, pr, &mut rng).await,
            6..=7 => pr_call(&world, at, "cancelPullRequest", q, pr).await,
            8 => pr_call(&world, at, "restartTestsOnPullRequest", q, pr).await,
            9 => update(&world, at, q, &mut rng).await,
            10..=13 => ci_delivery(&world, at, q, &mut rng, "status").await,
            14 => ci_delivery(&world, at, q, &mut rng, "check_run").await,
            15 => closed(&world, at, q, pr).await,
            16..=17 => run_tick(&world, &at.app, &format!("client-{n}")).await,
            _ => read_queue(&world, at, q).await,
        }
    }
}

async fn submit(world: &World, at: &TestEnv, q: usize, pr: u32, rng: &mut fastrand::Rng) {
    let priority = ["low", "medium", "high", "medium", "urgent"][rng.usize(0..5)];
    let extra = json!({"priority": priority, "noBatch": rng.u32(0..4) == 0});
    let reply = at
        .post(
            "submitPullRequest",
            Some(ACME),
            &pr_body(&world.repos[q], pr, extra),
        )
        .await;
    world.ledger.tally.record("submitPullRequest", &reply);
    if reply.status == 200 {
        lock(&world.ledger.submitted).insert((q, pr));
    }
}

async fn pr_call(world: &World, at: &TestEnv, path: &str, q: usize, pr: u32) {
    let reply = at
        .post(path, Some(ACME), &pr_body(&world.repos[q], pr, json!({})))
        .await;
    world.ledger.tally.record(path, &reply);
}

async fn update(world: &World, at: &TestEnv, q: usize, rng: &mut fastrand::Rng) {
    let settings = match rng.u32(0..4) {
        0 => json!({"state": "paused"}),
        1 => json!({"state": "running"}),
        _ => json!({"concurrency": rng.u32(1..=3)}),
    };
    let reply = at
        .post("updateQueue", Some(ACME), &body(&world.repos[q], settings))
        .await;
    world.ledger.tally.record("updateQueue", &reply);
}

/// Delivers CI's verdict on the tip of one of the queue's test branches.
async fn ci_delivery(world: &World, at: &TestEnv, q: usize, rng: &mut fastrand::Rng, event: &str) {
    let repo = &world.repos[q];
    let branches = repo.test_branches();
    if branches.is_empty() {
        return;
    }
    let branch = &branches[rng.usize(0..branches.len())];
    if let Some(sha) = repo.head(branch) {
        deliver_verdict(world, at, repo, branch, &sha, event).await;
    }
}

async fn deliver_verdict(
    world: &World,
    at: &TestEnv,
    repo: &GitRepo,
    branch: &str,
    sha: &str,
    event: &str,
) {
    let pass = passes(sha);
    let payload = if event == "status" {
        status_on(
            repo,
            sha,
            branch,
            BUILD,
            if pass { "success" } else { "failure" },
        )
    } else {
        check_run_on(
            repo,
            sha,
            branch,
            BUILD,
            if pass { "success" } else { "failure" },
        )
    };
    let reply = deliver(at, event, &payload, SECRET).await;
    world
        .ledger
        .tally
        .record(&format!("webhook {event}"), &reply);
    if pass && reply.status == 200 {
        lock(&world.ledger.passed).insert((repo.name.clone(), sha.to_owned()));
    }
}

/// Pull request `pr` is closed on the host, and GitHub tells of it.
async fn closed(world: &World, at: &TestEnv, q: usize, pr: u32) {
    world.repos[q].set_pr_state(pr, "closed");
    let payload = pull_request_event(&world.repos[q], pr, "closed");
    let reply = deliver(at, "pull_request", &payload, SECRET).await;
    world.ledger.tally.record("webhook pull_request", &reply);
}

async fn run_tick(world: &World, app: &App, owner: &str) {
    match tick::run(app, owner).await {
        Ok(report) => {
            world.ledger.tally.count("tick", 200);
            if report.failed > 0 {
                world.ledger.tally.count("tick (a queue failed)", 503);
            }
        }
        Err(e) => {
            let status = mq_http::ApiError::from(e.clone()).status.as_u16();
            world.ledger.tally.count("tick", status);
            if status != 503 {
                world.ledger.tally.unexpected(format!("tick: {e}"));
            }
        }
    }
}

/// `getQueue`: every pull request is listed at most once.
async fn read_queue(world: &World, at: &TestEnv, q: usize) {
    let reply = at
        .post("getQueue", Some(ACME), &body(&world.repos[q], json!({})))
        .await;
    world.ledger.tally.record("getQueue", &reply);
    if reply.status == 200 {
        let listed = pr_numbers(&reply.body);
        let distinct: BTreeSet<u64> = listed.iter().copied().collect();
        if distinct.len() != listed.len() {
            world
                .ledger
                .tally
                .unexpected(format!("getQueue lists a pull request twice: {listed:?}"));
        }
    }
}

fn pr_numbers(queue: &Value) -> Vec<u64> {
    queue["enqueuedPullRequests"]
        .as_array()
        .map(|prs| prs.iter().filter_map(|p| p["prNumber"].as_u64()).collect())
        .unwrap_or_default()
}

fn queue_id(repo: &GitRepo) -> QueueId {
    QueueId::new(&repo_ref(repo), "main")
}

/// Checks the invariants on every queue as stored, until told to stop; returns how many
/// snapshots it checked.
async fn watch_invariants(
    world: Arc<World>,
    store: Arc<FaultyStore>,
    stop: Arc<AtomicBool>,
) -> u64 {
    let mut checked = 0;
    while !stop.load(Ordering::SeqCst) {
        for repo in &world.repos {
            if let Ok(Some(snapshot)) = store.inner().load(&queue_id(repo)).await {
                let broken = invariants::violations(&snapshot);
                assert!(broken.is_empty(), "{}: {broken:?}", repo.name);
                checked += 1;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    checked
}

/// Resumes every queue and lets CI answer, the tick run and time pass until no pull request
/// is active; returns the rounds it took.
async fn drain(world: &World) -> usize {
    for repo in &world.repos {
        let running = json!({"state": "running"});
        let reply = world
            .env
            .post("updateQueue", Some(ACME), &body(repo, running))
            .await;
        assert_eq!(reply.status, 200, "{}", reply.body);
    }
    for round in 1..=DRAIN_ROUNDS {
        let mut active = 0;
        for repo in &world.repos {
            for branch in repo.test_branches() {
                if let Some(sha) = repo.head(&branch) {
                    deliver_verdict(world, &world.env, repo, &branch, &sha, "status").await;
                }
            }
            active += pr_numbers(&world.env.queue(repo).await).len();
        }
        if active == 0 {
            return round;
        }
        world.env.clock.advance_minutes(2);
        run_tick(world, &world.env.app, "drain").await;
    }
    let left: Vec<Value> = {
        let mut left = Vec::new();
        for repo in &world.repos {
            left.push(world.env.queue(repo).await["enqueuedPullRequests"].clone());
        }
        left
    };
    panic!("the queues did not drain in {DRAIN_ROUNDS} rounds: {left:?}");
}

/// The checks after the drain; returns how many pull requests ended in each state.
async fn check_outcomes(world: &World, store: &FaultyStore) -> BTreeMap<String, u32> {
    let submitted = lock(&world.ledger.submitted).clone();
    let passed = lock(&world.ledger.passed).clone();
    let mut states = BTreeMap::new();
    for (q, repo) in world.repos.iter().enumerate() {
        let snapshot = store
            .inner()
            .load(&queue_id(repo))
            .await
            .expect("readable")
            .expect("queue exists");
        assert_eq!(invariants::violations(&snapshot), Vec::<String>::new());
        assert!(snapshot.entries.is_empty(), "{}: drained", repo.name);
        let passed_trees: BTreeSet<String> = passed
            .iter()
            .filter(|(name, _)| *name == repo.name)
            .map(|(_, sha)| repo.tree(sha))
            .collect();
        let history = repo.history_subjects("main");
        for pr in 1..=prs_of(q) {
            let reply = world.env.pr_call("getSubmittedPullRequest", repo, pr).await;
            let in_main = history
                .iter()
                .filter(|s| **s == format!("Change {pr} (#{pr})"))
                .count();
            if !submitted.contains(&(q, pr)) {
                assert_eq!(
                    reply.status, 404,
                    "#{pr} of {} was never acknowledged",
                    repo.name
                );
                assert_eq!(in_main, 0);
                continue;
            }
            assert_eq!(reply.status, 200, "{}", reply.body);
            let state = reply.body["state"].as_str().unwrap_or_default().to_owned();
            assert!(
                ["merged", "failed", "cancelled"].contains(&state.as_str()),
                "#{pr} of {} ended {state}",
                repo.name
            );
            let merged = usize::from(state == "merged");
            if in_main != merged {
                let latest = store.inner().load_entry(&queue_id(repo), pr).await;
                panic!(
                    "#{pr} of {} is {state}, in main {in_main} times: {history:?}; its latest \
                     entry: {latest:#?}",
                    repo.name
                );
            }
            *states.entry(state).or_default() += 1;
        }
        for commit in repo.moves("main") {
            assert!(
                passed_trees.contains(&repo.tree(&commit)),
                "{}: main moved to {commit}, whose tree CI never passed",
                repo.name
            );
        }
    }
    states
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
