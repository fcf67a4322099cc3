//! Every setting on real git, through HTTP against the local gateway: for each merge method,
//! with `concurrency` 1 and 3, with and without batching, with and without optimistic merge,
//! and in parallel mode with impacted targets, a dozen pull requests go through one queue:
//!
//! - #3 breaks the build alone (it adds `BROKEN`);
//! - #5 and #7 each pass alone but break it together (`pair-a` and `pair-b`): only testing
//!   each pull request on top of the ones ahead catches it;
//! - #8 and #10 change the same line of `shared.txt`: a textual conflict;
//! - the others are good.
//!
//! What is checked comes from outside the queue: a `reference-transaction` hook in the bare
//! repository records every value the target branch takes, and the CI command records the
//! commit, tree and verdict of everything it tests. Every value the target takes must be a
//! commit CI passed (`merge_commit`) or have a tree CI passed (`squash`, `rebase`), and no
//! value may hold a broken tree; every good pull request merges, every bad one fails with a
//! reason, the queue ends empty and the target holds exactly the merged changes. Rows whose
//! CI also fails at random (15%) check that the target still never holds a broken tree and
//! the queue still empties.
//!
//! In parallel mode a lane's merge onto a target that received another lane's merges since it
//! was tested carries no tested commit (by design: disjoint targets are independent), so there
//! the hook's values are checked for a broken tree only.
//!
//! Each row prints its CI runs per merged pull request (`--nocapture`).

use e2e::Backend;
use e2e::git_repo::{GitRepo, PrSpec};
use e2e::live::{CI, LiveEnv, body};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

/// Pull requests in each row, and the outcome each must have when CI is not flaky.
const PRS: u32 = 12;
const BREAKS_ALONE: u32 = 3;
const PAIR: (u32, u32) = (5, 7);
const CONFLICT: (u32, u32) = (8, 10);
/// The pull requests that are good whatever else happens.
const GOOD: [u32; 7] = [1, 2, 4, 6, 9, 11, 12];

/// How long one row may take before it fails.
const ROW_DEADLINE: Duration = Duration::from_secs(240);
/// With nothing changing for this long, the test moves the queue's clock a minute forward
/// (a batch waiting for its `batchingMaxWaitTimeMinutes`, an effect waiting for its retry).
const IDLE: Duration = Duration::from_secs(2);
/// Rows run at once in one test.
const ROWS_AT_ONCE: usize = 6;

#[derive(Debug, Clone, Copy)]
struct Row {
    method: &'static str,
    concurrency: u32,
    batch: bool,
    optimistic: bool,
    parallel: bool,
    /// Percent of CI runs that fail whatever they test.
    flaky: u32,
}

impl Row {
    fn name(&self) -> String {
        format!(
            "{} c{}{}{}{}{}",
            self.method,
            self.concurrency,
            if self.batch { " batch" } else { "" },
            if self.optimistic { " optimistic" } else { "" },
            if self.parallel { " parallel" } else { "" },
            if self.flaky > 0 { " flaky" } else { "" },
        )
    }

