//! Branches that only take signed commits. The commits the queue writes (test branch merges,
//! squash and rebase commits) are unsigned: GitHub signs only the commits it makes itself, such
//! as the merges of its pull request merge API with the `squash` or `merge` method. When GitHub
//! refuses to move such a branch, the queue's merge is refused with a detail that says so and
//! what to do, rather than GitHub's bare refusal.

use super::client::{Client, escape, repo_path};
use super::wire::{Enabled, Rule};
use crate::error::HostResult;
use mq_core::ids::RepoRef;

/// The detail of GitHub's refusal to move `branch`: what a signed-commit requirement needs
/// when the branch has one (its rulesets, its protection or GitHub's `message` say so), else
/// GitHub's message.
pub(crate) async fn refusal_detail(
    client: &Client,
    repo: &RepoRef,
    branch: &str,
    message: String,
) -> String {
    match requirement(client, repo, branch, &message).await {
        Some(source) => signed_commits_required(branch, source, &message),
        None => message,
    }
}

/// Whether GitHub's message names commit signatures.
pub(crate) fn mentions_signatures(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    message.contains("signature") || message.contains("signed commit")
}

fn signed_commits_required(branch: &str, source: &str, message: &str) -> String {
    format!(
        "{branch} requires signed commits ({source}) and the commits the queue writes are not \
         signed: let the queue's GitHub App bypass that rule, or have GitHub merge the pull \
         requests (directMergeMode: always with the squash or merge_commit method, whose \
         commits GitHub signs). GitHub said: {message}"
    )
}

/// Where the requirement comes from, `None` when nothing says there is one. A source that
/// cannot be read (classic protection needs admin rights) says nothing.
async fn requirement(
    client: &Client,
    repo: &RepoRef,
    branch: &str,
    message: &str,
) -> Option<&'static str> {
    if ruleset_requires(client, repo, branch).await {
        Some("a repository ruleset")
    } else if protection_requires(client, repo, branch).await {
        Some("branch protection")
    } else {
        mentions_signatures(message).then_some("GitHub's refusal names signatures")
    }
}

/// A `required_signatures` rule among the active rules for the branch.
async fn ruleset_requires(client: &Client, repo: &RepoRef, branch: &str) -> bool {
    let path = format!("{}/rules/branches/{}", repo_path(repo), escape(branch));
    let rules: HostResult<Vec<Rule>> = client.get_all(repo, &path, None).await;
    match rules {
        Ok(rules) => rules.iter().any(|r| r.kind == "required_signatures"),
        Err(e) => unknown(branch, "rulesets", &e),
    }
}

/// Classic branch protection's `required_signatures`; 403 and 404 (no admin rights, no
/// protection) say nothing.
async fn protection_requires(client: &Client, repo: &RepoRef, branch: &str) -> bool {
    let path = format!(
        "{}/branches/{}/protection/required_signatures",
        repo_path(repo),
        escape(branch)
    );
    match client.get::<Enabled>(repo, &path).await {
        Ok(setting) => setting.enabled,
        Err(e) => unknown(branch, "branch protection", &e),
    }
}

fn unknown(branch: &str, source: &str, error: &crate::HostError) -> bool {
    tracing::debug!(branch, source, %error, "cannot tell whether the branch requires signed commits");
    false
}
