//! Facts about the Git host, in the domain's words: what a pull request looks like, what CI
//! reported on a commit, where required statuses come from.

use crate::ids::{PrNumber, Sha};
use crate::time::Timestamp;
use crate::wire_enum;
use serde::{Deserialize, Serialize};

wire_enum! {
    /// Whether the Git host can merge a pull request into its base.
    pub enum Mergeability {
        Unspecified => "unspecified",
        InProgress => "in_progress",
        Mergeable => "mergeable",
        NotMergeable => "not_mergeable",
    }
}

wire_enum! {
    pub enum PrState {
        Open => "open",
        Closed => "closed",
        Merged => "merged",
    }
}

wire_enum! {
    /// What the target branch's review rules say of a pull request (on GitHub, its
    /// `reviewDecision`, which weighs required approvals, code owners and requested changes,
    /// from branch protection and rulesets alike).
    pub enum Review {
        /// Approved as the rules require, or the rules require no review.
        Approved => "approved",
        /// Reviews the rules require are missing.
        Required => "review_required",
        /// A reviewer asked for changes.
        ChangesRequested => "changes_requested",
    }
}

impl Default for Review {
    /// What facts without a review say (stored before reviews were read, or rewritten by a
    /// version that does not know them): not known to be approved. Such an entry waits, and
    /// the tick reads its pull request again.
    fn default() -> Self {
        Review::Required
    }
}

/// What the Git host says about a pull request right now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrFacts {
    pub number: PrNumber,
    pub title: String,
    pub author: String,
    pub head_sha: Sha,
    pub base_branch: String,
    pub state: PrState,
    pub mergeability: Mergeability,
    /// True when the head already contains the target branch's head (for direct merge).
    pub based_on_target_head: bool,
    /// True for draft pull requests, which are not ready to merge.
    #[serde(default)]
    pub draft: bool,
    /// What the review rules say of it; only an approved one (or one the rules ask no review
    /// of) is ready to merge.
    #[serde(default)]
    pub review: Review,
}

impl PrFacts {
    /// Whether the pull request itself is ready to merge, whatever the queue: not a draft,
    /// and approved as the target branch's review rules require. The queue moves the target
    /// itself (its account bypasses the rule that changes arrive through reviewed pull
    /// requests), so it keeps that rule in the branch's stead.
    pub fn ready_to_merge(&self) -> bool {
        !self.draft && self.review == Review::Approved
    }
}

impl PrFacts {
    /// Pull request `number` (`Change <number>` by `octocat`, head `<number>` in 40 hex
    /// digits), open, mergeable and not a draft, into `main`: the pull request of tests and
    /// benches, changed field by field where one needs another.
    #[cfg(any(test, feature = "testing"))]
    pub fn sample(number: PrNumber) -> Self {
        Self {
            number,
            title: format!("Change {number}"),
            author: "octocat".into(),
            head_sha: Sha::new(format!("{number:040x}")),
            base_branch: "main".into(),
            state: PrState::Open,
            mergeability: Mergeability::Mergeable,
            based_on_target_head: false,
            draft: false,
            review: Review::Approved,
        }
    }
}

wire_enum! {
    /// Where a run's required statuses came from (`TestingDetails` in `openapi/openapi.json`
    /// `requiredStatusesSource`).
    pub enum RequiredStatusesSource {
        ServiceConfig => "service_config",
        RepoProviderBranchProtection => "repo_provider_branch_protection",
        MergeInstance => "merge_instance",
    }
}

/// The context of the status check the queue sets on pull request heads (and on a tested
/// commit it merges). It is never one a test run waits for: the queue sets it on no test
/// branch.
pub const QUEUE_STATUS_CONTEXT: &str = "merge-queue";

/// The statuses that must pass, and where the list came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequiredStatuses {
    pub contexts: Vec<String>,
    /// `None` when no source gave a list.
    pub source: Option<RequiredStatusesSource>,
}

wire_enum! {
    /// A commit status's state, as GitHub's statuses API spells it.
    pub enum StatusState {
        Pending => "pending",
        Success => "success",
        Failure => "failure",
        Error => "error",
    }
}

wire_enum! {
    /// A check run's progress.
    pub enum CheckStatus {
        Queued => "queued",
        InProgress => "in_progress",
        Completed => "completed",
        Waiting => "waiting",
        Requested => "requested",
        Pending => "pending",
    }
}

wire_enum! {
    /// A completed check run's conclusion.
    pub enum CheckConclusion {
        Success => "success",
        Failure => "failure",
        Neutral => "neutral",
        Cancelled => "cancelled",
        Skipped => "skipped",
        TimedOut => "timed_out",
        ActionRequired => "action_required",
        Stale => "stale",
        StartupFailure => "startup_failure",
    }
}

/// One commit status reported on a commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusReport {
    pub context: String,
    pub state: StatusState,
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub description: String,
    pub updated_at: Timestamp,
}

/// One check run reported on a commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRunReport {
    pub id: u64,
    pub name: String,
    pub status: CheckStatus,
    pub conclusion: Option<CheckConclusion>,
    #[serde(default)]
    pub url: String,
    /// The check suite the run belongs to (0 when the host does not say).
    #[serde(default)]
    pub suite_id: u64,
    pub updated_at: Timestamp,
}

/// The outcome of one required status, folded from statuses and check runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    Pending,
    Passed,
    Failed,
}

impl StatusState {
    pub const fn verdict(self) -> Verdict {
        match self {
            StatusState::Pending => Verdict::Pending,
            StatusState::Success => Verdict::Passed,
            StatusState::Failure | StatusState::Error => Verdict::Failed,
        }
    }
}

impl CheckRunReport {
    /// `success`, `neutral` and `skipped` pass; other conclusions fail; no conclusion yet is
    /// pending.
    pub fn verdict(&self) -> Verdict {
        match (self.status, self.conclusion) {
            (CheckStatus::Completed, Some(c)) => match c {
                CheckConclusion::Success | CheckConclusion::Neutral | CheckConclusion::Skipped => {
                    Verdict::Passed
                }
                _ => Verdict::Failed,
            },
            _ => Verdict::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Facts stored before reviews were read (or rewritten by a version that does not know
    /// them) are not taken as approved: the entry waits, and the tick reads it again.
    #[test]
    fn facts_without_a_review_are_not_approved() {
        let mut stored = serde_json::to_value(PrFacts::sample(1)).unwrap();
        stored.as_object_mut().unwrap().remove("review");
        let read: PrFacts = serde_json::from_value(stored).unwrap();
        assert_eq!(read.review, Review::Required);
        assert!(!read.ready_to_merge());
    }
}
