//! The Git host port: every read and write the queue needs, in the domain's words.
//!
//! Every write is idempotent when repeated with the same arguments: test branches are named
//! by run id (re-creating one yields the same outcome), merges carry the expected target sha,
//! comments are updated in place, statuses overwrite by context.

use crate::error::HostResult;
use async_trait::async_trait;
use mq_core::engine::BranchPr;
use mq_core::git::{
    CheckRunReport, PrFacts, PrState, RequiredStatuses, Review, StatusReport, StatusState,
};
use mq_core::ids::{PrNumber, RepoRef, Sha};
use mq_core::settings::MergeMethod;

/// A test branch to create: `base` plus one merge commit per PR head, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestBranchRequest {
    /// `<prefix>/<target>/<run id>`.
    pub branch: String,
    /// The target branch, whose head is the base when `base` is `None`.
    pub target: String,
    pub base: Option<Sha>,
    pub prs: Vec<BranchPr>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestBranchOutcome {
    /// The branch exists with `sha` at its tip, built on `base_sha`.
    Created { sha: Sha, base_sha: Sha },
    /// Merging this pull request's head conflicted; no branch was left behind.
    Conflict { pr: PrNumber },
    /// This pull request's head is already on the base (it was merged outside the queue); no
    /// branch was left behind.
    MergedOutside { pr: PrNumber },
}

/// A tested set of pull requests to merge into the target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeRequest {
    pub target: String,
    pub prs: Vec<BranchPr>,
    pub method: MergeMethod,
    /// The target must still be here, or the merge is refused with `TargetMoved`.
    pub expected_target_sha: Option<Sha>,
    /// The tested commit: `merge_commit` moves the target to it; `squash`/`rebase` produce
    /// commits whose final tree equals its tree. `None` for a direct merge of an up-to-date PR.
    pub tested_sha: Option<Sha>,
    /// A status set on the tested commit once every check of the merge passed, just before
    /// `merge_commit` moves the target to it: the queue's own, for a branch that requires it.
    /// Not set when the merge is refused.
    pub tested_status: Option<StatusUpdate>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeOutcome {
    /// The target branch now points at `target_sha`.
    Merged {
        target_sha: Sha,
    },
    TargetMoved {
        actual: Sha,
    },
    /// A pull request's head is no longer the tested head.
    PrChanged {
        pr: PrNumber,
    },
    /// A pull request was closed since it was tested.
    PrClosed {
        pr: PrNumber,
    },
    /// A pull request was merged outside the queue since it was tested.
    PrMerged {
        pr: PrNumber,
    },
    /// The host refused for another reason (conflict, protection).
    Rejected {
        pr: Option<PrNumber>,
        detail: String,
    },
}

/// A pull request as the host shows it just before a merge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrNow {
    pub head: Sha,
    pub state: PrState,
    pub draft: bool,
    /// The branch it asks to be merged into.
    pub base: String,
    pub review: Review,
}

impl MergeOutcome {
    /// Why `pr` may not be merged into `target` now that it is as `now` says: every pull
    /// request must still be open at the head that was tested, ready for review (not turned
    /// back into a draft), approved as the review rules require, and based on the target (not
    /// retargeted since it was submitted, a change whose delivery may have been lost). `None`
    /// when it may.
    pub fn refusing(pr: &BranchPr, now: &PrNow, target: &str) -> Option<Self> {
        if now.head != pr.head_sha {
            return Some(MergeOutcome::PrChanged { pr: pr.pr });
        }
        let rejected = |detail: String| MergeOutcome::Rejected {
            pr: Some(pr.pr),
            detail,
        };
        match now.state {
            PrState::Open if now.draft => Some(rejected(format!(
                "#{} was turned back into a draft since it was submitted",
                pr.pr
            ))),
            PrState::Open if now.base != target => Some(rejected(format!(
                "#{} now asks to be merged into {} instead of {target}",
                pr.pr, now.base
            ))),
            PrState::Open if now.review == Review::ChangesRequested => Some(rejected(format!(
                "a reviewer asked for changes on #{} since it was submitted",
                pr.pr
            ))),
            PrState::Open if now.review != Review::Approved => Some(rejected(format!(
                "#{} lacks the reviews the branch's rules require",
                pr.pr
            ))),
            PrState::Open => None,
            PrState::Merged => Some(MergeOutcome::PrMerged { pr: pr.pr }),
            PrState::Closed => Some(MergeOutcome::PrClosed { pr: pr.pr }),
        }
    }
}

/// A draft pull request from a test branch into the target (`createPrsForTestingBranches`),
/// for CI systems that only run on pull requests.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TestPullRequest {
    pub branch: String,
    pub target: String,
    pub title: String,
    pub body: String,
}

/// The queue's status on a commit (a PR head, or a test branch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusUpdate {
    pub context: String,
    pub state: StatusState,
    pub description: String,
    pub target_url: Option<String>,
}

/// What CI reported on a commit.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CommitChecks {
    pub statuses: Vec<StatusReport>,
    pub check_runs: Vec<CheckRunReport>,
}

