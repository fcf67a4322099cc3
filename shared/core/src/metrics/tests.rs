//! A queue an hour into a busy afternoon: entries waiting, testing, bisecting, merged, failed
//! and cancelled, with runs and restarts inside and outside the window.

use super::*;
use crate::engine::{Effect, PendingEffect};
use crate::estimate::RecentTesting;
use crate::history::Restart;
use crate::ids::{OrgId, RepoRef, Sha};
use crate::run::TestedPr;
use crate::settings::QueueConfig;
use std::sync::Arc;

const NOW: Timestamp = Timestamp(1_795_000_000_000);

/// `minutes` before now.
fn ago(minutes: i64) -> Timestamp {
    NOW.plus_millis(-minutes * 60_000)
}

fn queue(created: Timestamp) -> Queue {
    let config = QueueConfig {
        concurrency: 2,
        bisection_concurrency: 1,
        ..QueueConfig::default()
    };
    Queue::new(
        OrgId::parse("acme").unwrap(),
        RepoRef::new("github.com", "acme", "rocket").unwrap(),
        "main".into(),
        config,
        QueueState::Running,
        created,
    )
}

struct Times {
    submitted: i64,
    ready: Option<i64>,
    first_tested: Option<i64>,
}

fn entry(pr: u32, state: EntryState, t: Times) -> Entry {
    Entry {
        state,
        state_changed_at: ago(t.submitted),
        submitted_at: ago(t.submitted),
        ready_at: t.ready.map(ago),
        first_tested_at: t.first_tested.map(ago),
        ..Entry::sample(pr)
    }
}

fn times(submitted: i64, ready: Option<i64>, first_tested: Option<i64>) -> Times {
    Times {
        submitted,
        ready,
        first_tested,
    }
}

fn concluded(mut e: Entry, state: EntryState, at: i64, ci_runs: u32) -> Entry {
    e.state = state;
    e.concluded_at = Some(ago(at));
    e.ci_runs = ci_runs;
    e
}

fn run(id: &str, kind: RunKind, prs: &[u32], started: i64) -> TestRun {
    TestRun {
        kind,
        created_at: ago(started + 1),
        tested: prs
            .iter()
            .map(|&pr| TestedPr {
                entry_id: format!("e{pr}"),
                pr,
                title: String::new(),
                head_sha: Sha::new(format!("{pr:040x}")),
            })
            .collect(),
        started_at: Some(ago(started)),
        ..TestRun::sample(id)
    }
}

fn finished(mut r: TestRun, status: RunStatus, at: i64) -> TestRun {
    r.status = status;
    r.finished_at = Some(ago(at));
    r
}

fn restart(pr: u32, at: i64) -> Restart {
    Restart {
        entry_id: format!("e{pr}"),
        pr,
        at: ago(at),
        count: 1,
        total: 1,
    }
}

fn afternoon() -> QueueFacts {
    use EntryState::*;
    let mut snapshot = QueueSnapshot::new(queue(ago(180)));
    let mut e8 = entry(8, Testing, times(20, Some(20), Some(8)));
    e8.restarts = 1;
    snapshot.entries = vec![
        entry(6, NotReady, times(5, None, None)),
        entry(7, Pending, times(12, Some(11), None)),
        e8,
        entry(9, Testing, times(18, Some(17), Some(8))),
        entry(10, PendingFailure, times(50, Some(49), Some(45))),
        entry(11, PendingFailure, times(70, Some(69), Some(65))),
    ]
    .into_iter()
    .map(Arc::new)
    .collect();
    snapshot.runs = vec![
        run("r5", RunKind::Main, &[8, 9], 8),
        run("r6-bisection", RunKind::Bisection, &[10], 4),
    ];
    snapshot.outbox = vec![PendingEffect {
        id: "x1".into(),
        effect: Effect::RefreshPullRequest { pr: 7 },
        created_at: ago(1),
        attempts: 2,
        next_attempt_at: NOW,
        last_error: Some("host unreachable".into()),
        held: false,
    }];
    let history = History {
        concluded: vec![
            concluded(entry(5, Pending, times(90, None, None)), Cancelled, 70, 0),
            concluded(
                entry(1, Testing, times(120, Some(119), Some(110))),
                Merged,
                50,
                1,
            ),
            concluded(entry(4, Pending, times(20, None, None)), Cancelled, 15, 0),
            concluded(
                entry(2, Testing, times(40, Some(39), Some(35))),
                Merged,
                10,
                2,
            ),
            concluded(
                entry(3, Testing, times(30, Some(30), Some(25))),
                Failed,
                5,
                3,
            ),
        ],
        finished_runs: vec![
            finished(run("r0", RunKind::Main, &[11], 64), RunStatus::Failed, 61),
            finished(
                run("r1", RunKind::Main, &[1], 110),
                RunStatus::Succeeded,
                52,
            ),
            finished(
                run("r2", RunKind::Main, &[2, 8], 34),
                RunStatus::Cancelled,
                30,
            ),
            finished(
                run("r4", RunKind::Main, &[3, 10], 25),
                RunStatus::Failed,
                15,
            ),
            finished(run("r3", RunKind::Main, &[2], 29), RunStatus::Succeeded, 12),
            finished(
                run("r7-bisection", RunKind::Bisection, &[3], 14),
                RunStatus::Failed,
                6,
            ),
        ],
        restarts: vec![restart(11, 65), restart(2, 30), restart(8, 30)],
    };
    QueueFacts {
        snapshot: Arc::new(snapshot),
        history,
    }
}

