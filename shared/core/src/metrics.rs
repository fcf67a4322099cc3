//! Figures for dashboards and alarms, computed from a queue's stored facts: the live snapshot
//! and the last hour of history. Pure: the caller loads the facts and says what time it is.
//!
//! Definitions (the window is the last hour, `[now - 1h, now)`, and never reaches back before
//! the queue was created):
//!
//! - depth: active entries not in `not_ready`; awaiting mergeability: entries in `not_ready`.
//! - per lane (`main` runs, `bisection` runs): pull requests under test and runs in flight,
//!   the lane's concurrency limit, runs finished in the window by status, and for every pull
//!   request of a run that ran to a verdict in the window (passed, or its tests failed or timed
//!   out: not a run that failed before CI could run), how long that run tested (finish minus
//!   start).
//! - per outcome (merged, failed, cancelled): entries concluded in the window, how long each
//!   was in the queue (conclusion minus submission) and how many CI runs it took.
//! - wait: for every entry whose first test started in the window, the time from becoming
//!   ready (or from submission, if it never waited for readiness) to that first test.
//! - restarts: restarts recorded in the window.

use crate::engine::reason;
use crate::engine::view::stuck_entries;
use crate::entry::{Entry, EntryState};
use crate::history::History;
use crate::run::{RunKind, RunStatus, TestRun};
use crate::settings::QueueState;
use crate::snapshot::{Queue, QueueSnapshot};
use crate::time::Timestamp;
use crate::wire_enum;
pub use histogram::{CI_RUNS_BUCKETS, CiRuns, DURATION_BUCKETS, Durations, Histogram};
use std::sync::Arc;

/// The length of the rolling window: one hour.
pub const WINDOW_MS: i64 = 3_600_000;

wire_enum! {
    /// How an entry left the queue.
    pub enum Outcome {
        Merged => "merged",
        Failed => "failed",
        Cancelled => "cancelled",
    }
}

impl Outcome {
    /// The outcome of a terminal state; `None` for an active one.
    pub const fn of(state: EntryState) -> Option<Self> {
        match state {
            EntryState::Merged => Some(Outcome::Merged),
            EntryState::Failed => Some(Outcome::Failed),
            EntryState::Cancelled => Some(Outcome::Cancelled),
            _ => None,
        }
    }
}

/// The statuses a finished run can have.
pub const FINISHED_STATUSES: [RunStatus; 3] = [
    RunStatus::Succeeded,
    RunStatus::Failed,
    RunStatus::Cancelled,
];

/// The time span the rolling figures cover: `[from, to)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub from: Timestamp,
    pub to: Timestamp,
}

impl Window {
    /// `[from, to)`: empty when `to <= from`.
    pub const fn between(from: Timestamp, to: Timestamp) -> Self {
        Self { from, to }
    }

    /// The `length_ms` before `now`, but nothing before the queue was created (a queue
    /// deleted and created again does not inherit its predecessor's history).
    pub fn last(queue: &Queue, now: Timestamp, length_ms: i64) -> Self {
        Self {
            from: now.plus_millis(-length_ms).max(queue.created_at),
            to: now,
        }
    }

    /// The last hour before `now` ([`Window::last`]).
    pub fn last_hour(queue: &Queue, now: Timestamp) -> Self {
        Self::last(queue, now, WINDOW_MS)
    }

    pub fn contains(&self, t: Timestamp) -> bool {
        self.from <= t && t < self.to
    }

    /// Hours the window spans.
    pub fn hours(&self) -> f64 {
        self.to.millis_since(self.from) as f64 / 3_600_000.0
    }
}

/// Everything the figures of one queue are computed from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueFacts {
    /// Shared: a store that keeps snapshots in memory hands out its own.
    pub snapshot: Arc<QueueSnapshot>,
    pub history: History,
}

impl QueueFacts {
    /// The runs that finished in `window`: those of the history, and those finished but still
    /// in the line (a group that passed, waiting to merge; one that failed, waiting for its
    /// decision), which reach the history only when they leave it. Each once: the snapshot and
    /// the history are read apart, and a run that left the line in between is in both.
    pub fn runs_finished_in(&self, window: Window) -> Vec<&TestRun> {
        let history = &self.history.finished_runs;
        let in_line = self
            .snapshot
            .runs
            .iter()
            .filter(|r| r.is_finished() && !history.iter().any(|h| h.id == r.id));
        history
            .iter()
            .chain(in_line)
            .filter(|r| r.finished_at.is_some_and(|t| window.contains(t)))
            .collect()
    }
}

