//! The bodies of the read-only operations the dashboard pages call (`listQueues`,
//! `getQueueActivity`, `getPullRequestHistory` in `openapi/openapi.json`), with their field
//! names. `getQueueActivity` takes a [`QueueRequest`](crate::QueueRequest) and
//! `getPullRequestHistory` a [`PrRequest`](crate::PrRequest).

use super::common::RepoBody;
use super::pull_request::SubmittedPullRequest;
use super::queue::QueueView;
use mq_core::DomainError;
use mq_core::entry::{Conclusion, EntryState};
use mq_core::health::{Outcome, ResultRecord};
use mq_core::ids::RepoRef;
use mq_core::run::{RunKind, RunStatus};
use mq_core::settings::{QueueMode, QueueState};
use serde::{Deserialize, Serialize};

/// The body of `listQueues`: every queue of the caller's organisation, or its queues on
/// `repo`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ListQueuesRequest {
    pub repo: Option<RepoBody>,
}

impl ListQueuesRequest {
    /// The repository the list is narrowed to, validated.
    pub fn repo(&self) -> Result<Option<RepoRef>, DomainError> {
        self.repo.as_ref().map(RepoBody::to_ref).transpose()
    }
}

/// The `listQueues` response.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueueList {
    /// The caller's organisation (the token's): the `org_url_slug` of its test-health
    /// requests.
    pub organisation: String,
    pub queues: Vec<QueueSummary>,
    /// Queues that could not be read just now (the service logs why), ordered like
    /// `queues`: they are not in `queues`.
    #[serde(rename = "unreadableQueues")]
    pub unreadable_queues: Vec<UnreadableQueue>,
}

/// A queue `listQueues` could not read.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnreadableQueue {
    pub repo: RepoRef,
    pub target_branch: String,
}

/// One queue of `listQueues` (`QueueSummary`): where it stands now and its last hour.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueSummary {
    pub repo: RepoRef,
    pub target_branch: String,
    pub state: QueueState,
    pub mode: QueueMode,
    /// Pull requests in the queue, not counting `not_ready` ones.
    pub depth: u64,
    /// Pull requests in `not_ready`.
    pub awaiting_mergeability: u64,
    /// Pull requests under test in runs in flight.
    pub testing: u64,
    /// Runs in flight, main and bisection.
    pub runs_in_flight: u64,
    pub concurrency: u32,
    pub merged_last_hour: u64,
    pub failed_last_hour: u64,
    pub cancelled_last_hour: u64,
    /// Pull requests that should have moved and did not (`stuck` in `getQueue`).
    pub stuck: u64,
}

/// A link to a run's CI: a commit status or a check run on its test branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CiLink {
    /// The status's context or the check run's name.
    pub name: String,
    pub url: String,
    /// The status's state (`pending`, `success`, `failure`, `error`), or the check run's
    /// conclusion once it has one, else its status.
    pub state: String,
}

/// A pull request as a group of the line tests it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupPullRequest {
    pub pr_number: u32,
    pub pr_title: String,
    pub pr_url: String,
    /// The state of its entry; absent when it already left the queue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<EntryState>,
}

/// A group of the line (a main run) or a bisection run: what its test branch holds and how
/// its run is doing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LineGroup {
    pub test_run_id: String,
    pub kind: RunKind,
    pub status: RunStatus,
    /// A restart waiting for a free testing slot: its branch is not built yet.
    pub held: bool,
    pub test_branch: String,
    /// Empty until the branch exists.
    pub test_branch_sha: String,
    /// The pull requests the run tests, in branch order (one for a group of one, several for a
    /// batch).
    pub pull_requests: Vec<GroupPullRequest>,
    /// Pull requests ahead merged into the branch to form its base, not tested by it.
    pub dependent_prs: Vec<u32>,
    pub created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// Seconds since the run started (or was created, before its branch exists).
    pub age_seconds: u64,
    pub ci: Vec<CiLink>,
    /// Why it failed or was cancelled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// For a bisection run: the failed run whose batch it splits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bisection_of: Option<String>,
}

/// A pull request waiting to be tested, in the order the queue takes them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WaitingPullRequest {
    /// 1 for the next to start.
    pub position: u32,
    pub pr_number: u32,
    pub pr_title: String,
    pub pr_url: String,
    pub pr_author: String,
    /// `pending`, or `not_ready` while it waits for its pull request to be ready.
    pub state: EntryState,
    pub priority_value: u8,
    pub priority_name: String,
    pub no_batch: bool,
    pub submitted_at: String,
    /// Seconds since it was submitted.
    pub waiting_seconds: u64,
    pub stuck: bool,
    /// Seconds until it is expected to merge (docs/queue-semantics.md §12); absent for a
    /// `not_ready` pull request, a queue that is not running, or without recent runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimated_merge_seconds: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimated_merge_at: Option<String>,
}

