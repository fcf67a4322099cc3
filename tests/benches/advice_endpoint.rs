//! How long getQueueAdvice takes end to end on a busy queue's week of history, on the
//! in-memory store.
//!
//! `cargo bench -p e2e-tests --bench advice_endpoint` simulates a week of a busy queue (1,500
//! pull requests at 9 an hour, CI 30 min ±20%, 5% broken, 3% flaky runs, 2% conflicting;
//! optimistic merge), twice: at concurrency 8, which keeps up, and at concurrency 4, which
//! falls behind. Each history is written into a fresh store as commits would write it, the
//! last item a minute before the clock's time, and the handler is called as the Lambda
//! runtime would call it (a `lambda_http::Request` in, a response out), with the default
//! budget: five times for the most merges, twice for each of the other two goals. It prints,
//! per goal, the wall time (fastest, median, slowest), the window, and the advice with the
//! evaluations and simulated pull requests behind it. Every call of a goal must give the same
//! answer, byte for byte: it panics otherwise. Then the same work in parts, three times: the
//! history read from the store (with what it held), the estimates, the advisor (with the
//! work it spent).
//!
//! DynamoDB on moto is left out: moto copies a whole table for every action of a
//! transaction, so writing a week of history commit by commit takes longer the more is
//! written (8 s for a commit of 50 to 80 entries once 430 were written, and gigabytes of
//! memory), and its reads would measure moto, not DynamoDB.

use e2e::register_organisations;
use e2e::requests::post;
use mq_advisor::{Budget, Goal, Past};
use mq_core::entry::Entry;
use mq_core::history::Restart;
use mq_core::ids::{OrgId, QueueId, RepoRef};
use mq_core::run::TestRun;
use mq_core::settings::{QueueConfig, QueueState};
use mq_core::snapshot::{Commit, LiveChanges, Queue};
use mq_core::time::Timestamp;
use mq_core::tuning::WINDOW_MS;
use mq_http::routes::route;
use mq_service::{App, ManualClock};
use mq_simulation::workload::{Arrivals, Workload};
use mq_simulation::{Options, Trace, scenarios, simulate};
use mq_store::{MemoryStore, Store};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The clock's time during the calls.
const NOW: Timestamp = Timestamp(1_795_000_000_000);
/// History items (concluded entries, finished runs or restarts) per commit written.
const CHUNK: usize = 100;
/// The CI budget of `fastestWithinBudget`, in runs per hour.
const CI_RUNS_PER_HOUR: f64 = 6.0;
/// Times the work is timed in parts.
const SPLITS: usize = 3;
/// The queue's concurrency in each history: one that keeps up, one that falls behind.
const CONCURRENCIES: [u32; 2] = [8, 4];

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    println!("load average at the start: {}", load_average());
    for concurrency in CONCURRENCIES {
        let simulated = Instant::now();
        let (trace, config) = busy_week(concurrency);
        println!(
            "\nconcurrency {concurrency}: {} concluded entries, {} finished runs, {} restarts \
             over {:.1} h (simulated in {:.1} s)",
            trace.kept.concluded.len(),
            trace.kept.finished_runs.len(),
            trace.kept.restarts.len(),
            trace.end_ms as f64 / 3_600_000.0,
            simulated.elapsed().as_secs_f64(),
        );
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        register_organisations(store.as_ref()).await;
        let written = Instant::now();
        write_history(store.as_ref(), &trace, config).await;
        println!(
            "history written in {:.2} s",
            written.elapsed().as_secs_f64()
        );
        let app = App::new(store, Arc::new(ManualClock::new(NOW)));
        for (name, goal, calls) in goals() {
            time_goal(&app, &name, &goal, calls).await;
        }
        time_parts(&app).await;
    }
    println!("\nload average at the end: {}", load_average());
}

/// The goals asked for: their names, the request's fields, and the calls made.
fn goals() -> [(String, Value, usize); 3] {
    [
        ("most merges".into(), json!({"goal": "mostMerges"}), 5),
        ("fewest CI runs".into(), json!({"goal": "fewestCiRuns"}), 2),
        (
            format!("fastest within {CI_RUNS_PER_HOUR} CI runs/h"),
            json!({"goal": "fastestWithinBudget", "ciRunsPerHour": CI_RUNS_PER_HOUR}),
            2,
        ),
    ]
}