/// The figures of one lane of a queue: its main runs, or its bisection runs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LaneFigures {
    /// Pull requests under test in runs in flight.
    pub prs_testing: u64,
    pub runs_active: u64,
    /// The lane's concurrency setting.
    pub runs_limit: u64,
    /// Runs finished in the window, per status of [`FINISHED_STATUSES`], in its order.
    pub runs_finished: [u64; 3],
    /// Per pull request of each run that succeeded or failed in the window: seconds it tested.
    pub test_seconds: Durations,
}

impl LaneFigures {
    /// Runs finished in the window with `status` (0 for a status not finished).
    pub fn finished(&self, status: RunStatus) -> u64 {
        finished_index(status).map_or(0, |i| self.runs_finished[i])
    }
}

/// The place of a finished status in [`FINISHED_STATUSES`].
fn finished_index(status: RunStatus) -> Option<usize> {
    FINISHED_STATUSES.iter().position(|s| *s == status)
}

/// The figures of the entries that left the queue one way in the window.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OutcomeFigures {
    pub count: u64,
    /// Seconds from submission to conclusion, per entry.
    pub time_in_queue_seconds: Durations,
    /// CI runs that included the entry, per entry.
    pub ci_runs: CiRuns,
}

/// Every figure of one queue at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueFigures {
    /// `owner/name`, as metrics label it.
    pub repo: String,
    pub branch: String,
    pub state: QueueState,
    pub depth: u64,
    pub awaiting_mergeability: u64,
    /// Git host effects not yet carried out (the outbox).
    pub effects_pending: u64,
    /// Entries that should have moved and did not ([`stuck_entries`]).
    pub entries_stuck: u64,
    pub restarts: u64,
    /// Seconds each entry first tested in the window waited for its first test.
    pub wait_seconds: Durations,
    pub main: LaneFigures,
    pub bisection: LaneFigures,
    /// Per outcome of [`Outcome::ALL`], in its order.
    pub outcomes: [OutcomeFigures; 3],
}

impl QueueFigures {
    pub fn lane(&self, kind: RunKind) -> &LaneFigures {
        match kind {
            RunKind::Main => &self.main,
            RunKind::Bisection => &self.bisection,
        }
    }

    pub fn outcome(&self, outcome: Outcome) -> &OutcomeFigures {
        &self.outcomes[outcome.index()]
    }
}

impl Outcome {
    /// The place of the outcome in [`Outcome::ALL`].
    const fn index(self) -> usize {
        match self {
            Outcome::Merged => 0,
            Outcome::Failed => 1,
            Outcome::Cancelled => 2,
        }
    }
}

/// A queue as metrics label it: `owner/name` and its branch (the labels of a queue whose
/// figures could not be read).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct QueueName {
    pub repo: String,
    pub branch: String,
}

impl QueueName {
    pub fn of(queue: &Queue) -> Self {
        Self {
            repo: queue.repo.full_name(),
            branch: queue.branch.clone(),
        }
    }
}

/// The figures of a queue at `now`.
pub fn figures(facts: &QueueFacts, now: Timestamp) -> QueueFigures {
    let snapshot = &facts.snapshot;
    let queue = &snapshot.queue;
    let window = Window::last_hour(queue, now);
    let history = &facts.history;
    let [main, bisection] = lanes(facts, window);
    QueueFigures {
        repo: queue.repo.full_name(),
        branch: queue.branch.clone(),
        state: queue.state,
        depth: count(snapshot.entries.iter().filter(|e| is_queued(e))),
        awaiting_mergeability: count(
            snapshot
                .entries
                .iter()
                .filter(|e| e.state == EntryState::NotReady),
        ),
        effects_pending: count(snapshot.outbox.iter()),
        entries_stuck: count(stuck_entries(snapshot, now).into_iter()),
        restarts: history
            .restarts
            .iter()
            .filter(|r| window.contains(r.at))
            .map(|r| u64::from(r.count))
            .sum(),
        wait_seconds: wait_seconds(snapshot, history, window),
        main,
        bisection,
        outcomes: outcomes(&history.concluded, window),
    }
}

/// In the queue proper: active and past readiness.
fn is_queued(entry: &Entry) -> bool {
    entry.state.is_active() && entry.state != EntryState::NotReady
}

