//! The settings matrix's machinery (`tests/settings_matrix.rs`, `tests/slow_world.rs`): a row
//! is one queue's settings; running it makes a repository with a dozen pull requests, submits
//! them over HTTP to the local gateway, waits until every one concluded and checks, from
//! outside the queue, what the target branch went through:
//!
//! - #3 breaks the build alone (it adds `BROKEN`);
//! - #5 and #7 each pass alone but break it together (`pair-a` and `pair-b`): only testing
//!   each pull request on top of the ones ahead catches it;
//! - #8 and #10 change the same line of `shared.txt`: a textual conflict;
//! - the others are good.
//!
//! A `reference-transaction` hook in the bare repository records every value the target
//! takes, and the CI command records the commit, tree and verdict of everything it tests.
//! Every value the target takes must be a commit CI passed (`merge_commit`) or have a tree CI
//! passed (`squash`, `rebase`), and no value may hold a broken tree; without flakes every good
//! pull request merges, one of each pair merges and the other fails with a reason; the queue
//! ends empty and the target holds exactly the merged changes. With a CI that fails at random,
//! the target still never holds a broken tree and every pull request still concludes.
//!
//! In parallel mode a lane's merge onto a target that received another lane's merges since it
//! was tested carries no tested commit (by design: disjoint targets are independent), so there
//! the target's values are checked for a broken tree only.

use crate::Backend;
use crate::git_repo::{GitRepo, PrSpec};
use crate::live::{CI, LiveEnv, body, repo_ref};
use mq_core::engine::{EFFECT_LEASE_MS, PendingEffect};
use mq_core::ids::QueueId;
use mq_core::time::Timestamp;
use mq_githost::GitHost;
use mq_githost::faults::FaultyGitHost;
use mq_service::Clock;
use mq_store::{FaultyStore, Store};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Pull requests in each row, and the outcome each must have when CI is not flaky.
pub const PRS: u32 = 12;
const BREAKS_ALONE: u32 = 3;
const PAIR: (u32, u32) = (5, 7);
const CONFLICT: (u32, u32) = (8, 10);
/// The pull requests that are good whatever else happens.
const GOOD: [u32; 7] = [1, 2, 4, 6, 9, 11, 12];

/// How long one row may take before it fails.
const ROW_DEADLINE: Duration = Duration::from_secs(300);
/// In rows with batching, with nothing changing for this long, the test moves the queue's
/// clock forward ([`CLOCK_STEP_MS`]): a batch waiting for its `batchingMaxWaitTimeMinutes`. Other rows
/// run on real time alone, so nothing in them may wait for an effect's lease or back-off.
const IDLE: Duration = Duration::from_secs(3);
/// Rows run at once in one test.
const ROWS_AT_ONCE: usize = 6;
/// How far the clock moves at a time: less than an effect's lease ([`EFFECT_LEASE_MS`]), as
/// real time moves while an effect executes (its executor lives at most 29 s). A longer step
/// makes an effect still executing look lost: the queue then carries out the newer
/// notification held behind it, and the older one, landing last, is what the host keeps.
const CLOCK_STEP_MS: i64 = EFFECT_LEASE_MS - 5_000;
/// How long (real time) after its lease began an effect may still be executing: the requests
/// here carry out their effects within seconds. Until then the clock does not pass its lease
/// ([`ClockMover`]); after, an effect still there waits for the tick.
const EXECUTING_FOR: Duration = Duration::from_secs(20);

#[derive(Debug, Clone, Copy)]
pub struct Row {
    pub method: &'static str,
    pub concurrency: u32,
    pub batch: bool,
    pub optimistic: bool,
    pub parallel: bool,
    /// Percent of CI runs that fail whatever they test.
    pub flaky: u32,
    /// The tuned settings change every `RETUNE_EVERY` while pull requests are in flight
    /// (`retunings`), as an operator's `updateQueue` or auto-tuning changes them.
    pub retune: bool,
}

