//! Test branches on GitHub: a building branch (`mq-build/...`, [`building_branch`]) at the
//! base, then the merges API once per pull request head (GitHub computes each merge), then the
//! test branch pointed at the finished tip once, and the building branch deleted. CI that runs
//! on pushes to the test branches therefore runs once per build, on what is to be tested, not
//! once per merge the build made.
//!
//! A build stopped before it finished (its request's or the tick's time was up: a long chain
//! takes about a second per pull request) leaves the building branch as far as it got; the
//! next attempt goes on from there ([`built_before`]), so a chain longer than one attempt's
//! time is built over several.
//!
//! A stamped pull request's merge commit is then written again with the git data API from the
//! merge's tree, its parents, its message and its stamp's time, authored and committed by the
//! adapter's identity: every test branch holding that merge holds the same commit. The chain is
//! written again from its first stamped pull request on. Without stamps the branch gets
//! GitHub's merge commits.

use super::client::identity;
use super::client::{Client, escape, repo_path};
use super::identity::Identity;
use super::merge::{create_commit, git_commit};
use super::pulls::{branch_head, contains};
use super::wire::MergeCommitWire;
use crate::error::{HostError, HostResult};
use crate::port::{TestBranchOutcome, TestBranchRequest};
use crate::tested_chain::merge_message;
use crate::validate;
use mq_core::Timestamp;
use mq_core::engine::BranchPr;
use mq_core::ids::{PrNumber, RepoRef, Sha};
use reqwest::{Method, StatusCode};
use serde_json::json;

/// One pull request merged into the test branch by the merges API.
struct Merged<'a> {
    pr: &'a BranchPr,
    sha: Sha,
    tree: String,
}

enum Chain<'a> {
    Built(Vec<Merged<'a>>),
    Conflict(PrNumber),
    MergedOutside(PrNumber),
}

/// What merging one head into the branch gave.
enum Step<'a> {
    Merged(Merged<'a>),
    Conflict,
    /// The head is already in the base the branch was built on.
    InTheBase,
}

/// The branch a test branch is built on before it is pointed at the result: `mq-test/...`
/// becomes `mq-build/...`, any other name gets `mq-build/` in front.
pub(crate) fn building_branch(branch: &str) -> String {
    format!(
        "mq-build/{}",
        branch.strip_prefix("mq-test/").unwrap_or(branch)
    )
}

/// Builds the test branch on its building branch, which is deleted however the build ends;
/// the test branch is pointed at the result, or deleted when the build conflicts or finds a
/// pull request already merged (an earlier build's may be there).
pub(crate) async fn create(
    client: &Client,
    repo: &RepoRef,
    request: &TestBranchRequest,
) -> HostResult<TestBranchOutcome> {
    validate::test_branch_request(request)?;
    let base = base_of(client, repo, request).await?;
    let scratch = building_branch(&request.branch);
    let earlier = built_before(client, repo, request, &base).await?;
    if earlier.is_empty() {
        point_branch_at(client, repo, &scratch, &base).await?;
    }
    let built = build(client, repo, request, &base, earlier).await;
    if let Err(e) = delete(client, repo, &scratch).await {
        tracing::warn!(branch = %scratch, error = %e, "could not remove a building branch");
    }
    let outcome = built?;
    match &outcome {
        TestBranchOutcome::Created { sha, .. } => {
            point_branch_at(client, repo, &request.branch, sha).await?
        }
        _ => delete(client, repo, &request.branch).await?,
    }
    Ok(outcome)
}

async fn base_of(client: &Client, repo: &RepoRef, request: &TestBranchRequest) -> HostResult<Sha> {
    match &request.base {
        Some(base) => {
            validate::sha("base", base)?;
            Ok(base.clone())
        }
        None => branch_head(client, repo, &request.target)
            .await?
            .ok_or_else(|| HostError::NotFound(format!("branch {}", request.target))),
    }
}

/// What an earlier attempt of this build left on the building branch: the merges of the
/// chain's first pull requests onto `base`, in order, one merge commit each (first parent the
/// tip before it, second the pull request's head). Empty when there is none, or the branch
/// holds anything else (another base, other heads): the branch is then reset to `base`.
async fn built_before<'a>(
    client: &Client,
    repo: &RepoRef,
    request: &'a TestBranchRequest,
    base: &Sha,
) -> HostResult<Vec<Merged<'a>>> {
    let scratch = building_branch(&request.branch);
    let Some(mut at) = branch_head(client, repo, &scratch).await? else {
        return Ok(Vec::new());
    };
    let mut found: Vec<(Sha, String, Sha)> = Vec::new();
    while at != *base && found.len() < request.prs.len() {
        let commit = git_commit(client, repo, &at).await?;
        let [before, head] = commit.parents.as_slice() else {
            return Ok(Vec::new());
        };
        found.push((at, commit.tree.sha, Sha::new(&head.sha)));
        at = Sha::new(&before.sha);
    }
    if at != *base {
        return Ok(Vec::new());
    }
    found.reverse();
    let merges = found
        .into_iter()
        .zip(&request.prs)
        .map(|((sha, tree, head), pr)| (head == pr.head_sha).then_some(Merged { pr, sha, tree }))
        .collect::<Option<Vec<_>>>();
    Ok(merges.unwrap_or_default())
}