/// A busy queue's week at `concurrency`, as the simulator runs it: its trace and the
/// queue's settings.
fn busy_week(concurrency: u32) -> (Trace, QueueConfig) {
    let workload = Workload {
        prs: 1_500,
        arrivals: Arrivals::PerHour(9.0),
        ci_minutes: 30.0,
        ci_jitter: 0.2,
        failure_rate: 0.05,
        flake_rate: 0.03,
        conflict_rate: 0.02,
        ci_quantiles: None,
        exact_shares: false,
        targets: 1,
        seed: 7,
    };
    let settings = scenarios::predictive(concurrency, 1).settings;
    let options = Options {
        trace: true,
        ..Options::default()
    };
    let trace = simulate(&workload, &settings, options)
        .trace
        .expect("a trace");
    let config = settings.initial_config().expect("valid settings").0;
    (trace, config)
}

/// The simulator's queue (github.com/acme/rocket, `main`), which acme owns.
fn queue_id() -> QueueId {
    QueueId::new(
        &RepoRef::new("github.com", "acme", "rocket").unwrap(),
        "main",
    )
}

/// Writes `trace` as the history of a queue created with `config` when the simulation
/// started, every time shifted so that the trace ends a minute before [`NOW`]: commits of
/// [`CHUNK`] concluded entries, then of finished runs, then of restarts, each one version on.
async fn write_history(store: &dyn Store, trace: &Trace, config: QueueConfig) {
    let shift = NOW.millis() - 60_000 - trace.end_ms;
    let mut queue = Queue::new(
        OrgId::parse("acme").unwrap(),
        RepoRef::new("github.com", "acme", "rocket").unwrap(),
        "main".into(),
        config,
        QueueState::Running,
        Timestamp(shift),
    );
    assert_eq!(queue.id, queue_id());
    store.create_queue(&queue).await.expect("queue created");
    for chunk in trace.kept.concluded.chunks(CHUNK) {
        let concluded = chunk.iter().map(|e| shifted_entry(e, shift)).collect();
        commit(store, &mut queue, concluded, Vec::new(), Vec::new()).await;
    }
    for chunk in trace.kept.finished_runs.chunks(CHUNK) {
        let runs = chunk.iter().map(|r| shifted_run(r, shift)).collect();
        commit(store, &mut queue, Vec::new(), runs, Vec::new()).await;
    }
    for chunk in trace.kept.restarts.chunks(CHUNK) {
        let restarts = chunk.iter().map(|r| shifted_restart(r, shift)).collect();
        commit(store, &mut queue, Vec::new(), Vec::new(), restarts).await;
    }
}

/// Commits history only: the queue one version on, nothing live.
async fn commit(
    store: &dyn Store,
    queue: &mut Queue,
    concluded: Vec<Entry>,
    finished_runs: Vec<TestRun>,
    restarts: Vec<Restart>,
) {
    let expected_version = queue.version;
    queue.version += 1;
    queue.updated_at = NOW.plus_millis(-60_000);
    let commit = Commit {
        queue: queue.clone(),
        expected_version,
        live: LiveChanges::default(),
        concluded,
        finished_runs,
        restarts,
        active_entries: 0,
        has_work: false,
        uploaded_targets: Vec::new(),
    };
    store.commit(&commit).await.expect("history committed");
}

/// `e` with every time `by` milliseconds later.
fn shifted_entry(e: &Entry, by: i64) -> Entry {
    let at = |t: Timestamp| t.plus_millis(by);
    let mut e = e.clone();
    e.state_changed_at = at(e.state_changed_at);
    e.submitted_at = at(e.submitted_at);
    e.ready_at = e.ready_at.map(at);
    e.first_tested_at = e.first_tested_at.map(at);
    e.concluded_at = e.concluded_at.map(at);
    if let Some(impacted) = &mut e.impacted {
        impacted.uploaded_at = at(impacted.uploaded_at);
    }
    e
}

/// `r` with every time `by` milliseconds later.
fn shifted_run(r: &TestRun, by: i64) -> TestRun {
    let at = |t: Timestamp| t.plus_millis(by);
    let mut r = r.clone();
    r.created_at = at(r.created_at);
    r.started_at = r.started_at.map(at);
    r.finished_at = r.finished_at.map(at);
    for status in &mut r.statuses {
        status.updated_at = at(status.updated_at);
    }
    for check in &mut r.check_runs {
        check.updated_at = at(check.updated_at);
    }
    r
}

/// `r` at a time `by` milliseconds later.
fn shifted_restart(r: &Restart, by: i64) -> Restart {
    Restart {
        at: r.at.plus_millis(by),
        ..r.clone()
    }
}