fn statuses(succeeded: u64, failed: u64, cancelled: u64) -> [u64; 3] {
    assert_eq!(
        FINISHED_STATUSES,
        [
            RunStatus::Succeeded,
            RunStatus::Failed,
            RunStatus::Cancelled
        ]
    );
    [succeeded, failed, cancelled]
}

fn durations<const N: usize>(seconds: [f64; N]) -> Durations {
    Durations::of(&DURATION_BUCKETS, seconds)
}

#[test]
fn live_gauges_count_the_snapshot() {
    let f = figures(&afternoon(), NOW);
    assert_eq!(
        (f.repo.as_str(), f.branch.as_str()),
        ("acme/rocket", "main")
    );
    assert_eq!(f.state, QueueState::Running);
    assert_eq!(f.depth, 5, "pending, testing and pending_failure entries");
    assert_eq!(f.awaiting_mergeability, 1);
    assert_eq!(f.effects_pending, 1);
    assert_eq!(
        (f.main.prs_testing, f.main.runs_active, f.main.runs_limit),
        (2, 1, 2)
    );
    assert_eq!(
        (
            f.bisection.prs_testing,
            f.bisection.runs_active,
            f.bisection.runs_limit
        ),
        (1, 1, 1)
    );
}

#[test]
fn a_held_run_is_not_in_flight() {
    let mut facts = afternoon();
    let snapshot = Arc::make_mut(&mut facts.snapshot);
    let run = snapshot
        .runs
        .iter_mut()
        .find(|r| r.kind == RunKind::Main && !r.is_finished())
        .expect("a main run in flight");
    run.held = true;
    let f = figures(&facts, NOW);
    assert_eq!((f.main.prs_testing, f.main.runs_active), (0, 0));
    assert_eq!(f.bisection.runs_active, 1);
}

#[test]
fn rolling_counts_cover_the_last_hour_only() {
    let f = figures(&afternoon(), NOW);
    assert_eq!(f.restarts, 2, "the restart 65 minutes ago is outside");
    assert_eq!(f.main.runs_finished, statuses(2, 1, 1));
    assert_eq!(f.bisection.runs_finished, statuses(0, 1, 0));
    let counts: Vec<(Outcome, u64)> = Outcome::ALL
        .iter()
        .map(|o| (*o, f.outcome(*o).count))
        .collect();
    assert_eq!(
        counts,
        [
            (Outcome::Merged, 2),
            (Outcome::Failed, 1),
            (Outcome::Cancelled, 1)
        ]
    );
}

/// A run that finished but is still in the line (its group passed, waiting to merge behind a
/// group still testing) counts as finished, and once only when the history already has it.
#[test]
fn a_finished_run_still_in_the_line_counts_once() {
    let mut facts = afternoon();
    let before = figures(&facts, NOW);
    let passed = finished(run("r8", RunKind::Main, &[9], 8), RunStatus::Succeeded, 2);
    let snapshot = Arc::make_mut(&mut facts.snapshot);
    snapshot.runs.push(passed.clone());
    let f = figures(&facts, NOW);
    assert_eq!(f.main.runs_finished, statuses(3, 1, 1));
    assert_eq!(
        f.main.test_seconds.count(),
        before.main.test_seconds.count() + 1
    );
    assert_eq!(f.main.runs_active, before.main.runs_active, "not in flight");

    facts.history.finished_runs.push(passed);
    assert_eq!(figures(&facts, NOW).main.runs_finished, statuses(3, 1, 1));
}