async fn build<'a>(
    client: &Client,
    repo: &RepoRef,
    request: &'a TestBranchRequest,
    base: &Sha,
    earlier: Vec<Merged<'a>>,
) -> HostResult<TestBranchOutcome> {
    let merges = match merge_heads(client, repo, request, base, earlier).await? {
        Chain::Built(merges) => merges,
        Chain::Conflict(pr) => return Ok(TestBranchOutcome::Conflict { pr }),
        Chain::MergedOutside(pr) => return Ok(TestBranchOutcome::MergedOutside { pr }),
    };
    let sha = restamp(client, repo, &request.branch, base, &merges).await?;
    Ok(TestBranchOutcome::Created {
        sha,
        base_sha: base.clone(),
    })
}

/// Merges each head after those merged `earlier` into the branch in order with the merges API.
async fn merge_heads<'a>(
    client: &Client,
    repo: &RepoRef,
    request: &'a TestBranchRequest,
    base: &Sha,
    earlier: Vec<Merged<'a>>,
) -> HostResult<Chain<'a>> {
    let mut merges = earlier;
    for pr in &request.prs[merges.len()..] {
        let tip = merges.last().map_or(base, |m| &m.sha);
        match merge_head(client, repo, &request.branch, (base, tip), pr).await? {
            Step::Merged(merged) => merges.push(merged),
            Step::Conflict => return Ok(Chain::Conflict(pr.pr)),
            Step::InTheBase => return Ok(Chain::MergedOutside(pr.pr)),
        }
    }
    Ok(Chain::Built(merges))
}

/// Merges `pr`'s head into test branch `branch`'s building branch, built on `base`, whose
/// tip is `tip`.
async fn merge_head<'a>(
    client: &Client,
    repo: &RepoRef,
    branch: &str,
    (base, tip): (&Sha, &Sha),
    pr: &'a BranchPr,
) -> HostResult<Step<'a>> {
    let scratch = building_branch(branch);
    let payload = json!({
        "base": scratch,
        "head": pr.head_sha.as_str(),
        "commit_message": merge_message(pr, Some(branch)),
    });
    let path = format!("{}/merges", repo_path(repo));
    let reply = client
        .send(repo, Method::POST, &path, Some(&payload))
        .await?;
    match reply.status {
        StatusCode::CREATED => {
            let made: MergeCommitWire = reply.json()?;
            Ok(Step::Merged(Merged {
                pr,
                sha: Sha::new(made.sha),
                tree: made.commit.tree.sha,
            }))
        }
        StatusCode::NO_CONTENT
            if contains(client, repo, pr.head_sha.as_str(), base.as_str()).await? =>
        {
            Ok(Step::InTheBase)
        }
        StatusCode::NO_CONTENT => merge_already_made(client, repo, branch, tip, pr)
            .await
            .map(Step::Merged),
        StatusCode::CONFLICT => Ok(Step::Conflict),
        _ => Err(reply.error()),
    }
}

/// The merges API answers 204 when the head is already in the building branch of test branch
/// `branch`: a pull request ahead in the chain holds it (a stacked pull request queued ahead of
/// the one it is built on), or a retried call's first attempt merged it and that answer was
/// lost. The building branch's tip is then `tip` holding the head, or the merge of the head
/// onto `tip`; otherwise the branch cannot be built.
async fn merge_already_made<'a>(
    client: &Client,
    repo: &RepoRef,
    branch: &str,
    tip: &Sha,
    pr: &'a BranchPr,
) -> HostResult<Merged<'a>> {
    let scratch = building_branch(branch);
    let now = branch_head(client, repo, &scratch)
        .await?
        .ok_or_else(|| HostError::NotFound(format!("branch {scratch}")))?;
    if now == *tip && contains(client, repo, pr.head_sha.as_str(), tip.as_str()).await? {
        return merge_held_head(client, repo, branch, tip, pr).await;
    }
    let commit = git_commit(client, repo, &now).await?;
    let parents: Vec<&str> = commit.parents.iter().map(|p| p.sha.as_str()).collect();
    if parents == [tip.as_str(), pr.head_sha.as_str()] {
        return Ok(Merged {
            pr,
            sha: now,
            tree: commit.tree.sha,
        });
    }
    Err(HostError::Conflict(format!(
        "GitHub found nothing to merge for #{} at {} in {scratch}, and the branch's tip {} is \
         not its merge onto {}: the branch was moved while it was being built",
        pr.pr,
        pr.head_sha.short(),
        now.short(),
        tip.short()
    )))
}