fn count<T>(items: impl Iterator<Item = T>) -> u64 {
    items.count() as u64
}

fn seconds(from: Timestamp, to: Timestamp) -> f64 {
    to.millis_since(from) as f64 / 1000.0
}

/// The main lane's figures and the bisection lane's, from one pass over the runs.
fn lanes(facts: &QueueFacts, window: Window) -> [LaneFigures; 2] {
    let config = &facts.snapshot.queue.config;
    let mut lanes = [RunKind::Main, RunKind::Bisection].map(|kind| LaneFigures {
        runs_limit: u64::from(match kind {
            RunKind::Main => config.concurrency,
            RunKind::Bisection => config.bisection_concurrency,
        }),
        ..LaneFigures::default()
    });
    let lane = |kind| match kind {
        RunKind::Main => 0,
        RunKind::Bisection => 1,
    };
    // A held run (a restart waiting for a slot) is not in flight.
    let in_flight = |r: &&TestRun| !r.is_finished() && !r.held;
    for run in facts.snapshot.runs.iter().filter(in_flight) {
        let figures = &mut lanes[lane(run.kind)];
        figures.runs_active += 1;
        figures.prs_testing += run.tested.len() as u64;
    }
    for run in facts.runs_finished_in(window) {
        let figures = &mut lanes[lane(run.kind)];
        if let Some(i) = finished_index(run.status) {
            figures.runs_finished[i] += 1;
        }
        if let Some(tested) = tested_seconds(run) {
            figures.test_seconds.observe_times(tested, run.tested.len());
        }
    }
    lanes
}

/// How long a run that ran to a verdict of its tests tested, start (or creation, when no start
/// was recorded) to result: `None` for a run that never reached CI (a conflict, a branch the
/// host would not build, no required statuses).
pub(crate) fn tested_seconds(run: &TestRun) -> Option<f64> {
    if !ran_to_verdict(run) {
        return None;
    }
    Some(seconds(
        run.started_at.unwrap_or(run.created_at),
        run.finished_at?,
    ))
}

/// Whether a run ran to a verdict of its tests: it passed, or its tests failed or timed out.
/// A run that failed before CI could run (`merge_conflict`, `test_branch_error`,
/// `no_required_statuses`, `test_branch_pushed`) did not.
pub fn ran_to_verdict(run: &TestRun) -> bool {
    match run.status {
        RunStatus::Succeeded => true,
        RunStatus::Failed => run
            .reason
            .as_deref()
            .is_none_or(|r| r == reason::TESTS_FAILED || r == reason::TIMEOUT),
        RunStatus::InProgress | RunStatus::Cancelled => false,
    }
}

fn outcomes(concluded: &[Entry], window: Window) -> [OutcomeFigures; 3] {
    let mut outcomes: [OutcomeFigures; 3] = Default::default();
    for entry in concluded {
        let Some(outcome) = Outcome::of(entry.state) else {
            continue;
        };
        let Some(at) = entry.concluded_at.filter(|t| window.contains(*t)) else {
            continue;
        };
        let figures = &mut outcomes[outcome.index()];
        figures.count += 1;
        let in_queue = seconds(entry.submitted_at, at);
        figures.time_in_queue_seconds.observe(in_queue);
        figures.ci_runs.observe(f64::from(entry.ci_runs));
    }
    outcomes
}

/// Waits of the entries, active or concluded, whose first test started in the window.
fn wait_seconds(snapshot: &QueueSnapshot, history: &History, window: Window) -> Durations {
    // The snapshot and the history are read separately: an entry concluded in between is in
    // both, and counts once.
    let mut concluded: Vec<u64> = history.concluded.iter().map(|e| e.seq).collect();
    concluded.sort_unstable();
    let active = snapshot
        .entries
        .iter()
        .filter(|e| concluded.binary_search(&e.seq).is_err())
        .map(|e| (e.ready_at, e.submitted_at, e.first_tested_at));
    let concluded = history
        .concluded
        .iter()
        .map(|e| (e.ready_at, e.submitted_at, e.first_tested_at));
    let mut waits = Durations::default();
    for (ready, submitted, first_tested) in active.chain(concluded) {
        if let Some(tested) = first_tested.filter(|t| window.contains(*t)) {
            waits.observe(seconds(ready.unwrap_or(submitted), tested));
        }
    }
    waits
}

mod histogram;

#[cfg(test)]
mod tests;
