//! What the engine asks the shell to do on the Git host.

use crate::git::StatusState;
use crate::ids::{PrNumber, Sha};
pub use crate::run::BranchPr;
use crate::settings::MergeMethod;
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// One intent for the Git host. Executing an effect twice does no harm: branches are named
/// by run id and merges carry the expected target sha.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "effect")]
pub enum Effect {
    /// Create `branch` from `base` (`None`: the target's current head) plus a merge commit per
    /// PR of `prs`, in order (dependents first, then the tested PRs).
    CreateTestBranch {
        run_id: String,
        branch: String,
        base: Option<Sha>,
        prs: Vec<BranchPr>,
        dependent_prs: Vec<PrNumber>,
    },
    /// Stop a run: delete its test branch (CI on it is abandoned).
    CancelRun {
        run_id: String,
        branch: String,
    },
    DeleteBranch {
        branch: String,
    },
    /// Merge `prs` into the target by `method`, only if the target is at
    /// `expected_target_sha`. `tested_sha` is the test branch tip whose tree the result must
    /// equal (`None` for a direct merge of an up-to-date PR).
    Merge {
        run_id: Option<String>,
        prs: Vec<BranchPr>,
        method: MergeMethod,
        expected_target_sha: Option<Sha>,
        tested_sha: Option<Sha>,
    },
    /// Close a pull request whose changes a merge landed as commits of its own (`squash`,
    /// `rebase` with a tested commit): GitHub marks a pull request merged only when its own
    /// head lands. Left as it is when no longer open, or pushed to since `pr.head_sha`. Its
    /// own effect, so that a close that keeps failing neither holds up nor fails the merge,
    /// which landed.
    CloseLandedPullRequest {
        pr: BranchPr,
    },
    /// Post, or update in place, the queue's comment on a pull request.
    PostComment {
        pr: PrNumber,
        body: String,
    },
    /// Set the queue's status check on a pull request's head.
    SetStatusCheck {
        pr: PrNumber,
        sha: Sha,
        state: StatusState,
        description: String,
    },
    /// Open a draft pull request from a run's test branch into the target
    /// (`createPrsForTestingBranches`), for CI that only runs on pull requests.
    OpenTestPullRequest {
        run_id: String,
        branch: String,
        title: String,
        body: String,
    },
    /// Close the pull request opened for a run's test branch: the run ended.
    CloseTestPullRequest {
        run_id: String,
        branch: String,
    },
    /// Read a pull request again (readiness, mergeability still being computed).
    RefreshPullRequest {
        pr: PrNumber,
    },
    /// Read the statuses and check runs already reported on a test branch's tip: CI may
    /// report before the run's sha is known. The answer is `EffectOutcome::Checks`.
    FetchChecks {
        run_id: String,
        sha: Sha,
    },
}

/// An effect in the outbox, with its retry bookkeeping.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingEffect {
    pub id: String,
    pub effect: Effect,
    pub created_at: Timestamp,
    /// Failed executions so far.
    #[serde(default)]
    pub attempts: u32,
    /// The tick executes the effect again from this time on.
    pub next_attempt_at: Timestamp,
    pub last_error: Option<String>,
    /// A notification waiting for an earlier one of the same pull request and kind to
    /// finish (see [`Effect::notice_key`]); the tick does not execute it.
    #[serde(default)]
    pub held: bool,
}

impl Effect {
    /// What a pull request notification replaces on the host (its comment, or its status
    /// check): the last one executed is what the pull request shows. `None` for every other
    /// effect.
    pub fn notice_key(&self) -> Option<(u8, PrNumber)> {
        match self {
            Effect::PostComment { pr, .. } => Some((0, *pr)),
            Effect::SetStatusCheck { pr, .. } => Some((1, *pr)),
            _ => None,
        }
    }

    /// A merge that names where it expects the target: the Git host can then tell whether it
    /// landed (`GitHost::merge_landed`), and whether it did not. Without it (a direct merge
    /// before the queue knew its target), "not found" may also mean "cannot tell".
    pub fn can_be_told_not_landed(&self) -> bool {
        matches!(
            self,
            Effect::Merge {
                expected_target_sha: Some(_),
                ..
            }
        )
    }

    /// The run this effect does the work of while it is in progress (its test branch built,
    /// its checks read, its test pull request opened): once that run is gone from the
    /// snapshot, or over (failed, waiting on the groups behind it), the effect is stale and
    /// comes to [`Self::once_its_run_is_gone`] instead. `None` for every other effect.
    pub fn work_of_run(&self) -> Option<&str> {
        match self {
            Effect::CreateTestBranch { run_id, .. }
            | Effect::FetchChecks { run_id, .. }
            | Effect::OpenTestPullRequest { run_id, .. } => Some(run_id),
            _ => None,
        }
    }

    /// What a stale effect ([`Self::work_of_run`]) still comes to: a test branch being created
    /// is deleted instead (an earlier attempt may have created it, its answer lost); checks
    /// are no longer read.
    pub fn once_its_run_is_gone(self) -> Option<Effect> {
        match self {
            Effect::CreateTestBranch { branch, .. } => Some(Effect::DeleteBranch { branch }),
            _ => None,
        }
    }
}
