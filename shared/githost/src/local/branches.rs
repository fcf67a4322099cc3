//! Test branches on the local host: the base plus one real merge commit per pull request head,
//! built in the object store first and published with one conditional ref update.

use super::git::{Git, RefUpdate};
use super::pulls::branch_ref;
use crate::error::{HostError, HostResult};
use crate::port::{TestBranchOutcome, TestBranchRequest};
use crate::tested_chain::merge_message;
use crate::validate;
use mq_core::engine::BranchPr;
use mq_core::ids::{PrNumber, Sha};

/// What merging a list of heads onto a base gave.
pub(crate) enum Chain {
    Built(Sha),
    Conflict(PrNumber),
}

/// Merges each head onto `base` in order, one merge commit each; nothing is published.
/// `test_branch` names the branch being built, for the messages of unstamped commits. A
/// stamped merge commit is written from its parents, the pull request and the stamp alone,
/// committed by the host's committer at the stamp's time: rebuilt anywhere, it is the same
/// commit.
pub(crate) async fn merge_chain(
    git: &Git,
    base: &Sha,
    prs: &[BranchPr],
    test_branch: Option<&str>,
) -> HostResult<Chain> {
    let mut tip = base.clone();
    for pr in prs {
        let head = commit(git, "head_sha", &pr.head_sha).await?;
        match git.merge_tree(&tip, &head, None).await? {
            None => return Ok(Chain::Conflict(pr.pr)),
            Some(tree) => {
                let message = merge_message(pr, test_branch);
                let parents = [&tip, &head];
                tip = match &pr.stamp {
                    Some(stamp) => {
                        let date = format!("@{} +0000", stamp.at.millis().div_euclid(1000));
                        git.commit_tree_at(&tree, &parents, &message, &date).await?
                    }
                    None => git.commit_tree(&tree, &parents, &message, None).await?,
                };
            }
        }
    }
    Ok(Chain::Built(tip))
}

/// The first of `prs` whose head is already in `base` (merged outside the queue), if any.
async fn merged_into(git: &Git, base: &Sha, prs: &[BranchPr]) -> HostResult<Option<PrNumber>> {
    for pr in prs {
        let head = commit(git, "head_sha", &pr.head_sha).await?;
        if git.is_ancestor(&head, base).await? {
            return Ok(Some(pr.pr));
        }
    }
    Ok(None)
}

/// Builds the test branch; an existing branch of that name is rebuilt (its old value is the
/// expected one), and removed when the new build conflicts or finds a pull request already
/// merged into the base.
pub(crate) async fn create(
    git: &Git,
    request: &TestBranchRequest,
) -> HostResult<TestBranchOutcome> {
    validate::test_branch_request(request)?;
    let base = match &request.base {
        Some(base) => commit(git, "base", base).await?,
        None => head(git, &request.target).await?,
    };
    let name = branch_ref(&request.branch);
    let existing = git.resolve(&name).await?;
    if let Some(pr) = merged_into(git, &base, &request.prs).await? {
        if let Some(old) = existing {
            git.delete_ref(&name, old.as_str()).await?;
        }
        return Ok(TestBranchOutcome::MergedOutside { pr });
    }
    match merge_chain(git, &base, &request.prs, Some(&request.branch)).await? {
        Chain::Conflict(pr) => {
            if let Some(old) = existing {
                git.delete_ref(&name, old.as_str()).await?;
            }
            Ok(TestBranchOutcome::Conflict { pr })
        }
        Chain::Built(sha) => {
            let old = existing.as_ref().map(Sha::as_str);
            match git.update_ref(&name, sha.as_str(), old).await? {
                RefUpdate::Done => Ok(TestBranchOutcome::Created {
                    sha,
                    base_sha: base,
                }),
                RefUpdate::Refused(why) => Err(HostError::Conflict(format!(
                    "branch {} changed while it was being built: {why}",
                    request.branch
                ))),
            }
        }
    }
}

/// Deletes a branch whatever it points at; a missing branch is already deleted.
pub(crate) async fn delete(git: &Git, branch: &str) -> HostResult<()> {
    validate::branch("branch", branch)?;
    let name = branch_ref(branch);
    for _ in 0..20 {
        let Some(old) = git.resolve(&name).await? else {
            return Ok(());
        };
        if git.delete_ref(&name, old.as_str()).await? == RefUpdate::Done {
            return Ok(());
        }
    }
    Err(HostError::Transient {
        message: format!("branch {branch} kept moving while being deleted"),
        retry_after: None,
    })
}

/// The head of a branch that must exist.
pub(crate) async fn head(git: &Git, branch: &str) -> HostResult<Sha> {
    git.resolve(&branch_ref(branch))
        .await?
        .ok_or_else(|| HostError::NotFound(format!("branch {branch}")))
}

/// A commit that must exist, by its id.
pub(crate) async fn commit(git: &Git, field: &str, sha: &Sha) -> HostResult<Sha> {
    validate::sha(field, sha)?;
    git.resolve(sha.as_str())
        .await?
        .ok_or_else(|| HostError::NotFound(format!("commit {sha} ({field})")))
}