impl Row {
    pub fn name(&self) -> String {
        format!(
            "{} c{}{}{}{}{}",
            self.method,
            self.concurrency,
            if self.batch { " batch" } else { "" },
            if self.optimistic { " optimistic" } else { "" },
            if self.parallel { " parallel" } else { "" },
            if self.flaky > 0 { " flaky" } else { "" },
        ) + if self.retune { " retuned" } else { "" }
    }

    pub fn settings(&self) -> Value {
        json!({
            "requiredStatuses": [CI],
            "mergeMethod": self.method,
            "concurrency": self.concurrency,
            "batch": self.batch,
            "batchingMinSize": 3,
            "batchingMaxWaitTimeMinutes": 1,
            "canOptimisticallyMerge": self.optimistic,
            "mode": if self.parallel { "parallel" } else { "single" },
        })
    }
}

/// How often a row with `retune` changes its queue's settings.
const RETUNE_EVERY: Duration = Duration::from_millis(300);

/// The settings a row with `retune` goes through, over and over: the settings auto-tuning
/// changes, each way.
fn retunings() -> [Value; 4] {
    [
        json!({"concurrency": 3, "batch": true, "batchingMinSize": 2, "bisectionConcurrency": 2,
               "canOptimisticallyMerge": true, "pendingFailureDepth": 2,
               "adaptivePendingFailure": true}),
        json!({"concurrency": 1, "batch": false, "canOptimisticallyMerge": false,
               "pendingFailureDepth": 1, "adaptivePendingFailure": false}),
        json!({"concurrency": 2, "batch": true, "batchingMinSize": 3, "bisectionConcurrency": 1}),
        json!({"concurrency": 3, "batch": false, "canOptimisticallyMerge": true}),
    ]
}

/// Changes the queue's settings every [`RETUNE_EVERY`], through [`retunings`], for ever.
async fn retune(env: &LiveEnv, repo: &GitRepo) {
    for settings in retunings().iter().cycle() {
        tokio::time::sleep(RETUNE_EVERY).await;
        env.update_queue(repo, settings.clone()).await;
    }
}

/// Every single-mode combination of one merge method.
pub fn single_rows(method: &'static str) -> Vec<Row> {
    let mut rows = Vec::new();
    for concurrency in [1, 3] {
        for batch in [false, true] {
            for optimistic in [false, true] {
                rows.push(Row {
                    method,
                    concurrency,
                    batch,
                    optimistic,
                    parallel: false,
                    flaky: 0,
                    retune: false,
                });
            }
        }
    }
    rows
}

/// How slow the world around the queue is: latency before every store and Git host call, and
/// how long CI takes.
#[derive(Debug, Clone, Copy)]
pub struct World {
    /// Each store call waits a uniform draw from this range first (DynamoDB under load).
    pub store_latency: (Duration, Duration),
    /// Each Git host call waits a uniform draw from this range first.
    pub host_latency: (Duration, Duration),
    /// CI sleeps a uniform draw from this range (in tenths of a second) before its verdict.
    pub ci_tenths: (u32, u32),
}

impl World {
    /// Nothing injected; CI takes 0.2 s.
    pub const QUICK: World = World {
        store_latency: (Duration::ZERO, Duration::ZERO),
        host_latency: (Duration::ZERO, Duration::ZERO),
        ci_tenths: (2, 2),
    };
}

/// Runs rows, `ROWS_AT_ONCE` at a time, and fails with every row that failed.
pub async fn run_rows(backend: Backend, world: World, rows: Vec<Row>) {
    let mut failures = Vec::new();
    for chunk in rows.chunks(ROWS_AT_ONCE) {
        let tasks: Vec<_> = chunk
            .iter()
            .map(|&row| tokio::spawn(run_row(backend, world, row)))
            .collect();
        for (row, task) in chunk.iter().zip(tasks) {
            match task.await {
                Ok(report) => println!("{report}"),
                Err(e) => failures.push(format!("{}: {e}", row.name())),
            }
        }
    }
    assert!(failures.is_empty(), "rows failed:\n{}", failures.join("\n"));
}

