//! What the API shows of a queue, as plain data (the JSON shape belongs to `shared/wire`):
//! the order of `enqueuedPullRequests`, a submitted pull request with its readiness
//! (`SubmittedPullRequest` in `openapi/openapi.json`) and a test run as
//! `getMergeQueueTestingDetails` describes it (`TestingDetails` in `openapi/openapi.json`).

use super::line::line_of;
use crate::entry::{Entry, EntryState};
use crate::git::RequiredStatusesSource;
use crate::ids::{PrNumber, RepoRef};
use crate::run::{RunStatus, TestRun};
use crate::settings::{QueueMode, QueueState};
use crate::snapshot::{Queue, QueueSnapshot};
use crate::time::Timestamp;
use std::borrow::Cow;
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
/// nothing by design, and pending entries of a queue that is not running wait for it: neither
/// is stuck. The tick warns about each; the metrics count them; `getQueue` marks them.
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
    snapshot
        .entries
        .iter()
        .filter(|e| e.state != EntryState::NotReady)
        .filter(|e| running || e.state != EntryState::Pending)
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

/// The readiness object of `getSubmittedPullRequest` (`SubmittedPullRequest` in
/// `openapi/openapi.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadinessView {
    pub requires_impacted_targets: bool,
    pub does_base_branch_match: bool,
    pub has_impacted_targets: bool,
}

/// A submitted pull request (`EnqueuedPullRequest`, `SubmittedPullRequest` in
/// `openapi/openapi.json`), borrowing from its entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequestView<'a> {
    pub id: &'a str,
    pub state: EntryState,
    pub state_changed_at: Timestamp,
    pub priority_value: u8,
    pub priority_name: Cow<'static, str>,
    /// True for `urgent` (value 0).
    pub skip_the_line: bool,
    pub force_enqueued: bool,
    pub no_batch: bool,
    pub is_currently_submitted_to_queue: bool,
    pub pr_number: PrNumber,
    pub pr_title: &'a str,
    pub pr_sha: &'a str,
    pub pr_base_branch: &'a str,
    pub pr_author: &'a str,
    pub readiness: ReadinessView,
    /// `medium` when the submission gave no priority.
    pub used_default_priority_name: Option<Cow<'static, str>>,
    /// The run testing the pull request now, or the last one that did.
    pub test_run_id: Option<&'a str>,
}

/// An entry, active or concluded, as `getSubmittedPullRequest` shows it.
pub fn pull_request<'a>(queue: &Queue, entry: &'a Entry) -> PullRequestView<'a> {
    let parallel = queue.config.mode == QueueMode::Parallel;
    let r = entry.readiness(&queue.branch, parallel);
    PullRequestView {
        id: &entry.id,
        state: entry.state,
        state_changed_at: entry.state_changed_at,
        priority_value: entry.priority.value,
        priority_name: entry.priority.name(),
        skip_the_line: entry.priority.is_urgent(),
        force_enqueued: entry.force_enqueued,
        no_batch: entry.no_batch,
        is_currently_submitted_to_queue: entry.state.is_active(),
        pr_number: entry.pr,
        pr_title: &entry.pr_facts.title,
        pr_sha: entry.pr_facts.head_sha.as_str(),
        pr_base_branch: &entry.pr_facts.base_branch,
        pr_author: &entry.pr_facts.author,
        readiness: ReadinessView {
            requires_impacted_targets: r.requires_impacted_targets,
            does_base_branch_match: r.does_base_branch_match,
            has_impacted_targets: r.has_impacted_targets,
        },
        used_default_priority_name: entry.priority.defaulted.then(|| entry.priority.name()),
        test_run_id: entry.current_run.as_deref().or(entry.last_run.as_deref()),
    }
}

/// A check run on a test branch: `{name, url}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRunLink {
    pub name: String,
    pub url: String,
}

/// A check suite on a test branch, with its check runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckSuiteView {
    pub check_runs: Vec<CheckRunLink>,
}

/// A commit status on a test branch: `{context, url}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusLink {
    pub context: String,
    pub url: String,
}

/// A pull request tested by a run: `{prNumber, prUrl, title}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestedPullRequest {
    pub pr_number: PrNumber,
    pub pr_url: String,
    pub title: String,
}

/// A test run as `getMergeQueueTestingDetails` describes it (`TestingDetails` in
/// `openapi/openapi.json`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestRunView {
    pub required_statuses: Vec<String>,
    pub test_branch: String,
    /// Empty until the branch exists.
    pub test_branch_sha: String,
    pub check_suites: Vec<CheckSuiteView>,
    pub status_checks: Vec<StatusLink>,
    pub tested_pull_requests: Vec<TestedPullRequest>,
    pub required_statuses_source: Option<RequiredStatusesSource>,
    pub created_at: Timestamp,
    pub status: RunStatus,
    /// Present when impacted targets are uploaded for a pull request in the branch.
    pub impacted_targets: Option<Vec<String>>,
    pub impacted_targets_for_tested_prs: Option<Vec<String>>,
    /// Pull requests ahead merged into the branch to form its base, not tested by it.
    pub dependent_prs: Vec<PrNumber>,
}

/// A run of `queue`, active or finished.
pub fn test_run(queue: &Queue, run: &TestRun) -> TestRunView {
    let (required_statuses, source) = match &run.required {
        Some(r) => (r.contexts.clone(), r.source),
        None if !queue.config.required_statuses.is_empty() => (
            queue.config.required_statuses.clone(),
            Some(RequiredStatusesSource::MergeInstance),
        ),
        None => (Vec::new(), None),
    };
    TestRunView {
        required_statuses,
        test_branch: run.branch.clone(),
        test_branch_sha: test_branch_sha(run),
        check_suites: check_suites(run),
        status_checks: run
            .statuses
            .iter()
            .map(|s| StatusLink {
                context: s.context.clone(),
                url: s.url.clone(),
            })
            .collect(),
        tested_pull_requests: run
            .tested
            .iter()
            .map(|t| TestedPullRequest {
                pr_number: t.pr,
                pr_url: pr_url(&queue.repo, t.pr),
                title: t.title.clone(),
            })
            .collect(),
        required_statuses_source: source,
        created_at: run.created_at,
        status: run.status,
        impacted_targets: run.impacted_targets.clone(),
        impacted_targets_for_tested_prs: run.impacted_targets_for_tested_prs.clone(),
        dependent_prs: run.dependent_prs.clone(),
    }
}

/// The tip of a run's test branch; empty until the branch exists.
pub fn test_branch_sha(run: &TestRun) -> String {
    run.sha
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default()
}

/// Check runs grouped by suite, suites in the order first seen.
fn check_suites(run: &TestRun) -> Vec<CheckSuiteView> {
    let mut order: Vec<u64> = Vec::new();
    let mut suites: BTreeMap<u64, Vec<CheckRunLink>> = BTreeMap::new();
    for c in &run.check_runs {
        if !order.contains(&c.suite_id) {
            order.push(c.suite_id);
        }
        suites.entry(c.suite_id).or_default().push(CheckRunLink {
            name: c.name.clone(),
            url: c.url.clone(),
        });
    }
    order
        .into_iter()
        .map(|id| CheckSuiteView {
            check_runs: suites.remove(&id).unwrap_or_default(),
        })
        .collect()
}

/// The web address of a pull request: `https://<host>/<owner>/<name>/pull/<number>`.
pub fn pr_url(repo: &RepoRef, pr: PrNumber) -> String {
    format!(
        "https://{}/{}/{}/pull/{pr}",
        repo.host, repo.owner, repo.name
    )
}
