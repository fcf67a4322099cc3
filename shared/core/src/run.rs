//! Test runs: a test branch holding one or more pull requests on a predicted base.

use crate::git::{CheckRunReport, RequiredStatuses, StatusReport};
use crate::ids::{PrNumber, Sha};
use crate::time::Timestamp;
use crate::wire_enum;
use serde::{Deserialize, Serialize};

/// Most bytes of target names a run keeps in each of its two lists: the run is one DynamoDB
/// item (400 KB at most), and a lane of many pull requests may name far more together.
pub const MAX_RUN_TARGETS_BYTES: usize = 64 * 1024;

wire_enum! {
    /// A test run's status (the run statuses in `openapi/openapi.json`).
    pub enum RunStatus {
        InProgress => "in_progress",
        Succeeded => "succeeded",
        Failed => "failed",
        Cancelled => "cancelled",
    }
}

wire_enum! {
    /// A run of the main line, or a bisection split of a failed batch.
    pub enum RunKind {
        Main => "main",
        Bisection => "bisection",
    }
}

/// Where a group stands in the line (docs/queue-semantics.md §3): urgent groups first, then in the
/// order the groups joined. A group keeps its place when it restarts.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
pub struct LinePlace {
    /// [`LinePlace::URGENT`] or [`LinePlace::NORMAL`].
    pub class: u8,
    /// When the group joined the line (a counter of the queue).
    pub seq: u64,
}

impl LinePlace {
    pub const URGENT: u8 = 0;
    pub const NORMAL: u8 = 1;
}

/// A pull request as it goes into a test branch or a merge: number, tested head, and how its
/// merge commit is written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchPr {
    pub pr: PrNumber,
    pub head_sha: Sha,
    pub title: String,
    /// `None` for a direct merge, and in effects stored before stamps existed: the host then
    /// writes the merge commit with its own date.
    pub stamp: Option<MergeStamp>,
}

impl BranchPr {
    pub fn stamped(self, stamp: MergeStamp) -> Self {
        Self {
            stamp: Some(stamp),
            ..self
        }
    }
}

/// What makes a pull request's merge commit in a test branch the same commit in every test
/// branch that holds it on the same parent: the run of its group whose build wrote it, and
/// that build's time. The host writes the commit's message (with the run id as a trailer),
/// author, committer and dates from the pull request and its stamp alone, so the test branch
/// of a group behind holds the very commits the group ahead tested, and under `merge_commit`
/// the target can be fast-forwarded from one tested commit to the next. A new build of a
/// group (a restart) has a new run id, so its tip is a commit no earlier build made and CI
/// results on an earlier commit are never taken for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeStamp {
    pub run_id: String,
    pub at: Timestamp,
}

/// A pull request under test in a run, as `testedPullRequests` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestedPr {
    pub entry_id: String,
    pub pr: PrNumber,
    pub title: String,
    pub head_sha: Sha,
}

/// One test run of a queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestRun {
    /// Unique within the queue; bisection runs carry `-bisection` in the id.
    pub id: String,
    pub kind: RunKind,
    /// `<prefix>/<target branch>/<run id>`.
    pub branch: String,
    pub status: RunStatus,
    pub created_at: Timestamp,
    /// The pull requests tested, in the order they are merged into the branch.
    pub tested: Vec<TestedPr>,
    /// Pull requests ahead merged into the branch to form its base but not tested by it.
    #[serde(default)]
    pub dependent_prs: Vec<PrNumber>,
    /// What the branch holds on top of its base, in order, as last requested from the host:
    /// `dependent_prs` then `tested`, each with the stamp of its merge commit.
    #[serde(default)]
    pub chain: Vec<BranchPr>,
    /// The target commit the branch starts from, once known.
    pub base_sha: Option<Sha>,
    /// The tip of the test branch, once created.
    pub sha: Option<Sha>,
    /// Resolved when the branch is created (or from the queue's own list).
    pub required: Option<RequiredStatuses>,
    #[serde(default)]
    pub statuses: Vec<StatusReport>,
    #[serde(default)]
    pub check_runs: Vec<CheckRunReport>,
    /// Union of impacted targets over every PR in the branch, dependents included; `["ALL"]`
    /// when a PR impacts everything, or when the names would be over [`MAX_RUN_TARGETS_BYTES`].
    pub impacted_targets: Option<Vec<String>>,
    /// Impacted targets of the tested PRs only.
    pub impacted_targets_for_tested_prs: Option<Vec<String>>,
    /// When testing started (branch created) and finished.
    pub started_at: Option<Timestamp>,
    pub finished_at: Option<Timestamp>,
    /// Why the run failed or was cancelled: `tests_failed`, `timeout`, `restart`, ...
    pub reason: Option<String>,
    /// The group's place in the line (main runs), or the failed group's (bisection runs).
    #[serde(default)]
    pub place: LinePlace,
    /// A restart asked for while every testing slot was busy: the branch is created when a
    /// slot frees.
    #[serde(default)]
    pub held: bool,
    /// The target received merges this run does not contain (parallel mode): its tested
    /// commit is no longer exactly the target's future state.
    #[serde(default)]
    pub diverged: bool,
    /// Commits someone else pushed onto the branch, each discarded by building the branch
    /// again (docs/queue-semantics.md §11).
    #[serde(default)]
    pub pushes_discarded: u32,
    /// A draft pull request was opened for the test branch and is not closed yet.
    #[serde(default)]
    pub test_pull_request: bool,
    /// For a bisection run: the id of the failed run whose batch it splits.
    pub bisection_of: Option<String>,
    /// What the Git host answered when the run's branch could not be built (`test_branch_error`),
    /// told to the pull requests that fail for it.
    #[serde(default)]
    pub host_error: Option<String>,
    /// When a held restart was created, kept when its release sets `created_at` anew (the
    /// testing timeout counts from the release): the stamp of its merge commits, which groups
    /// behind it built with while it was held. `None` when never held.
    #[serde(default)]
    pub stamped_at: Option<Timestamp>,
}

