//! Commit statuses, check runs, and the statuses a branch requires.

use super::client::{Client, RAW, escape, repo_path};
use super::wire::{BranchWire, CheckRunWire, Rule, StatusWire};
use crate::error::HostResult;
use crate::port::{CommitChecks, StatusUpdate};
use crate::repo_config::{CONFIG_FILE, required_statuses_in, resolve_required};
use mq_core::git::RequiredStatuses;
use mq_core::ids::{RepoRef, Sha};
use reqwest::{Method, StatusCode};
use serde_json::json;

/// GitHub refuses status descriptions longer than this.
const MAX_DESCRIPTION: usize = 140;

pub(crate) async fn set_status(
    client: &Client,
    repo: &RepoRef,
    sha: &Sha,
    status: &StatusUpdate,
) -> HostResult<()> {
    let description: String = status.description.chars().take(MAX_DESCRIPTION).collect();
    let mut payload = json!({
        "state": status.state.as_str(),
        "context": status.context,
        "description": description,
    });
    if let Some(url) = &status.target_url {
        payload["target_url"] = json!(url);
    }
    let path = format!("{}/statuses/{sha}", repo_path(repo));
    client
        .send(repo, Method::POST, &path, Some(&payload))
        .await?
        .ok()
}

/// The latest status per context and the latest check run per name on a commit.
pub(crate) async fn commit_checks(
    client: &Client,
    repo: &RepoRef,
    sha: &Sha,
) -> HostResult<CommitChecks> {
    let base = format!("{}/commits/{sha}", repo_path(repo));
    let statuses: Vec<StatusWire> = client
        .get_all(repo, &format!("{base}/status"), Some("statuses"))
        .await?;
    let runs: Vec<CheckRunWire> = client
        .get_all(repo, &format!("{base}/check-runs"), Some("check_runs"))
        .await?;
    Ok(CommitChecks {
        statuses: statuses.iter().filter_map(StatusWire::report).collect(),
        check_runs: runs.iter().filter_map(CheckRunWire::report).collect(),
    })
}

/// `.merge-queue.yaml` on the branch, else what branch protection and rulesets require.
pub(crate) async fn required_statuses(
    client: &Client,
    repo: &RepoRef,
    branch: &str,
) -> HostResult<RequiredStatuses> {
    let config = match config_file(client, repo, branch).await? {
        Some(text) => required_statuses_in(&text)?,
        None => None,
    };
    if config.is_some() {
        return Ok(resolve_required(config, Vec::new()));
    }
    let mut protection = protected_contexts(client, repo, branch).await?;
    protection.extend(ruleset_contexts(client, repo, branch).await?);
    Ok(resolve_required(None, protection))
}

async fn config_file(client: &Client, repo: &RepoRef, branch: &str) -> HostResult<Option<String>> {
    let path = format!(
        "{}/contents/{CONFIG_FILE}?ref={}",
        repo_path(repo),
        escape(branch).replace('/', "%2F")
    );
    let url = client.transport.url(&path);
    let reply = client.send_to(repo, Method::GET, url, None, RAW).await?;
    if reply.status == StatusCode::NOT_FOUND {
        return Ok(None);
    }
    reply.ok()?;
    Ok(Some(String::from_utf8_lossy(&reply.body).into_owned()))
}

/// Classic branch protection's required checks (readable with contents permission).
async fn protected_contexts(
    client: &Client,
    repo: &RepoRef,
    branch: &str,
) -> HostResult<Vec<String>> {
    let path = format!("{}/branches/{}", repo_path(repo), escape(branch));
    let found: Option<BranchWire> = client.get_optional(repo, &path).await?;
    let checks = found
        .and_then(|b| b.protection)
        .and_then(|p| p.required_status_checks)
        .unwrap_or_default();
    let mut contexts = checks.contexts;
    contexts.extend(checks.checks.into_iter().map(|c| c.context));
    Ok(contexts)
}

/// Required checks of the rulesets that apply to the branch.
async fn ruleset_contexts(
    client: &Client,
    repo: &RepoRef,
    branch: &str,
) -> HostResult<Vec<String>> {
    let path = format!("{}/rules/branches/{}", repo_path(repo), escape(branch));
    let rules: Vec<Rule> = match client.get_all(repo, &path, None).await {
        Ok(rules) => rules,
        Err(crate::HostError::NotFound(_)) => Vec::new(),
        Err(e) => return Err(e),
    };
    Ok(rules
        .into_iter()
        .filter(|r| r.kind == "required_status_checks")
        .filter_map(|r| r.parameters)
        .flat_map(|p| p.required_status_checks)
        .map(|c| c.context)
        .collect())
}
