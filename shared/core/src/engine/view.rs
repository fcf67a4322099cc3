//! The rules behind what the API shows of a queue (the JSON shapes are `shared/wire`'s, built
//! from the domain's types with these): the order of `enqueuedPullRequests`, entries that are
//! stuck, a pull request's readiness and run, the statuses a run waits for, its check runs by
//! suite, and the addresses of pull requests.

use super::line::line_of;
use crate::entry::{Entry, EntryState, Readiness};
use crate::git::{CheckRunReport, RequiredStatusesSource};
use crate::ids::{PrNumber, RepoRef};
use crate::run::{RunStatus, TestRun};
use crate::settings::{QueueMode, QueueState};
use crate::snapshot::{Queue, QueueSnapshot};
use crate::time::Timestamp;
use std::collections::BTreeMap;

/// Where an entry stands: (bucket, group in the line, position in the group).
type OrderKey = (u8, usize, usize);

/// Every active entry in the order the queue takes them: entries being merged directly,
/// then the groups of the line front first (each group's pull requests in branch order),
/// then entries being bisected, then pending entries, then `not_ready` ones; within the
/// last three, by priority value and submission.
pub fn queue_order(snapshot: &QueueSnapshot) -> Vec<&Entry> {
    let mut place: BTreeMap<PrNumber, OrderKey> = BTreeMap::new();
    for (g, run) in line_of(snapshot).into_iter().enumerate() {
        for (i, t) in run.tested.iter().enumerate() {
            place.entry(t.pr).or_insert((1, g, i));
        }
    }
    let bisecting = |pr: PrNumber| {
        snapshot
            .queue
            .engine
            .bisections
            .iter()
            .any(|b| b.splits.iter().any(|s| s.prs.contains(&pr)))
    };
    let mut entries: Vec<(OrderKey, u8, u64, &Entry)> = snapshot
        .entries
        .iter()
        .map(|e| {
            let key = place.get(&e.pr).copied().unwrap_or_else(|| {
                let bucket = match e.state {
                    EntryState::TestsPassed => 0,
                    EntryState::PendingFailure if bisecting(e.pr) => 2,
                    EntryState::NotReady => 4,
                    _ => 3,
                };
                (bucket, 0, 0)
            });
            (key, e.priority.value, e.seq, &**e)
        })
        .collect();
    entries.sort_by_key(|(key, priority, seq, _)| (*key, *priority, *seq));
    entries.into_iter().map(|(_, _, _, e)| e).collect()
}

/// Entries that should have moved and did not: in the queue (not `not_ready`, which waits for
/// its pull request) for longer than `testingTimeoutMinutes` (or the batching wait, if longer)
/// in the same state, while nothing that could move them is in flight: no run in progress
/// with a branch or one being built, no effect waiting to be carried out. A paused queue moves
/// nothing by design, and pending entries of a queue that is not running wait for it (but for
/// those a draining queue tests again, tested before: `Work::may_start`): neither is stuck.
/// The tick warns about each; the metrics count them; `getQueue` marks them.
pub fn stuck_entries(snapshot: &QueueSnapshot, now: Timestamp) -> Vec<PrNumber> {
    let queue = &snapshot.queue;
    if queue.mode_and_state().is_paused() || in_flight(snapshot) {
        return Vec::new();
    }
    let config = &queue.config;
    let mut limit = config.testing_timeout_minutes;
    if config.batch {
        limit = limit.max(config.batching_max_wait_time_minutes);
    }
    let running = queue.state == QueueState::Running;
    let draining = queue.state == QueueState::Draining;
    let may_move = |e: &Entry| {
        e.state != EntryState::Pending || running || (draining && e.first_tested_at.is_some())
    };
    snapshot
        .entries
        .iter()
        .filter(|e| e.state != EntryState::NotReady)
        .filter(|e| may_move(e))
        .filter(|e| now >= e.state_changed_at.plus_minutes(limit))
        .map(|e| e.pr)
        .collect()
}

/// Whether anything that moves a queue is under way: a run in progress with a branch (or held
/// for a slot), or an effect waiting to be carried out.
fn in_flight(snapshot: &QueueSnapshot) -> bool {
    let runs = snapshot
        .runs
        .iter()
        .any(|r| r.status == RunStatus::InProgress && (r.sha.is_some() || r.held));
    runs || snapshot.outbox.iter().any(|x| !x.held)
}

/// The readiness of an entry in `queue` (`SubmittedPullRequest.readiness` in
/// `openapi/openapi.json`): impacted targets are required in parallel mode.
pub fn readiness(queue: &Queue, entry: &Entry) -> Readiness {
    let parallel = queue.config.mode == QueueMode::Parallel;
    entry.readiness(&queue.branch, parallel)
}

/// The run testing an entry now, or the last one that did (`testRunId`).
pub fn test_run_id(entry: &Entry) -> Option<&str> {
    entry.current_run.as_deref().or(entry.last_run.as_deref())
}

/// The statuses a run of `queue` waits for, and where they came from: resolved when its
/// branch was created; before that, the queue's own list if it has one (the repository's
/// sources are read with the branch), else none yet.
pub fn required_statuses(
    queue: &Queue,
    run: &TestRun,
) -> (Vec<String>, Option<RequiredStatusesSource>) {
    match &run.required {
        Some(r) => (r.contexts.clone(), r.source),
        None if !queue.config.required_statuses.is_empty() => (
            queue.config.required_statuses.clone(),
            Some(RequiredStatusesSource::MergeInstance),
        ),
        None => (Vec::new(), None),
    }
}

/// The tip of a run's test branch; empty until the branch exists.
pub fn test_branch_sha(run: &TestRun) -> String {
    run.sha
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default()
}

/// A run's check runs grouped by suite, suites in the order first seen.
pub fn check_suites(run: &TestRun) -> Vec<Vec<&CheckRunReport>> {
    let mut order: Vec<u64> = Vec::new();
    let mut suites: BTreeMap<u64, Vec<&CheckRunReport>> = BTreeMap::new();
    for c in &run.check_runs {
        if !order.contains(&c.suite_id) {
            order.push(c.suite_id);
        }
        suites.entry(c.suite_id).or_default().push(c);
    }
    order
        .into_iter()
        .map(|id| suites.remove(&id).unwrap_or_default())
        .collect()
}

/// The web address of a pull request: `https://<host>/<owner>/<name>/pull/<number>`.
pub fn pr_url(repo: &RepoRef, pr: PrNumber) -> String {
    format!(
        "https://{}/{}/{}/pull/{pr}",
        repo.host, repo.owner, repo.name
    )
}