/// A comment on a pull request that gives the queue a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandComment {
    pub pr: PrNumber,
    /// The comment's id on the Git host.
    pub id: u64,
}

/// A Git host serving the repositories of the queues.
#[async_trait]
pub trait GitHost: Send + Sync {
    /// A pull request as it is now; `target_branch` decides `based_on_target_head`.
    async fn pull_request(
        &self,
        repo: &RepoRef,
        pr: PrNumber,
        target_branch: &str,
    ) -> HostResult<PrFacts>;

    /// The commit a branch points at, `None` when the branch does not exist.
    async fn branch_head(&self, repo: &RepoRef, branch: &str) -> HostResult<Option<Sha>>;

    async fn create_test_branch(
        &self,
        repo: &RepoRef,
        request: &TestBranchRequest,
    ) -> HostResult<TestBranchOutcome>;

    async fn merge(&self, repo: &RepoRef, request: &MergeRequest) -> HostResult<MergeOutcome>;

    /// Whether this merge already happened (a merge whose answer was lost): the target moved
    /// on from `expected_target_sha` through a commit with exactly the tested tree (under
    /// `merge_commit`, the tested commit itself), found along first parents from the target's
    /// tip even when others pushed on top of it since; that commit when it did. For a direct
    /// merge (no tested commit), every pull request of it is merged; the target's tip then.
    /// `None` when it did not, or the target is still at the expected commit.
    async fn merge_landed(&self, repo: &RepoRef, request: &MergeRequest)
    -> HostResult<Option<Sha>>;

    /// Closes a pull request whose changes the queue's merge landed as commits of its own
    /// (`squash`, `rebase`): GitHub marks a pull request merged only when its own head lands.
    /// One no longer open is left as it is, and so is one pushed to since `pr.head_sha`, the
    /// head that landed: closing it would drop commits that did not. Repeating it changes
    /// nothing.
    async fn close_landed_pull_request(&self, repo: &RepoRef, pr: &BranchPr) -> HostResult<()>;

    /// Deletes a branch; deleting a missing branch succeeds.
    async fn delete_branch(&self, repo: &RepoRef, branch: &str) -> HostResult<()>;

    /// Posts the queue's comment on a pull request, or updates the one it posted before.
    async fn upsert_comment(&self, repo: &RepoRef, pr: PrNumber, body: &str) -> HostResult<()>;

    /// Answers the comment command `to` in a comment of its own, or updates the answer posted
    /// before; the queue's comment is left as it is.
    async fn reply(&self, repo: &RepoRef, to: CommandComment, body: &str) -> HostResult<()>;

    /// Opens a draft pull request from a test branch into the target; when one is already open
    /// from that branch, nothing changes. A missing branch is `NotFound`.
    async fn open_test_pull_request(
        &self,
        repo: &RepoRef,
        request: &TestPullRequest,
    ) -> HostResult<()>;

    /// Closes the pull request open from a test branch; none open is success.
    async fn close_test_pull_request(&self, repo: &RepoRef, branch: &str) -> HostResult<()>;

    /// Sets a commit status (by context) on a commit.
    async fn set_status(&self, repo: &RepoRef, sha: &Sha, status: &StatusUpdate) -> HostResult<()>;

    /// The statuses a branch requires from the repository's own sources: the config file
    /// `.merge-queue.yaml` (`service_config`), else branch protection
    /// (`repo_provider_branch_protection`); an empty list with no source when neither says.
    async fn required_statuses(&self, repo: &RepoRef, branch: &str)
    -> HostResult<RequiredStatuses>;

    /// Whether the account `login` may write to `repo` (push to its branches): on GitHub, the
    /// `write`, `maintain` or `admin` role; `false` for an account that has none of them or
    /// does not exist.
    async fn may_write(&self, repo: &RepoRef, login: &str) -> HostResult<bool>;

    /// Statuses and check runs reported on a commit.
    async fn commit_checks(&self, repo: &RepoRef, sha: &Sha) -> HostResult<CommitChecks>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pull_request_merges_only_open_at_its_tested_head() {
        let pr = BranchPr {
            pr: 7,
            head_sha: Sha::new("a".repeat(40)),
            title: "Change 7".into(),
            stamp: None,
        };
        let open = PrNow {
            head: pr.head_sha.clone(),
            state: PrState::Open,
            draft: false,
            base: "main".into(),
            review: Review::Approved,
        };
        let refusing = |now: PrNow| MergeOutcome::refusing(&pr, &now, "main");
        assert_eq!(refusing(open.clone()), None);
        let pushed = Sha::new("b".repeat(40));
        assert_eq!(
            refusing(PrNow {
                head: pushed,
                ..open.clone()
            }),
            Some(MergeOutcome::PrChanged { pr: 7 })
        );
        for (state, refused) in [
            (PrState::Closed, MergeOutcome::PrClosed { pr: 7 }),
            (PrState::Merged, MergeOutcome::PrMerged { pr: 7 }),
        ] {
            let now = PrNow {
                state,
                ..open.clone()
            };
            assert_eq!(refusing(now), Some(refused));
        }
    }
}