/// One row: the queue, the pull requests, the wait for every conclusion, the checks. Panics
/// with what broke; returns the row's figures.
async fn run_row(backend: Backend, world: World, row: Row) -> String {
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("temporary directory");
    let verdicts = dir.path().join("ci-verdicts.log");
    let env = live_options(world)
        .ci(&ci_command(
            dir.path(),
            &verdicts,
            world.ci_tenths,
            row.flaky,
        ))
        .tick_every(Duration::from_millis(500))
        .start(backend)
        .await;
    let repo = env.repo("rocket");
    repo.commit_files(
        "main",
        &[("shared.txt", "1\n2\n3\n4\n5\n")],
        "Add shared.txt",
    );
    make_pull_requests(&repo);
    let moves = dir.path().join("target-moves.log");
    repo.record_moves("main", &moves);
    let initial = repo.head("main").expect("main");
    env.create_queue(&repo, row.settings()).await;
    if row.parallel {
        upload_targets(&env, &repo).await;
    }
    for pr in 1..=PRS {
        env.submit(&repo, pr).await;
    }
    let states = if row.retune {
        tokio::select! {
            states = conclude_all(&env, &repo, &row) => states,
            () = retune(&env, &repo) => unreachable!("retuning goes on until every pull request concluded"),
        }
    } else {
        conclude_all(&env, &repo, &row).await
    };
    settle(&env, &repo, &row).await;
    let merged: BTreeSet<u32> = states
        .iter()
        .filter(|(_, s)| s.as_str() == "merged")
        .map(|(pr, _)| *pr)
        .collect();
    let checks = Checks {
        repo: &repo,
        row: &row,
        moves: read_lines(&moves),
        verdicts: read_verdicts(&verdicts),
        merged: &merged,
    };
    checks.outcomes(&states);
    checks.target_values();
    checks.final_target(&initial);
    check_reasons(&env, &repo, &states).await;
    let queue = env.queue(&repo).await;
    assert_eq!(
        queue["enqueuedPullRequests"],
        json!([]),
        "{}: the queue ends empty",
        row.name()
    );
    let runs = checks.verdicts.len();
    format!(
        "{:<40} merged {:>2}/{PRS}, CI runs {runs:>3}, CI runs per merged pull request {:.2}, {:.1} s",
        row.name(),
        merged.len(),
        runs as f64 / merged.len().max(1) as f64,
        started.elapsed().as_secs_f64()
    )
}

/// The live environment with the world's latency injected into the store and the Git host.
fn live_options(world: World) -> crate::live::LiveOptions {
    let (store_min, store_max) = world.store_latency;
    let (host_min, host_max) = world.host_latency;
    LiveEnv::options()
        .wrap_store(move |store| {
            let slow = FaultyStore::new(store, 7);
            slow.set_latency(store_min, store_max);
            Arc::new(slow) as Arc<dyn Store>
        })
        .wrap_host(move |host| {
            let slow = FaultyGitHost::new(host, 11);
            slow.set_latency(host_min, host_max);
            Arc::new(slow) as Arc<dyn GitHost>
        })
}

/// The CI command: takes `tenths` of a second, tests the checkout (broken when it holds
/// `BROKEN`, or both `pair-a` and `pair-b`), fails `flaky` percent of the runs whatever they
/// test, and records the commit, its tree and the verdict.
fn ci_command(dir: &Path, verdicts: &Path, tenths: (u32, u32), flaky: u32) -> String {
    let script = dir.join("ci.sh");
    let (low, spread) = (tenths.0, tenths.1.saturating_sub(tenths.0) + 1);
    let text = format!(
        "roll=$(od -An -N1 -tu1 /dev/urandom | tr -d ' ')\n\
         tenths=$(({low} + roll % {spread}))\n\
         sleep $((tenths / 10)).$((tenths % 10))\n\
         tree=$(git rev-parse 'HEAD^{{tree}}')\n\
         verdict=pass\n\
         if [ -e BROKEN ] || {{ [ -e pair-a ] && [ -e pair-b ]; }}; then verdict=fail; fi\n\
         roll=$(od -An -N1 -tu1 /dev/urandom | tr -d ' ')\n\
         if [ \"$verdict\" = pass ] && [ $((roll % 100)) -lt {flaky} ]; then verdict=flake; fi\n\
         echo \"$MERGE_QUEUE_SHA $tree $verdict\" >> '{}'\n\
         [ \"$verdict\" = pass ]\n",
        verdicts.display()
    );
    std::fs::write(&script, text).expect("CI script");
    format!("sh '{}'", script.display())
}

