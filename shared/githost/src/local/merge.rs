//! Merging a tested set of pull requests into the target on the local host.
//!
//! `merge_commit` moves the target to the tested commit; `squash` writes one commit per pull
//! request, `rebase` replays each pull request's commits; either way the commit written for a
//! pull request has exactly the tree the tested commit had after merging it, so the final tree is
//! the tested tree. The target moves with one conditional ref update from the expected sha.

use super::branches::{self, Chain, merge_chain};
use super::git::{Authorship, Git, RefUpdate};
use super::pulls::{self, branch_ref};
use super::records::StatusRecorder;
use crate::error::HostResult;
use crate::landed::{MergeSource, before_sending, landed_at};
use crate::port::{MergeOutcome, MergeRequest};
use crate::tested_chain::{CommitInfo, CommitSource, Step, read_chain_onto, squash_message};
use crate::validate;
use mq_core::engine::BranchPr;
use mq_core::git::PrState;
use mq_core::ids::{PrNumber, RepoRef, Sha};
use mq_core::settings::MergeMethod;
use std::future::Future;

/// A merge that cannot go ahead, with the outcome to report.
type Refused = MergeOutcome;

/// Merges as `request` asks; `statuses` records the request's `tested_status` on the tested
/// commit once the checks passed (`merge_commit`).
pub(crate) async fn merge(
    git: &Git,
    request: &MergeRequest,
    statuses: (&StatusRecorder, &RepoRef),
) -> HostResult<MergeOutcome> {
    validate::branch("target", &request.target)?;
    let actual = branches::head(git, &request.target).await?;
    if let Some(outcome) = before_sending(git, request, &actual).await? {
        if matches!(outcome, MergeOutcome::Merged { .. }) {
            for pr in &request.prs {
                mark_landed(git, pr).await?;
            }
        }
        return Ok(outcome);
    }
    let tip = match new_target(git, &actual, request).await? {
        Err(refused) => return Ok(refused),
        Ok(tip) => tip,
    };
    let tested = request.tested_sha.is_some();
    if let (MergeMethod::MergeCommit, true, Some(status)) =
        (request.method, tested, &request.tested_status)
    {
        let (recorder, repo) = statuses;
        recorder.record(git, repo, &tip, status).await?;
    }
    publish(git, request, &actual, tip).await
}

/// Marks `pr` merged, whose changes landed, unless it is no longer open or was pushed to since
/// the head that landed: the local host's pull requests end merged whatever the merge method
/// (see `GitHost::close_landed_pull_request`). A merge found already done, on a retry or by
/// the tick, marks them too: the attempt that landed it may have stopped before it did.
pub(crate) async fn mark_landed(git: &Git, pr: &BranchPr) -> HostResult<()> {
    if pulls::state_of(git, pr.pr).await? != PrState::Open {
        return Ok(());
    }
    if pulls::head_of(git, pr.pr).await? != pr.head_sha {
        return Ok(());
    }
    pulls::mark_merged(git, pr.pr).await
}

/// The target's commit if this merge already happened (see `GitHost::merge_landed`).
pub(crate) async fn landed(git: &Git, request: &MergeRequest) -> HostResult<Option<Sha>> {
    validate::branch("target", &request.target)?;
    let actual = branches::head(git, &request.target).await?;
    let Some(expected) = &request.expected_target_sha else {
        return Ok(None);
    };
    validate::sha("expected_target_sha", expected)?;
    if *expected == actual {
        return Ok(None);
    }
    let landed = landed_at(git, request, expected, actual).await?;
    if landed.is_some() {
        for pr in &request.prs {
            mark_landed(git, pr).await?;
        }
    }
    Ok(landed)
}

/// The commit the target should point at once the pull requests are in.
async fn new_target(
    git: &Git,
    actual: &Sha,
    request: &MergeRequest,
) -> HostResult<Result<Sha, Refused>> {
    if let Some(refused) = check_heads(git, request).await? {
        return Ok(Err(refused));
    }
    let tested = match &request.tested_sha {
        Some(tested) => branches::commit(git, "tested_sha", tested).await?,
        // A direct merge: the pull requests merged onto the target as a test branch would be.
        None => match merge_chain(git, actual, &request.prs, None).await? {
            Chain::Built(sha) => sha,
            Chain::Conflict(pr) => {
                return Ok(Err(MergeOutcome::Rejected {
                    pr: Some(pr),
                    detail: format!("#{pr} conflicts with the target"),
                }));
            }
        },
    };
    match request.method {
        MergeMethod::MergeCommit => fast_forward(git, actual, tested).await,
        MergeMethod::Squash | MergeMethod::Rebase => {
            rewrite(git, actual, &tested, &request.prs, request.method).await
        }
    }
}