/// The search for the culprits of a failed batch (docs/queue-semantics.md §6), kept on the queue
/// item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bisection {
    /// The failed run of the batch.
    pub run_id: String,
    /// The batch's place in the line: splits are tested on what was ahead of it.
    pub place: LinePlace,
    /// Why the batch failed (`tests_failed`, `timeout`, ...): a culprit whose failure is
    /// implied from the batch's, without a run of its own, fails for it; one whose split
    /// failed fails for that split's reason.
    pub reason: String,
    /// Splits still to test or testing.
    pub splits: Vec<Split>,
    /// Sets of pull requests known to fail on this bisection's base, each sorted.
    #[serde(default)]
    pub failed_sets: Vec<Vec<PrNumber>>,
    /// The failed run's dependent pull requests: the groups ahead of the batch, all passed
    /// when it failed, less those since left behind (they cannot pass again soon). Splits are
    /// tested on those still in the queue, never on a group that came ahead later (an urgent
    /// one, a restart) and has not passed. `None` in a bisection
    /// stored without it: its splits are tested on the groups ahead of them when tested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependent_prs: Option<Vec<PrNumber>>,
}

/// One half of a failed set, tested by a bisection run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Split {
    /// The pull requests, in queue order.
    pub prs: Vec<PrNumber>,
    /// The other half of the same failed set.
    pub sibling: Vec<PrNumber>,
    /// The bisection run testing it; `None` while it waits for a bisection slot.
    pub run: Option<String>,
    /// Why the set it is half of failed, when that set is a split (`None`: the batch, which
    /// failed for the bisection's `reason`): a culprit implied without a run of its own fails
    /// for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_failed_for: Option<String>,
    /// Its run was testing when the base changed: it tests the old base, so its failure
    /// implies nothing (it is not a known failed set, and its halves imply nothing of each
    /// other).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub on_old_base: bool,
}

impl TestRun {
    pub fn is_finished(&self) -> bool {
        self.status != RunStatus::InProgress
    }

    /// The run without what most of its size is and only its own page shows: what CI reported
    /// on it, what it required, its impacted targets and its chain. What a read of many runs
    /// at once (the advisor's window) keeps of each.
    pub fn summary(mut self) -> Self {
        self.statuses = Vec::new();
        self.check_runs = Vec::new();
        self.chain = Vec::new();
        self.required = None;
        self.impacted_targets = None;
        self.impacted_targets_for_tested_prs = None;
        self.host_error = None;
        self.stamped_at = None;
        self
    }
}

impl TestRun {
    /// A main run `id` in progress on `mq-test/main/<id>`, created at time 0, testing nothing
    /// yet: the run of tests and benches, changed field by field where one needs another.
    #[cfg(any(test, feature = "testing"))]
    pub fn sample(id: &str) -> Self {
        TestRun {
            id: id.into(),
            kind: RunKind::Main,
            branch: format!("mq-test/main/{id}"),
            status: RunStatus::InProgress,
            created_at: Timestamp(0),
            tested: Vec::new(),
            dependent_prs: Vec::new(),
            chain: Vec::new(),
            base_sha: None,
            sha: None,
            required: None,
            statuses: Vec::new(),
            check_runs: Vec::new(),
            impacted_targets: None,
            impacted_targets_for_tested_prs: None,
            started_at: None,
            finished_at: None,
            reason: None,
            place: LinePlace::default(),
            held: false,
            diverged: false,
            pushes_discarded: 0,
            test_pull_request: false,
            bisection_of: None,
            host_error: None,
            stamped_at: None,
        }
    }
}
