//! Test runs: a test branch holding one or more pull requests on a predicted base.

use crate::git::{CheckRunReport, RequiredStatuses, StatusReport};
use crate::ids::{PrNumber, Sha};
use crate::time::Timestamp;
use crate::wire_enum;
use serde::{Deserialize, Serialize};

wire_enum! {
    /// A test run's status (spec §3.3).
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
    /// The target commit the branch starts from, once known.
    #[serde(default)]
    pub base_sha: Option<Sha>,
    /// The tip of the test branch, once created.
    #[serde(default)]
    pub sha: Option<Sha>,
    /// Resolved when the branch is created (or from the queue's own list).
    #[serde(default)]
    pub required: Option<RequiredStatuses>,
    #[serde(default)]
    pub statuses: Vec<StatusReport>,
    #[serde(default)]
    pub check_runs: Vec<CheckRunReport>,
    /// Union of impacted targets over every PR in the branch, dependents included.
    #[serde(default)]
    pub impacted_targets: Option<Vec<String>>,
    /// Impacted targets of the tested PRs only.
    #[serde(default)]
    pub impacted_targets_for_tested_prs: Option<Vec<String>>,
    /// When testing started (branch created) and finished.
    #[serde(default)]
    pub started_at: Option<Timestamp>,
    #[serde(default)]
    pub finished_at: Option<Timestamp>,
    /// Why the run failed or was cancelled: `tests_failed`, `timeout`, `restart`, ...
    #[serde(default)]
    pub reason: Option<String>,
}

impl TestRun {
    pub fn is_finished(&self) -> bool {
        self.status != RunStatus::InProgress
    }
}
