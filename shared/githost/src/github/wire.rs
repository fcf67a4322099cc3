//! The shapes of GitHub's REST answers, as far as the queue reads them. The shapes webhook
//! payloads share are in `crate::github_wire`.

pub(crate) use crate::github_wire::*;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
pub(crate) struct Message {
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub errors: Vec<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Numbered {
    pub number: u32,
}

/// `GET /repos/{owner}/{repo}/collaborators/{username}/permission`: the account's legacy
/// role (`admin`, `write`, `read` or `none`; `maintain` shows as `write`, `triage` as `read`).
#[derive(Debug, Deserialize)]
pub(crate) struct CollaboratorPermission {
    pub permission: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ShaOnly {
    pub sha: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RefWire {
    pub object: ShaOnly,
}

/// A user or bot account (`GET /user`, `GET /users/{username}`).
#[derive(Debug, Deserialize)]
pub(crate) struct Account {
    pub login: String,
    pub id: u64,
    pub name: Option<String>,
}

/// The App itself (`GET /app`).
#[derive(Debug, Deserialize)]
pub(crate) struct AppWire {
    pub slug: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Compare {
    pub behind_by: u64,
}

/// A commit of a pull request (`GET /pulls/{n}/commits`).
#[derive(Debug, Deserialize)]
pub(crate) struct PullCommit {
    pub commit: PullCommitBody,
    /// The account the commit's author email belongs to, if any.
    pub author: Option<Login>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct PullCommitBody {
    #[serde(default)]
    pub message: String,
    pub author: Option<NameAndEmail>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct NameAndEmail {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub email: String,
}

/// A repository's squash settings (`GET /repos/{owner}/{repo}`); absent for callers GitHub
/// does not show them to.
#[derive(Debug, Deserialize)]
pub(crate) struct SquashSettings {
    pub squash_merge_commit_title: Option<String>,
    pub squash_merge_commit_message: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct GitAuthor {
    pub name: String,
    pub email: String,
    pub date: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct GitCommit {
    pub sha: String,
    pub tree: ShaOnly,
    #[serde(default)]
    pub parents: Vec<ShaOnly>,
    pub author: GitAuthor,
    #[serde(default)]
    pub message: String,
}

/// A commit as the merges API answers it (the commits API's shape).
#[derive(Debug, Deserialize)]
pub(crate) struct MergeCommitWire {
    pub sha: String,
    pub commit: MergeCommitBody,
}

#[derive(Debug, Deserialize)]
pub(crate) struct MergeCommitBody {
    pub tree: ShaOnly,
}

#[derive(Debug, Deserialize)]
pub(crate) struct IssueComment {
    pub id: u64,
    pub body: Option<String>,
    /// Its author; `None` for a deleted account ("ghost").
    pub user: Option<Login>,
}

/// An account as far as its login.
#[derive(Debug, Deserialize)]
pub(crate) struct Login {
    pub login: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct AccessToken {
    pub token: String,
    pub expires_at: String,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct RequiredChecks {
    #[serde(default)]
    pub contexts: Vec<String>,
    #[serde(default)]
    pub checks: Vec<CheckContext>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct CheckContext {
    pub context: String,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct Protection {
    pub required_status_checks: Option<RequiredChecks>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct BranchWire {
    pub protection: Option<Protection>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Rule {
    #[serde(rename = "type")]
    pub kind: String,
    pub parameters: Option<RuleParameters>,
}

/// A protection setting that is on or off (`required_signatures`).
#[derive(Debug, Deserialize)]
pub(crate) struct Enabled {
    pub enabled: bool,
}

#[derive(Debug, Deserialize)]
pub(crate) struct RuleParameters {
    #[serde(default)]
    pub required_status_checks: Vec<CheckContext>,
}