/// Every pull request must still be open at the head that was tested, ready and based on the
/// target.
async fn check_heads(git: &Git, request: &MergeRequest) -> HostResult<Option<Refused>> {
    for pr in &request.prs {
        let now = pulls::now(git, pr.pr).await?;
        if let Some(refused) = MergeOutcome::refusing(pr, &now, &request.target) {
            return Ok(Some(refused));
        }
    }
    Ok(None)
}

async fn fast_forward(git: &Git, actual: &Sha, tested: Sha) -> HostResult<Result<Sha, Refused>> {
    if git.is_ancestor(actual, &tested).await? {
        Ok(Ok(tested))
    } else {
        Ok(Err(MergeOutcome::Rejected {
            pr: None,
            detail: format!(
                "the tested commit {} does not contain the target head {}",
                tested.short(),
                actual.short()
            ),
        }))
    }
}

/// Writes the squash or rebase commits on top of the target.
async fn rewrite(
    git: &Git,
    actual: &Sha,
    tested: &Sha,
    prs: &[BranchPr],
    method: MergeMethod,
) -> HostResult<Result<Sha, Refused>> {
    let chain = match read_chain_onto(git, actual, tested, prs).await? {
        Ok(chain) => chain,
        Err(refused) => return Ok(Err(refused)),
    };
    let mut tip = actual.clone();
    for step in &chain.steps {
        tip = match method {
            MergeMethod::Rebase => replay(git, &tip, step).await?,
            _ => squash(git, &tip, step).await?,
        };
    }
    Ok(Ok(tip))
}

/// One commit with the pull request's tree, authored by its head commit's author.
async fn squash(git: &Git, tip: &Sha, step: &Step) -> HostResult<Sha> {
    let message = squash_message(&step.pr);
    let author = Authorship {
        message: message.clone(),
        ..git.authorship(&step.pr.head_sha).await?
    };
    git.commit_tree(&step.tree, &[tip], &message, Some(&author))
        .await
}

/// The pull request's own commits, each cherry-picked onto `tip`, authors and messages kept;
/// the last one gets the tested tree. When one of them does not apply there (the pull request
/// merged the target into itself after a commit the target then changed too), one commit with
/// the tested tree and the head commit's message and author, as the GitHub host always
/// writes: the tree CI passed lands either way.
async fn replay(git: &Git, tip: &Sha, step: &Step) -> HostResult<Sha> {
    let commits = git.commits_between(&step.before, &step.pr.head_sha).await?;
    if commits.is_empty() {
        return squash(git, tip, step).await;
    }
    let mut replayed = tip.clone();
    for (i, commit) in commits.iter().enumerate() {
        let tree = if i + 1 == commits.len() {
            step.tree.clone()
        } else {
            let parent = git.commit_info(commit).await?.parents.into_iter().next();
            match git.merge_tree(&replayed, commit, parent.as_ref()).await? {
                Some(tree) => tree,
                None => return head_commit_with_tested_tree(git, tip, step).await,
            }
        };
        let author = git.authorship(commit).await?;
        replayed = git
            .commit_tree(&tree, &[&replayed], &author.message, Some(&author))
            .await?;
    }
    Ok(replayed)
}

/// One commit with the pull request's tested tree on `tip`, with its head commit's message and
/// author.
async fn head_commit_with_tested_tree(git: &Git, tip: &Sha, step: &Step) -> HostResult<Sha> {
    let author = git.authorship(&step.pr.head_sha).await?;
    git.commit_tree(&step.tree, &[tip], &author.message, Some(&author))
        .await
}

/// Moves the target from `actual` to `tip`, then marks the pull requests merged.
async fn publish(
    git: &Git,
    request: &MergeRequest,
    actual: &Sha,
    tip: Sha,
) -> HostResult<MergeOutcome> {
    let name = branch_ref(&request.target);
    match git
        .update_ref(&name, tip.as_str(), Some(actual.as_str()))
        .await?
    {
        RefUpdate::Refused(_) => Ok(MergeOutcome::TargetMoved {
            actual: branches::head(git, &request.target).await?,
        }),
        RefUpdate::Done => {
            for pr in &request.prs {
                pulls::mark_merged(git, pr.pr).await?;
            }
            Ok(MergeOutcome::Merged { target_sha: tip })
        }
    }
}

impl CommitSource for Git {
    fn commit(&self, sha: &Sha) -> impl Future<Output = HostResult<CommitInfo>> + Send {
        self.commit_info(sha)
    }
}

impl MergeSource for Git {
    async fn pr_state_and_head(&self, pr: PrNumber) -> HostResult<(PrState, Sha)> {
        Ok((
            pulls::state_of(self, pr).await?,
            pulls::head_of(self, pr).await?,
        ))
    }

    fn contains(
        &self,
        expected: &Sha,
        actual: &Sha,
    ) -> impl Future<Output = HostResult<bool>> + Send {
        self.is_ancestor(expected, actual)
    }
}