#[test]
fn durations_are_observed_in_seconds() {
    let f = figures(&afternoon(), NOW);
    // r1 tested 58 minutes, r3 17, r4 10 (two pull requests); r2 was cancelled.
    assert_eq!(
        f.main.test_seconds,
        durations([3480.0, 600.0, 600.0, 1020.0])
    );
    assert_eq!(f.main.test_seconds.cumulative(), [0, 0, 2, 2, 3, 4, 4, 4]);
    assert_eq!(f.bisection.test_seconds, durations([480.0]));
    // Active entries first tested in the window (8, 9, 10), then concluded ones (2, 3).
    assert_eq!(
        f.wait_seconds,
        durations([720.0, 540.0, 240.0, 240.0, 300.0])
    );
    assert_eq!((f.wait_seconds.count(), f.wait_seconds.sum()), (5, 2040.0));
    let merged = f.outcome(Outcome::Merged);
    assert_eq!(merged.time_in_queue_seconds, durations([4200.0, 1800.0]));
    assert_eq!(merged.ci_runs, CiRuns::of(&CI_RUNS_BUCKETS, [1.0, 2.0]));
    let failed = f.outcome(Outcome::Failed);
    assert_eq!(
        (&failed.time_in_queue_seconds, &failed.ci_runs),
        (&durations([1500.0]), &CiRuns::of(&CI_RUNS_BUCKETS, [3.0]))
    );
    let cancelled = f.outcome(Outcome::Cancelled);
    assert_eq!(cancelled.time_in_queue_seconds, durations([300.0]));
    assert_eq!(cancelled.ci_runs, CiRuns::of(&CI_RUNS_BUCKETS, [0.0]));
}

#[test]
fn runs_that_never_reached_ci_add_no_test_time() {
    let mut facts = afternoon();
    let before = figures(&facts, NOW);
    let mut conflict = finished(run("r8", RunKind::Main, &[12], 3), RunStatus::Failed, 3);
    conflict.reason = Some(reason::MERGE_CONFLICT.into());
    conflict.started_at = None;
    let mut branch_error = finished(run("r9", RunKind::Main, &[13], 50), RunStatus::Failed, 2);
    branch_error.reason = Some(reason::BRANCH_ERROR.into());
    let mut timed_out = finished(run("r10", RunKind::Main, &[14], 20), RunStatus::Failed, 10);
    timed_out.reason = Some(reason::TIMEOUT.into());
    facts
        .history
        .finished_runs
        .extend([conflict, branch_error, timed_out]);
    let after = figures(&facts, NOW);
    assert_eq!(
        after.main.runs_finished[1],
        before.main.runs_finished[1] + 3
    );
    // Only the run whose tests timed out tested: 10 minutes.
    assert_eq!(
        after.main.test_seconds.count(),
        before.main.test_seconds.count() + 1
    );
    assert_eq!(
        after.main.test_seconds.sum(),
        before.main.test_seconds.sum() + 600.0
    );
    let recent = RecentTesting::of(&facts.history.finished_runs).unwrap();
    assert_eq!(recent.runs, 5, "r0, r1, r4, r3 and r10");
}

#[test]
fn an_entry_read_both_active_and_concluded_waits_once() {
    let mut facts = afternoon();
    // Pull request 2's submission, as the snapshot read it just before it merged.
    let still_active = entry(2, EntryState::Testing, times(40, Some(39), Some(35)));
    assert_eq!(facts.history.concluded[3].seq, still_active.seq);
    Arc::make_mut(&mut facts.snapshot)
        .entries
        .push(Arc::new(still_active));
    assert_eq!(figures(&facts, NOW).wait_seconds.count(), 5);
}

#[test]
fn a_young_queue_ignores_history_from_before_it_was_created() {
    let mut facts = afternoon();
    Arc::make_mut(&mut facts.snapshot).queue.created_at = ago(40);
    let f = figures(&facts, NOW);
    assert_eq!(
        f.outcome(Outcome::Merged).count,
        1,
        "the merge 50 minutes ago is older"
    );
    assert_eq!(f.main.runs_finished, statuses(1, 1, 1));
    assert_eq!(
        Window::last_hour(&facts.snapshot.queue, NOW),
        Window {
            from: ago(40),
            to: NOW
        }
    );
}

#[test]
fn an_idle_queue_reports_zeros_for_every_series() {
    let facts = QueueFacts {
        snapshot: Arc::new(QueueSnapshot::new(queue(ago(500)))),
        history: History::default(),
    };
    let f = figures(&facts, NOW);
    assert_eq!((f.depth, f.awaiting_mergeability, f.restarts), (0, 0, 0));
    assert_eq!(f.main.runs_finished, statuses(0, 0, 0));
    assert!(f.outcomes.iter().all(|o| *o == OutcomeFigures::default()));
    assert_eq!(f.wait_seconds, Durations::default());
    assert_eq!(f.main.test_seconds.count(), 0);
    assert_eq!(Outcome::of(EntryState::Testing), None);
}