/// What the estimates are computed from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EstimateBasis {
    /// Main runs that ran to a verdict in the last hour: passed, or their tests failed or timed
    /// out.
    pub runs: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_test_seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_rate: Option<f64>,
    pub concurrency: u32,
    /// Pull requests per group: `batchingMinSize` with batching, else 1.
    pub batch_size: u32,
}

/// A pull request that left the queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConclusionView {
    pub pr_number: u32,
    pub pr_title: String,
    pub pr_url: String,
    /// `merged`, `failed` or `cancelled`.
    pub state: EntryState,
    /// Why it failed or was cancelled (`tests_failed`, `merge_conflict`, `cancelled_by_api`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The sentence of its comment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    pub concluded_at: String,
    /// Submission to conclusion.
    pub time_in_queue_seconds: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_run_id: Option<String>,
}

/// A histogram of the last hour: per bucket how many (not cumulative), the last count being
/// above every bound.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistogramView {
    /// Upper bounds, in seconds.
    pub bounds: Vec<f64>,
    /// One more than `bounds`: the observations in each bucket, then those above every bound.
    pub counts: Vec<u64>,
    pub count: u64,
    pub sum: f64,
}

/// The last hour's histograms (the `mq_pr_*_1h_seconds` metrics).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Histograms {
    /// Ready to first test.
    pub wait_seconds: HistogramView,
    /// Run start to result, per pull request of each run.
    pub test_seconds: HistogramView,
    /// Submission to conclusion, every conclusion.
    pub time_in_queue_seconds: HistogramView,
}

/// The `getQueueActivity` response.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueActivity {
    pub repo: RepoRef,
    pub queue: QueueView,
    /// When the answer was computed: ages and estimates count from it.
    pub generated_at: String,
    /// The groups of the line, front first, then bisection runs.
    pub line: Vec<LineGroup>,
    pub waiting: Vec<WaitingPullRequest>,
    pub estimate: EstimateBasis,
    /// The last hour's conclusions, newest first.
    pub conclusions: Vec<ConclusionView>,
    pub histograms: Histograms,
}

/// A change of a submission's state, rebuilt from what is recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StateChangeView {
    pub state: EntryState,
    pub at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_run_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A run a pull request was part of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    pub test_run_id: String,
    pub kind: RunKind,
    pub status: RunStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub test_branch: String,
    pub created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    pub tested_prs: Vec<u32>,
    pub dependent_prs: Vec<u32>,
    pub ci: Vec<CiLink>,
}

/// The `getPullRequestHistory` response: the latest submission of a pull request, its state
/// history and the runs it was part of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PullRequestHistory {
    pub pull_request: SubmittedPullRequest,
    pub pr_url: String,
    pub submitted_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concluded_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conclusion: Option<Conclusion>,
    pub restarts: u32,
    pub ci_runs: u32,
    /// Oldest first.
    pub states: Vec<StateChangeView>,
    /// The runs that tested it (bisection runs included), oldest first.
    pub runs: Vec<RunSummary>,
}

/// One of a test case's recent results, for the strip of the test-health page (an item of
/// `recent_results` in `UnhealthyTest` and `QuarantinedTest`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecentResult {
    /// `passed`, `passed_on_retry` (failed, then passed on a retry) or `failed`.
    pub outcome: &'static str,
    pub at: String,
    /// The commit, shortened to 12 characters.
    pub commit: String,
    /// Uploaded from a stable branch.
    pub stable_branch: bool,
}

/// A test case's kept results (oldest first, at most the history the rules keep), as
/// `recent_results` lists them.
pub fn recent_results(history: &[ResultRecord]) -> Vec<RecentResult> {
    history
        .iter()
        .map(|r| RecentResult {
            outcome: match r.outcome {
                Outcome::Passed => "passed",
                Outcome::PassedOnRetry => "passed_on_retry",
                Outcome::Failed | Outcome::FailedAfterPass => "failed",
            },
            at: r.at.to_rfc3339(),
            commit: r.commit.clone(),
            stable_branch: r.stable,
        })
        .collect()
}
