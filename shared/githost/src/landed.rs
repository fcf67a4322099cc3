//! Whether a merge already happened: a repeat of a merge whose answer was lost must not merge
//! twice, and the tick asks after merges it did not hear back from (`GitHost::merge_landed`).
//! Both adapters answer the same way, from what they read of the repository.

use crate::error::HostResult;
use crate::port::{MergeOutcome, MergeRequest};
use crate::tested_chain::CommitSource;
use crate::validate;
use mq_core::engine::BranchPr;
use mq_core::git::PrState;
use mq_core::ids::{PrNumber, Sha};
use std::future::Future;

/// What the answer needs of a repository besides its commits.
pub(crate) trait MergeSource: CommitSource {
    /// The pull request's state and head now.
    fn pr_state_and_head(
        &self,
        pr: PrNumber,
    ) -> impl Future<Output = HostResult<(PrState, Sha)>> + Send;

    /// Whether `actual` contains `expected` (the target only moved forward from it).
    fn contains(
        &self,
        expected: &Sha,
        actual: &Sha,
    ) -> impl Future<Output = HostResult<bool>> + Send;
}

/// Given that the target moved from the request's expected commit to `actual`: the commit the
/// merge put on the target if it happened, else `None`. With a tested commit, that is the
/// commit with exactly the tested tree that the target moved forward to ([`already_merged`]),
/// even when others were pushed on top of it since; without one (a direct merge), every pull
/// request must be merged ([`all_merged`]), and the answer is `actual`.
pub(crate) async fn landed_at<S: MergeSource>(
    source: &S,
    request: &MergeRequest,
    expected: &Sha,
    actual: Sha,
) -> HostResult<Option<Sha>> {
    match &request.tested_sha {
        Some(tested) => already_merged(source, expected, &actual, tested).await,
        None => Ok(all_merged(source, &request.prs).await?.then_some(actual)),
    }
}

/// What a merge about to be sent finds, the target being at `actual`: `Merged` when it
/// already happened (a repeat of a merge whose answer was lost, see [`done_before`]),
/// `TargetMoved` when the target moved from the expected commit otherwise, `None` when it
/// may go ahead.
pub(crate) async fn before_sending<S: MergeSource>(
    source: &S,
    request: &MergeRequest,
    actual: &Sha,
) -> HostResult<Option<MergeOutcome>> {
    if let Some(expected) = &request.expected_target_sha {
        validate::sha("expected_target_sha", expected)?;
    }
    if let Some(target_sha) = done_before(source, request, actual).await? {
        return Ok(Some(MergeOutcome::Merged { target_sha }));
    }
    let moved = request
        .expected_target_sha
        .as_ref()
        .is_some_and(|e| e != actual);
    Ok(moved.then(|| MergeOutcome::TargetMoved {
        actual: actual.clone(),
    }))
}

/// Whether a merge about to be sent already happened (the target is at `actual` now):
/// `Some(actual)` when it did. When the target moved from the expected commit, as
/// [`landed_at`] says; a direct merge that expected no commit (the queue's first) happened
/// when every pull request is merged.
async fn done_before<S: MergeSource>(
    source: &S,
    request: &MergeRequest,
    actual: &Sha,
) -> HostResult<Option<Sha>> {
    match (&request.expected_target_sha, &request.tested_sha) {
        (Some(expected), _) if expected != actual => {
            landed_at(source, request, expected, actual.clone()).await
        }
        (None, None) => Ok(all_merged(source, &request.prs)
            .await?
            .then(|| actual.clone())),
        _ => Ok(None),
    }
}

/// How many commits of the target, from its tip back along first parents, a merge that
/// already happened is looked for in: the pushes that may follow a merge whose answer was lost
/// before its repeat, or the tick, asks after it.
const LANDED_WITHIN: usize = 20;

/// The commit this merge wrote if it was already done (a repeat of a merge whose answer was
/// lost): the target moved on from the expected commit, and one of its commits since, along
/// first parents from `actual` and within [`LANDED_WITHIN`], has exactly the tested tree and
/// holds the expected commit. So a merge is found when others pushed to the target after it;
/// a merge not found is made again. The walk stops at the expected commit; a commit with the
/// tested tree that does not hold it (older history, reached through a merge whose first
/// parent is another line) was never this merge, and ends the search.
pub(crate) async fn already_merged<S: MergeSource>(
    source: &S,
    expected: &Sha,
    actual: &Sha,
    tested: &Sha,
) -> HostResult<Option<Sha>> {
    if !source.contains(expected, actual).await? {
        return Ok(None);
    }
    let tested_tree = source.commit(tested).await?.tree;
    let mut at = actual.clone();
    for _ in 0..LANDED_WITHIN {
        if at == *expected {
            break;
        }
        let commit = source.commit(&at).await?;
        if commit.tree == tested_tree {
            let after_expected = at == *actual || source.contains(expected, &at).await?;
            return Ok(after_expected.then_some(at));
        }
        let Some(parent) = commit.parents.into_iter().next() else {
            break;
        };
        at = parent;
    }
    Ok(None)
}

/// Whether every pull request of a direct merge is merged, at the head the merge names
/// (`false` for none): one merged at another head was merged by someone else after a push,
/// not by this merge, which the Git host refuses once the head moved.
pub(crate) async fn all_merged<S: MergeSource>(source: &S, prs: &[BranchPr]) -> HostResult<bool> {
    for pr in prs {
        let (state, head) = source.pr_state_and_head(pr.pr).await?;
        if state != PrState::Merged || head != pr.head_sha {
            return Ok(false);
        }
    }
    Ok(!prs.is_empty())
}
