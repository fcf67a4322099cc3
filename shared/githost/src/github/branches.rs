//! Test branches on GitHub: a ref at the base, then the merges API once per pull request head
//! (a real merge commit each, made by GitHub); a conflict deletes the ref again.

use super::client::{Client, escape, repo_path};
use super::pulls::branch_head;
use super::wire::ShaOnly;
use crate::error::{HostError, HostResult};
use crate::port::{TestBranchOutcome, TestBranchRequest};
use crate::tested_chain::merge_message;
use crate::validate;
use mq_core::ids::{RepoRef, Sha};
use reqwest::{Method, StatusCode};
use serde_json::json;

pub(crate) async fn create(
    client: &Client,
    repo: &RepoRef,
    request: &TestBranchRequest,
) -> HostResult<TestBranchOutcome> {
    validate::branch("branch", &request.branch)?;
    validate::branch("target", &request.target)?;
    if request.branch == request.target {
        return Err(HostError::Invalid(format!(
            "the test branch cannot be the target branch {}",
            request.target
        )));
    }
    let base = match &request.base {
        Some(base) => {
            validate::sha("base", base)?;
            base.clone()
        }
        None => branch_head(client, repo, &request.target)
            .await?
            .ok_or_else(|| HostError::NotFound(format!("branch {}", request.target)))?,
    };
    point_branch_at(client, repo, &request.branch, &base).await?;
    let mut tip = base.clone();
    for pr in &request.prs {
        validate::sha("head_sha", &pr.head_sha)?;
        let payload = json!({
            "base": request.branch,
            "head": pr.head_sha.as_str(),
            "commit_message": merge_message(pr, Some(&request.branch)),
        });
        let path = format!("{}/merges", repo_path(repo));
        let reply = client
            .send(repo, Method::POST, &path, Some(&payload))
            .await?;
        match reply.status {
            StatusCode::CREATED => tip = Sha::new(reply.json::<ShaOnly>()?.sha),
            // The head is already in the branch: nothing to merge.
            StatusCode::NO_CONTENT => {}
            StatusCode::CONFLICT => {
                delete(client, repo, &request.branch).await?;
                return Ok(TestBranchOutcome::Conflict { pr: pr.pr });
            }
            _ => {
                let error = reply.error();
                if let Err(e) = delete(client, repo, &request.branch).await {
                    tracing::warn!(branch = %request.branch, error = %e, "could not remove a half-built test branch");
                }
                return Err(error);
            }
        }
    }
    Ok(TestBranchOutcome::Created {
        sha: tip,
        base_sha: base,
    })
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