    fn settings(&self) -> Value {
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

/// Every single-mode combination of one merge method.
fn single_rows(method: &'static str) -> Vec<Row> {
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
                });
            }
        }
    }
    rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn merge_commit_in_every_single_mode_combination() {
    run_rows(Backend::Memory, single_rows("merge_commit")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn squash_in_every_single_mode_combination() {
    run_rows(Backend::Memory, single_rows("squash")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rebase_in_every_single_mode_combination() {
    run_rows(Backend::Memory, single_rows("rebase")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_mode_with_impacted_targets_for_every_merge_method() {
    let rows = ["merge_commit", "squash", "rebase"].map(|method| Row {
        method,
        concurrency: 3,
        batch: false,
        optimistic: false,
        parallel: true,
        flaky: 0,
    });
    run_rows(Backend::Memory, rows.to_vec()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_ci_that_fails_at_random_never_breaks_the_target() {
    let mut rows = Vec::new();
    for method in ["merge_commit", "squash", "rebase"] {
        for (batch, optimistic) in [(false, false), (true, true)] {
            rows.push(Row {
                method,
                concurrency: 3,
                batch,
                optimistic,
                parallel: false,
                flaky: 15,
            });
        }
    }
    run_rows(Backend::Memory, rows).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn merge_commit_with_concurrency_and_batching_on_dynamodb() {
    let row = Row {
        method: "merge_commit",
        concurrency: 3,
        batch: true,
        optimistic: true,
        parallel: false,
        flaky: 0,
    };
    run_rows(Backend::DynamoDb, vec![row]).await;
}

/// A dozen good pull requests under `merge_commit` with three tested at once: every one
/// merges (each group's tested commit holds the very merge commits of the groups ahead).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn merge_commit_with_concurrency_merges_a_dozen_good_pull_requests() {
    let env = LiveEnv::options()
        .ci("sleep 0.1")
        .tick_every(Duration::from_millis(500))
        .start(Backend::Memory)
        .await;
    let repo = env.repo("rocket");
    repo.add_prs(PRS, &[]);
    let moves = env.dir.path().join("target-moves.log");
    repo.record_moves("main", &moves);
    let settings =
        json!({"requiredStatuses": [CI], "mergeMethod": "merge_commit", "concurrency": 3});
    env.create_queue(&repo, settings).await;
    for pr in 1..=PRS {
        env.submit(&repo, pr).await;
    }
    for pr in 1..=PRS {
        env.wait_for_state(&repo, pr, "merged").await;
    }
    let passed = repo.commits_with_status(CI, "success");
    for value in read_lines(&moves) {
        assert!(
            passed.contains(&value),
            "main moved to {value}, which CI did not pass"
        );
    }
}

/// Runs rows, [`ROWS_AT_ONCE`] at a time, and fails with every row that failed.
async fn run_rows(backend: Backend, rows: Vec<Row>) {
    let mut failures = Vec::new();
    for chunk in rows.chunks(ROWS_AT_ONCE) {
        let tasks: Vec<_> = chunk
            .iter()
            .map(|&row| tokio::spawn(run_row(backend, row)))
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
async fn run_row(backend: Backend, row: Row) -> String {
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("temporary directory");
    let verdicts = dir.path().join("ci-verdicts.log");
    let env = LiveEnv::options()
        .ci(&ci_command(dir.path(), &verdicts, row.flaky))
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
    let states = conclude_all(&env, &repo, &row).await;
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

/// The CI command: tests the checkout (broken when it holds `BROKEN`, or both `pair-a` and
/// `pair-b`), fails `flaky` percent of the runs whatever they test, and records the commit,
/// its tree and the verdict.
fn ci_command(dir: &Path, verdicts: &Path, flaky: u32) -> String {
    let script = dir.join("ci.sh");
    let text = format!(
        "sleep 0.2\n\
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

/// Waits until every pull request concluded; moves the clock a minute forward whenever
/// nothing changed for [`IDLE`]. Returns each pull request's final state.
async fn conclude_all(env: &LiveEnv, repo: &GitRepo, row: &Row) -> BTreeMap<u32, String> {
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
        } else if last_change.elapsed() > IDLE {
            env.clock.advance_minutes(1);
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

fn read_lines(path: &Path) -> Vec<String> {
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

/// `createPrsForTestingBranches`: while a run tests, its branch has a draft pull request into
/// the target on the local host, naming the run and what it tests; it is closed once the run
/// has its result.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn test_branches_get_draft_pull_requests_while_they_test() {
    let env = LiveEnv::options()
        .ci("sleep 1")
        .start(Backend::Memory)
        .await;
    let repo = env.repo("rocket");
    repo.add_prs(2, &[]);
    let settings = json!({"requiredStatuses": [CI], "createPrsForTestingBranches": true});
    env.create_queue(&repo, settings).await;
    env.submit(&repo, 1).await;
    let run = env.wait_for_run(&repo, 1).await;
    let branch = format!("mq-test/main/{}", run.id);
    let opened = e2e::live::wait_until("the draft pull request", || async {
        let record = env
            .host
            .test_pull_request(&e2e::live::repo_ref(&repo), &branch)
            .await;
        record.ok().flatten().filter(|r| r.open)
    })
    .await;
    assert_eq!(opened.request.target, "main");
    assert_eq!(
        opened.request.title,
        format!("[merge queue] #1 into main (run {})", run.id)
    );
    assert!(
        opened.request.body.contains("#1 on top of `main`"),
        "{}",
        opened.request.body
    );
    env.wait_for_state(&repo, 1, "merged").await;
    let closed = env
        .host
        .test_pull_request(&e2e::live::repo_ref(&repo), &branch)
        .await;
    assert!(!closed.unwrap().unwrap().open, "closed once the run passed");
}