/// The merge of a head `tip` already holds: a commit of `tip`'s tree on `[tip, head]`, as git
/// merges with `--no-ff` (and as the local host builds it), so the chain keeps one merge commit
/// per pull request; the building branch of `branch` is moved to it.
async fn merge_held_head<'a>(
    client: &Client,
    repo: &RepoRef,
    branch: &str,
    tip: &Sha,
    pr: &'a BranchPr,
) -> HostResult<Merged<'a>> {
    let tree = git_commit(client, repo, tip).await?.tree.sha;
    let payload = json!({
        "message": merge_message(pr, Some(branch)),
        "tree": tree,
        "parents": [tip.as_str(), pr.head_sha.as_str()],
    });
    let sha = create_commit(client, repo, &payload).await?;
    force_branch(client, repo, &building_branch(branch), &sha).await?;
    Ok(Merged { pr, sha, tree })
}

/// The branch's tip: GitHub's last merge when nothing is stamped, else the chain written again
/// from its first stamped pull request on (`branch` names the test branch in unstamped
/// messages).
async fn restamp(
    client: &Client,
    repo: &RepoRef,
    branch: &str,
    base: &Sha,
    merges: &[Merged<'_>],
) -> HostResult<Sha> {
    let github_tip = merges.last().map_or(base, |m| &m.sha);
    let Some(first) = merges.iter().position(|m| m.pr.stamp.is_some()) else {
        return Ok(github_tip.clone());
    };
    let identity = identity(client, repo).await?;
    let mut tip = match first {
        0 => base.clone(),
        n => merges[n - 1].sha.clone(),
    };
    for merged in &merges[first..] {
        tip = write_merge(client, repo, branch, &tip, merged, &identity).await?;
    }
    Ok(tip)
}

/// A merge commit of `merged`'s tree on `[tip, head]`. A stamped one is authored and committed
/// by `identity` at the stamp's time, so it depends on nothing else; an unstamped one gets
/// GitHub's author and time.
async fn write_merge(
    client: &Client,
    repo: &RepoRef,
    branch: &str,
    tip: &Sha,
    merged: &Merged<'_>,
    identity: &Identity,
) -> HostResult<Sha> {
    let mut payload = json!({
        "message": merge_message(merged.pr, Some(branch)),
        "tree": merged.tree,
        "parents": [tip.as_str(), merged.pr.head_sha.as_str()],
    });
    if let Some(stamp) = &merged.pr.stamp {
        let date = git_date(stamp.at);
        payload["author"] = identity.signature(Some(&date));
        payload["committer"] = identity.signature(Some(&date));
    }
    create_commit(client, repo, &payload).await
}

/// A time as the git data API takes it, in whole seconds as git keeps them:
/// `2026-11-25T15:46:02Z`.
fn git_date(at: Timestamp) -> String {
    // `to_rfc3339` is `YYYY-MM-DDTHH:MM:SS.mmmZ`: the first 19 characters are the seconds.
    format!("{}Z", &at.to_rfc3339()[..19])
}

/// Creates the branch at `sha`, or resets it there when it exists (a rebuild).
async fn point_branch_at(
    client: &Client,
    repo: &RepoRef,
    branch: &str,
    sha: &Sha,
) -> HostResult<()> {
    let create = json!({ "ref": format!("refs/heads/{branch}"), "sha": sha.as_str() });
    let path = format!("{}/git/refs", repo_path(repo));
    let reply = client
        .send(repo, Method::POST, &path, Some(&create))
        .await?;
    if reply.status != StatusCode::UNPROCESSABLE_ENTITY {
        return reply.ok();
    }
    force_branch(client, repo, branch, sha).await
}

/// Points an existing branch at `sha`, whatever it pointed at.
async fn force_branch(client: &Client, repo: &RepoRef, branch: &str, sha: &Sha) -> HostResult<()> {
    let reset = json!({ "sha": sha.as_str(), "force": true });
    let path = format!("{}/git/refs/heads/{}", repo_path(repo), escape(branch));
    client
        .send(repo, Method::PATCH, &path, Some(&reset))
        .await?
        .ok()
}

/// Deletes a branch; a missing branch is already deleted.
pub(crate) async fn delete(client: &Client, repo: &RepoRef, branch: &str) -> HostResult<()> {
    validate::branch("branch", branch)?;
    let path = format!("{}/git/refs/heads/{}", repo_path(repo), escape(branch));
    let reply = client.send(repo, Method::DELETE, &path, None).await?;
    match reply.status {
        // GitHub answers 422 "Reference does not exist" for a missing branch.
        StatusCode::NOT_FOUND | StatusCode::UNPROCESSABLE_ENTITY => Ok(()),
        _ => reply.ok(),
    }
}