fn make_pull_requests(repo: &GitRepo) {
    for n in 1..=PRS {
        let spec = PrSpec::new(n);
        let spec = match n {
            BREAKS_ALONE => spec.writing("BROKEN", "broken\n"),
            n if n == PAIR.0 => spec.writing("pair-a", "a\n"),
            n if n == PAIR.1 => spec.writing("pair-b", "b\n"),
            n if n == CONFLICT.0 => spec.writing("shared.txt", "1\n2\nx\n4\n5\n"),
            n if n == CONFLICT.1 => spec.writing("shared.txt", "1\n2\ny\n4\n5\n"),
            _ => spec,
        };
        repo.add_pr(spec);
    }
}

/// Parallel mode: each pull request's impacted targets, uploaded before submission for its
/// current head (no `pr.sha`). The pair and the conflicting changes share a lane.
async fn upload_targets(env: &LiveEnv, repo: &GitRepo) {
    let lanes: BTreeMap<u32, Value> = BTreeMap::from([
        (1, json!(["t1"])),
        (2, json!(["t2"])),
        (3, json!(["t3"])),
        (4, json!(["t1"])),
        (5, json!(["pair"])),
        (6, json!(["t2"])),
        (7, json!(["pair", "t3"])),
        (8, json!(["shared"])),
        (9, json!(["t3"])),
        (10, json!(["shared"])),
        (11, json!(["t1", "t2"])),
        (12, json!("ALL")),
    ]);
    for (pr, targets) in lanes {
        let mut upload = body(repo, json!({ "impactedTargets": targets }));
        upload["pr"] = json!({ "number": pr });
        env.ok("setImpactedTargets", &upload).await;
    }
}

