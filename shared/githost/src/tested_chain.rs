//! A tested commit read back as the steps that built it, for `squash` and `rebase` merges.
//!
//! A test branch is its base plus one merge commit per pull request, in order; each merge
//! commit's first parent is the state before it and its second parent the pull request's head.
//! Walking first parents back from the tip gives, for each pull request, the exact tree the
//! target must have once it is in: the trees of the commits a squash or rebase writes.

use crate::error::HostResult;
use crate::port::MergeOutcome;
use mq_core::engine::BranchPr;
use mq_core::ids::Sha;
use std::future::Future;

/// A commit as the merge planner needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommitInfo {
    pub sha: Sha,
    pub tree: String,
    pub parents: Vec<Sha>,
}

/// Reads commits from the host.
pub(crate) trait CommitSource {
    fn commit(&self, sha: &Sha) -> impl Future<Output = HostResult<CommitInfo>> + Send;
}

/// One pull request's merge in the tested commit.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    pub pr: BranchPr,
    /// The tree with this pull request and every one before it merged.
    pub tree: String,
    /// The commit this pull request was merged onto.
    pub before: Sha,
}

#[derive(Debug, Clone)]
pub(crate) struct TestedChain {
    /// The commit the first pull request was merged onto.
    pub base: CommitInfo,
    pub steps: Vec<Step>,
}

/// The chain of `tested` (see [`read_chain`]), checked to have been built on the content of
/// `actual` (the target now); a refusal of the merge otherwise.
pub(crate) async fn read_chain_onto<S: CommitSource>(
    source: &S,
    actual: &Sha,
    tested: &Sha,
    prs: &[BranchPr],
) -> HostResult<Result<TestedChain, MergeOutcome>> {
    let chain = match read_chain(source, tested, prs).await? {
        Ok(chain) => chain,
        Err(detail) => return Ok(Err(MergeOutcome::Rejected { pr: None, detail })),
    };
    if chain.base.tree != source.commit(actual).await?.tree {
        return Ok(Err(MergeOutcome::Rejected {
            pr: None,
            detail: format!(
                "the tested commit {} was built on content other than the target's",
                tested.short()
            ),
        }));
    }
    Ok(Ok(chain))
}

/// Walks `tested` back through one merge commit per pull request of `prs` (last first).
/// `Ok(Err(reason))` when the tested commit is not shaped like a test branch of `prs`.
pub(crate) async fn read_chain<S: CommitSource>(
    source: &S,
    tested: &Sha,
    prs: &[BranchPr],
) -> HostResult<Result<TestedChain, String>> {
    let mut current = source.commit(tested).await?;
    let mut steps = Vec::with_capacity(prs.len());
    for pr in prs.iter().rev() {
        let is_its_merge = current.parents.len() == 2 && current.parents[1] == pr.head_sha;
        if !is_its_merge {
            return Ok(Err(format!(
                "the tested commit {} holds no merge of #{} at {}",
                tested.short(),
                pr.pr,
                pr.head_sha.short()
            )));
        }
        let before = current.parents[0].clone();
        steps.push(Step {
            pr: pr.clone(),
            tree: current.tree.clone(),
            before: before.clone(),
        });
        current = source.commit(&before).await?;
    }
    steps.reverse();
    Ok(Ok(TestedChain {
        base: current,
        steps,
    }))
}

/// The message of a test branch's merge commit for `pr`. A stamped merge commit names its
/// stamp's run in a trailer, so every build of a group is a commit of its own (CI results on
/// an earlier build must not be taken for a new one), while every test branch holding that
/// build's merge holds the same commit. An unstamped one names the branch being built, if any.
pub(crate) fn merge_message(pr: &BranchPr, test_branch: Option<&str>) -> String {
    let subject = format!("Merge pull request #{}: {}", pr.pr, pr.title);
    match (&pr.stamp, test_branch) {
        (Some(stamp), _) => format!("{subject}\n\nMerge-Queue-Run: {}", stamp.run_id),
        (None, Some(branch)) => format!("{subject}\n\nTest-Branch: {branch}"),
        (None, None) => subject,
    }
}

/// The message of the one commit a squash merge writes for `pr`.
pub(crate) fn squash_message(pr: &BranchPr) -> String {
    format!("{} (#{})", pr.title, pr.pr)
}
