//! Pull requests of the local host: PR `n` is the ref `refs/pull/<n>/head`; the git config of
//! the bare repository says the rest (`pr.<n>.base`, `pr.<n>.title`, `pr.<n>.state`,
//! `pr.<n>.draft`, `pr.<n>.review`), with defaults from the repository and the head commit.

use super::git::Git;
use crate::error::{HostError, HostResult};
use crate::port::PrNow;
use mq_core::git::{Mergeability, PrFacts, PrState, Review};
use mq_core::ids::{PrNumber, Sha};

pub(crate) fn pull_ref(pr: PrNumber) -> String {
    format!("refs/pull/{pr}/head")
}

pub(crate) fn branch_ref(branch: &str) -> String {
    format!("refs/heads/{branch}")
}

fn key(pr: PrNumber, name: &str) -> String {
    format!("pr.{pr}.{name}")
}

/// The head commit of pull request `pr`.
pub(crate) async fn head_of(git: &Git, pr: PrNumber) -> HostResult<Sha> {
    git.resolve(&pull_ref(pr))
        .await?
        .ok_or_else(|| HostError::NotFound(format!("pull request #{pr}")))
}

/// The branch pull request `pr` asks to be merged into: `pr.<n>.base`, else the
/// repository's default branch.
async fn base_of(git: &Git, pr: PrNumber) -> HostResult<String> {
    match git.config(&key(pr, "base")).await? {
        Some(base) => Ok(base),
        None => git.head_branch().await,
    }
}

async fn draft_of(git: &Git, pr: PrNumber) -> HostResult<bool> {
    Ok(is_true(git.config(&key(pr, "draft")).await?.as_deref()))
}

/// `pr.<n>.review`: `approved` (the default: no review required), `review_required` or
/// `changes_requested`.
async fn review_of(git: &Git, pr: PrNumber) -> HostResult<Review> {
    match git.config(&key(pr, "review")).await? {
        None => Ok(Review::Approved),
        Some(text) => text
            .parse()
            .map_err(|e| HostError::Invalid(format!("git config {}: {e}", key(pr, "review")))),
    }
}

/// What a merge checks of pull request `pr` just before it goes ahead.
pub(crate) async fn now(git: &Git, pr: PrNumber) -> HostResult<PrNow> {
    Ok(PrNow {
        head: head_of(git, pr).await?,
        state: state_of(git, pr).await?,
        draft: draft_of(git, pr).await?,
        base: base_of(git, pr).await?,
        review: review_of(git, pr).await?,
    })
}

/// What the repository says about pull request `pr`; `target` decides `based_on_target_head`.
pub(crate) async fn read(git: &Git, pr: PrNumber, target: &str) -> HostResult<PrFacts> {
    let head = head_of(git, pr).await?;
    let base_branch = base_of(git, pr).await?;
    let head_commit = git.authorship(&head).await?;
    let title = match git.config(&key(pr, "title")).await? {
        Some(title) => title,
        None => head_commit
            .message
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned(),
    };
    let state = state_of(git, pr).await?;
    let mergeability = match state {
        PrState::Open => trial_merge(git, &base_branch, &head).await?,
        PrState::Closed | PrState::Merged => Mergeability::Unspecified,
    };
    let based_on_target_head = match git.resolve(&branch_ref(target)).await? {
        Some(target_head) => git.is_ancestor(&target_head, &head).await?,
        None => false,
    };
    Ok(PrFacts {
        number: pr,
        title,
        author: head_commit.name,
        head_sha: head,
        base_branch,
        state,
        mergeability,
        based_on_target_head,
        draft: draft_of(git, pr).await?,
        review: review_of(git, pr).await?,
    })
}

/// `pr.<n>.state`: open (the default), closed or merged.
pub(crate) async fn state_of(git: &Git, pr: PrNumber) -> HostResult<PrState> {
    match git.config(&key(pr, "state")).await? {
        None => Ok(PrState::Open),
        Some(text) => text
            .parse()
            .map_err(|e| HostError::Invalid(format!("git config {}: {e}", key(pr, "state")))),
    }
}

pub(crate) async fn mark_merged(git: &Git, pr: PrNumber) -> HostResult<()> {
    git.set_config(&key(pr, "state"), PrState::Merged.as_str())
        .await
}

/// Mergeable when git merges the head into the base branch without conflicts.
async fn trial_merge(git: &Git, base_branch: &str, head: &Sha) -> HostResult<Mergeability> {
    let Some(base_head) = git.resolve(&branch_ref(base_branch)).await? else {
        return Ok(Mergeability::NotMergeable);
    };
    Ok(match git.merge_tree(&base_head, head, None).await? {
        Some(_) => Mergeability::Mergeable,
        None => Mergeability::NotMergeable,
    })
}

fn is_true(value: Option<&str>) -> bool {
    matches!(
        value.map(str::to_ascii_lowercase).as_deref(),
        Some("true" | "yes" | "on" | "1")
    )
}