/// Calls getQueueAdvice `calls` times for one goal; prints the times and the answer, and
/// panics unless every answer is the same.
async fn time_goal(app: &App, name: &str, goal: &Value, calls: usize) {
    let mut body = json!({
        "repo": {"host": "github.com", "owner": "acme", "name": "rocket"},
        "targetBranch": "main",
    });
    if let (Some(b), Some(g)) = (body.as_object_mut(), goal.as_object()) {
        b.extend(g.clone());
    }
    let mut times = Vec::with_capacity(calls);
    let mut answers = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        answers.push(call(app, &body).await);
        times.push(started.elapsed());
    }
    assert!(
        answers.iter().all(|a| a == &answers[0]),
        "{name}: the same request gave different answers"
    );
    let answer: Value = serde_json::from_slice(&answers[0]).expect("a JSON answer");
    println!(
        "getQueueAdvice, {name}: {} calls, {}; {}; the same answer every call",
        times.len(),
        spread(&mut times),
        summary(&answer),
    );
}

/// The answer's body; panics unless it is a 200.
async fn call(app: &App, body: &Value) -> Vec<u8> {
    let route = route("getQueueAdvice").expect("the route");
    let response = route.serve(app, post(body)).await;
    let bytes = response.body().as_ref().to_vec();
    assert_eq!(
        response.status(),
        200,
        "{}",
        String::from_utf8_lossy(&bytes)
    );
    bytes
}

/// The window, and the advice (its settings, projection, evaluations and simulated pull
/// requests) or why there is none.
fn summary(answer: &Value) -> String {
    let window = &answer["window"];
    let window = format!(
        "window {:.1} h{}",
        window["hours"].as_f64().unwrap_or_default(),
        if window["shortened"] == true {
            " (shortened)"
        } else {
            ""
        },
    );
    let advice = &answer["advice"];
    if advice.is_null() {
        return format!("{window}; no advice: {}", answer["noAdvice"]["message"]);
    }
    let best = &advice["best"]["projection"];
    let number = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    format!(
        "{window}; advice: {} ({}): {:.2} merges/h, {:.1} min mean to merge, {:.2} CI runs per \
         merge, {:.1} per hour; {} evaluations, {} simulated PRs",
        advice["summary"].as_str().unwrap_or_default(),
        if advice["changesSettings"] == true {
            "a change"
        } else {
            "the current settings"
        },
        number(&best["mergesPerHour"]),
        number(&best["meanMinutesToMerge"]),
        number(&best["ciRunsPerMerge"]),
        number(&best["ciRunsPerHour"]),
        advice["evaluations"],
        advice["simulatedPrs"],
    )
}

/// The call's work for the most merges in parts, [`SPLITS`] times: the history read as the
/// service reads it, the estimates, and the advisor with the application's budget.
async fn time_parts(app: &App) {
    let snapshot = app
        .store
        .load(&queue_id())
        .await
        .expect("read")
        .expect("the queue");
    let budget = Budget {
        work: app.advice_work,
        ..Budget::default()
    };
    let (mut reads, mut estimates, mut advice) = (Vec::new(), Vec::new(), Vec::new());
    let (mut held, mut work) = (String::new(), 0);
    for _ in 0..SPLITS {
        let started = Instant::now();
        let history = read_history(app).await;
        reads.push(started.elapsed());
        held = format!(
            "{} conclusions, {} finished runs, {} restarts",
            history.kept.concluded.len(),
            history.kept.finished_runs.len(),
            history.kept.restarts.len()
        );
        let started = Instant::now();
        let estimated = mq_advisor::estimate(&history);
        estimates.push(started.elapsed());
        let started = Instant::now();
        work = mq_advisor::advise(&estimated, &snapshot.queue.config, Goal::MostMerges, budget)
            .expect("advice")
            .work;
        advice.push(started.elapsed());
    }
    println!("  in parts ({SPLITS} times each), most merges:");
    println!("  history read ({held}): {}", spread(&mut reads));
    println!("  estimates: {}", spread(&mut estimates));
    println!(
        "  advisor ({work} units of work, budget {}): {}",
        budget.work,
        spread(&mut advice)
    );
}

/// The queue's history over the last [`WINDOW_MS`], read from the store as getQueueAdvice
/// reads it (the window is never shortened here: it holds fewer than
/// [`MAX_HISTORY_ITEMS`](mq_service::advice::MAX_HISTORY_ITEMS)).
async fn read_history(app: &App) -> Past {
    let snapshot = app
        .store
        .load(&queue_id())
        .await
        .expect("read")
        .expect("the queue");
    let loaded = mq_service::advice::load_history(app, &snapshot, WINDOW_MS, app.now())
        .await
        .expect("history");
    assert!(!loaded.shortened);
    loaded.past
}

/// Fastest, median and slowest of `times`.
fn spread(times: &mut [Duration]) -> String {
    times.sort();
    let s = |d: Duration| d.as_secs_f64();
    format!(
        "fastest {:.3} s, median {:.3} s, slowest {:.3} s",
        s(times[0]),
        s(times[times.len() / 2]),
        s(times[times.len() - 1]),
    )
}

/// The system's load averages over 1, 5 and 15 minutes.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}