/// Waits until every pull request concluded; with batching, moves the clock forward
/// whenever nothing changed for [`IDLE`]. Returns each pull request's final state.
async fn conclude_all(env: &LiveEnv, repo: &GitRepo, row: &Row) -> BTreeMap<u32, String> {
    let id = QueueId::new(&repo_ref(repo), "main");
    let mut mover = ClockMover::default();
    let started = Instant::now();
    let mut last_change = Instant::now();
    let mut last: BTreeMap<u32, String> = BTreeMap::new();
    loop {
        let mut now = BTreeMap::new();
        for pr in 1..=PRS {
            let seen = env.pull_request(repo, pr).await;
            now.insert(pr, seen["state"].as_str().unwrap_or_default().to_owned());
        }
        let done = now
            .values()
            .all(|s| ["merged", "failed", "cancelled"].contains(&s.as_str()));
        if done {
            return now;
        }
        if now != last {
            last = now;
            last_change = Instant::now();
        } else if row.batch && last_change.elapsed() > IDLE {
            mover.advance(env, &outbox_of(env, &id).await, CLOCK_STEP_MS);
            last_change = Instant::now();
        }
        assert!(
            started.elapsed() < ROW_DEADLINE,
            "{}: not every pull request concluded after {ROW_DEADLINE:?}: {last:?}; queue: {}",
            row.name(),
            env.queue(repo).await
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until the queue has carried out every Git host action it decided (the comments and
/// statuses of the last conclusions among them). With nothing changing for [`IDLE`], the
/// clock moves on ([`settle_step`]).
async fn settle(env: &LiveEnv, repo: &GitRepo, row: &Row) {
    let id = QueueId::new(&repo_ref(repo), "main");
    let mut mover = ClockMover::default();
    let started = Instant::now();
    let mut last_change = Instant::now();
    let mut last_outbox = Vec::new();
    loop {
        let outbox = outbox_of(env, &id).await;
        if outbox.is_empty() {
            return;
        }
        let pending: Vec<_> = outbox
            .iter()
            .map(|x| (&x.id, x.attempts, &x.last_error, x.held))
            .collect();
        assert!(
            started.elapsed() < ROW_DEADLINE,
            "{}: Git host actions still pending after {ROW_DEADLINE:?} (id, failures, last error, held): {pending:?}",
            row.name()
        );
        if outbox != last_outbox {
            last_outbox = outbox;
            last_change = Instant::now();
        } else if last_change.elapsed() > IDLE {
            let step = settle_step(&outbox, env.clock.now());
            mover.advance(env, &outbox, step);
            last_change = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The Git host actions the queue `id` still has to carry out.
async fn outbox_of(env: &LiveEnv, id: &QueueId) -> Vec<PendingEffect> {
    let snapshot = env.store.load(id).await.expect("queue readable");
    snapshot.map(|s| s.outbox).unwrap_or_default()
}

/// Moves the queue's clock forward without passing the lease of an effect that may still be
/// executing (its first execution, whose lease began less than [`EXECUTING_FOR`] ago). A
/// clock past it makes the queue take the effect for lost and carry it out again, and the
/// notification held behind it goes first: the older one, landing last, is what the host
/// keeps.
#[derive(Default)]
struct ClockMover {
    /// When each lease (effect, its end) was first seen.
    leases: BTreeMap<(String, Timestamp), Instant>,
}

impl ClockMover {
    fn advance(&mut self, env: &LiveEnv, outbox: &[PendingEffect], wanted: i64) {
        let now = env.clock.now();
        let executing = outbox
            .iter()
            .filter(|x| !x.held && x.last_error.is_none() && x.next_attempt_at > now);
        let mut step = wanted;
        for x in executing {
            let lease = (x.id.clone(), x.next_attempt_at);
            let seen = *self.leases.entry(lease).or_insert_with(Instant::now);
            if seen.elapsed() < EXECUTING_FOR {
                step = step.min(x.next_attempt_at.millis_since(now) - 1);
            }
        }
        if step > 0 {
            env.clock.advance_millis(step);
        }
    }
}

/// How far the clock moves while actions are pending and nothing changed for [`IDLE`]: to the
/// next retry when every action not held failed and waits for one (backing off up to an
/// hour), else [`CLOCK_STEP_MS`] (an answer that was lost is executed again once its lease
/// runs out).
fn settle_step(outbox: &[PendingEffect], now: Timestamp) -> i64 {
    let waiting: Vec<&PendingEffect> = outbox.iter().filter(|x| !x.held).collect();
    let backing_off = waiting
        .iter()
        .all(|x| x.last_error.is_some() && x.next_attempt_at > now);
    match waiting.iter().map(|x| x.next_attempt_at).min() {
        Some(next) if backing_off => next.millis_since(now).max(1),
        _ => CLOCK_STEP_MS,
    }
}

/// What the CI command recorded: commit, tree, verdict.
struct Verdict {
    sha: String,
    tree: String,
    passed: bool,
}

fn read_verdicts(log: &Path) -> Vec<Verdict> {
    read_lines(log)
        .iter()
        .map(|line| {
            let mut parts = line.split(' ');
            let mut next = || parts.next().unwrap_or_default().to_owned();
            Verdict {
                sha: next(),
                tree: next(),
                passed: next() == "pass",
            }
        })
        .collect()
}

/// The lines of a file, none when it does not exist.
pub fn read_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

struct Checks<'a> {
    repo: &'a GitRepo,
    row: &'a Row,
    /// Every value the target took, in order (the hook's record).
    moves: Vec<String>,
    verdicts: Vec<Verdict>,
    merged: &'a BTreeSet<u32>,
}

impl Checks<'_> {
    /// #3 never merges, and of each pair at most one does. Without flakes, every good pull
    /// request merges and so does one of each pair (usually the one ahead; a batch behind a
    /// batch being bisected may merge first); with flakes, good ones may fail on a flake.
    fn outcomes(&self, states: &BTreeMap<u32, String>) {
        let name = self.row.name();
        for (pr, state) in states {
            assert_ne!(state, "cancelled", "{name}: #{pr} was cancelled");
        }
        assert!(!self.merged.contains(&BREAKS_ALONE), "{name}: #3 merged");
        let count = |(a, b): (u32, u32)| {
            usize::from(self.merged.contains(&a)) + usize::from(self.merged.contains(&b))
        };
        assert!(count(PAIR) <= 1, "{name}: #5 and #7 both merged");
        assert!(count(CONFLICT) <= 1, "{name}: #8 and #10 both merged");
        if self.row.flaky == 0 {
            let good_merged = GOOD.iter().all(|pr| self.merged.contains(pr));
            assert!(
                good_merged,
                "{name}: a good pull request did not merge: {states:?}"
            );
            assert_eq!(
                count(PAIR),
                1,
                "{name}: one of #5 and #7 merges: {states:?}"
            );
            assert_eq!(
                count(CONFLICT),
                1,
                "{name}: one of #8 and #10 merges: {states:?}"
            );
        }
    }

    /// Every value the target took passed CI (single mode) and none holds a broken tree.
    fn target_values(&self) {
        let name = self.row.name();
        let passed_shas: BTreeSet<&str> = self
            .verdicts
            .iter()
            .filter(|v| v.passed)
            .map(|v| v.sha.as_str())
            .collect();
        let passed_trees: BTreeSet<&str> = self
            .verdicts
            .iter()
            .filter(|v| v.passed)
            .map(|v| v.tree.as_str())
            .collect();
        assert!(
            !self.moves.is_empty() || self.merged.is_empty(),
            "{name}: no move recorded"
        );
        for value in &self.moves {
            let files = self.repo.files(value);
            let broken = files.iter().any(|f| f == "BROKEN")
                || (files.iter().any(|f| f == "pair-a") && files.iter().any(|f| f == "pair-b"));
            assert!(
                !broken,
                "{name}: main moved to {value}, a broken tree: {files:?}"
            );
            if self.row.parallel {
                continue;
            }
            if self.row.method == "merge_commit" {
                assert!(
                    passed_shas.contains(value.as_str()),
                    "{name}: main moved to {value}, a commit CI did not pass"
                );
            } else {
                let tree = self.repo.tree(value);
                assert!(
                    passed_trees.contains(tree.as_str()),
                    "{name}: main moved to {value}, whose tree {tree} CI did not pass"
                );
            }
        }
    }

    /// The target holds exactly the merged changes.
    fn final_target(&self, initial: &str) {
        let name = self.row.name();
        let head = self.repo.head("main").expect("main");
        assert_eq!(
            self.moves.last().map(String::as_str).unwrap_or(initial),
            head,
            "{name}: the hook saw the last move"
        );
        let files = self.repo.files(&head);
        for pr in 1..=PRS {
            let has = files.contains(&format!("change-{pr}.txt"));
            assert_eq!(
                has,
                self.merged.contains(&pr),
                "{name}: #{pr}'s change on main"
            );
        }
        let shared = self.repo.file_at(&head, "shared.txt").unwrap_or_default();
        let expected = if self.merged.contains(&CONFLICT.0) {
            "1\n2\nx\n4\n5"
        } else if self.merged.contains(&CONFLICT.1) {
            "1\n2\ny\n4\n5"
        } else {
            "1\n2\n3\n4\n5"
        };
        assert_eq!(shared.trim_end(), expected, "{name}: shared.txt on main");
    }
}

/// Every pull request that failed says why, in the queue's comment on it.
async fn check_reasons(env: &LiveEnv, repo: &GitRepo, states: &BTreeMap<u32, String>) {
    for (pr, state) in states {
        if state == "failed" {
            let comment = env.comment(repo, *pr).await;
            assert!(
                comment.starts_with("Removed from the queue for `main`: ") && comment.len() > 36,
                "#{pr} failed without a reason: {comment:?}"
            );
        }
    }
}
