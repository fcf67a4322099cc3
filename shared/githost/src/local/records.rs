//! Commit statuses and the queue's comments, kept in the bare repository itself as refs to
//! blobs, so anyone with the repository (tests, tools, the adapter) can read them back:
//!
//! - `refs/merge-queue/statuses/<commit>/<hex of context>`: a JSON [`StatusReport`];
//! - `refs/merge-queue/comments/<pr>`: the comment's body;
//! - `refs/merge-queue/replies/<pr>/<comment id>`: the reply to a comment command;
//! - `refs/merge-queue/test-pulls/<hex of branch>`: a JSON [`TestPullRecord`], the draft pull
//!   request opened for a test branch.
//!
//! One ref per status context and per comment: writing one never touches another.

use super::git::Git;
use crate::clock::now;
use crate::error::{HostError, HostResult};
use crate::port::{CommandComment, StatusUpdate, TestPullRequest};
use mq_core::git::StatusReport;
use mq_core::ids::{PrNumber, RepoRef, Sha};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::sync::broadcast;

const STATUSES: &str = "refs/merge-queue/statuses";
const COMMENTS: &str = "refs/merge-queue/comments";
const REPLIES: &str = "refs/merge-queue/replies";
const TEST_PULLS: &str = "refs/merge-queue/test-pulls";

/// A draft pull request of a test branch, as the local host keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestPullRecord {
    #[serde(flatten)]
    pub request: TestPullRequest,
    pub open: bool,
}

/// A status that was just recorded on a commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusRecorded {
    pub repo: RepoRef,
    pub sha: Sha,
    pub status: StatusReport,
}

/// Writes statuses and tells subscribers about each one.
#[derive(Debug, Clone)]
pub(crate) struct StatusRecorder {
    events: broadcast::Sender<StatusRecorded>,
}

impl StatusRecorder {
    pub fn new(capacity: usize) -> Self {
        Self {
            events: broadcast::channel(capacity).0,
        }
    }

    pub fn subscribe(&self) -> broadcast::Receiver<StatusRecorded> {
        self.events.subscribe()
    }

    /// Records `update` on commit `sha` (overwriting the same context) and announces it.
    pub async fn record(
        &self,
        git: &Git,
        repo: &RepoRef,
        sha: &Sha,
        update: &StatusUpdate,
    ) -> HostResult<StatusReport> {
        let report = StatusReport {
            context: update.context.clone(),
            state: update.state,
            url: update.target_url.clone().unwrap_or_default(),
            description: update.description.clone(),
            updated_at: now(),
        };
        let json = serde_json::to_vec(&report)
            .map_err(|e| HostError::Other(format!("cannot encode a status: {e}")))?;
        let blob = git.write_blob(&json).await?;
        let name = status_ref(sha, &update.context);
        // Last writer wins for one context, as on GitHub; `update-ref` itself is atomic.
        git.set_ref(&name, &blob).await?;
        // Nobody listening is fine: the status is stored either way.
        let _ = self.events.send(StatusRecorded {
            repo: repo.clone(),
            sha: sha.clone(),
            status: report.clone(),
        });
        Ok(report)
    }
}

/// Every status recorded on `sha`, one per context.
pub(crate) async fn statuses(git: &Git, sha: &Sha) -> HostResult<Vec<StatusReport>> {
    let prefix = format!("{STATUSES}/{sha}/");
    let mut reports = Vec::new();
    for (name, id) in git.refs_under(&prefix).await? {
        let Some(bytes) = git.read_blob(&id).await? else {
            continue;
        };
        let report: StatusReport = serde_json::from_slice(&bytes)
            .map_err(|e| HostError::Other(format!("{name} holds no status: {e}")))?;
        reports.push(report);
    }
    reports.sort_by(|a, b| a.context.cmp(&b.context));
    Ok(reports)
}

/// Stores the queue's comment on `pr`, replacing the previous one.
pub(crate) async fn write_comment(git: &Git, pr: PrNumber, body: &str) -> HostResult<()> {
    let blob = git.write_blob(body.as_bytes()).await?;
    git.set_ref(&format!("{COMMENTS}/{pr}"), &blob).await
}

/// The queue's comment on `pr`, if it posted one.
pub(crate) async fn read_comment(git: &Git, pr: PrNumber) -> HostResult<Option<String>> {
    let bytes = git.read_blob(&format!("{COMMENTS}/{pr}")).await?;
    Ok(bytes.map(|b| String::from_utf8_lossy(&b).into_owned()))
}

/// Stores the reply to the comment command `to`, replacing the previous one.
pub(crate) async fn write_reply(git: &Git, to: CommandComment, body: &str) -> HostResult<()> {
    let blob = git.write_blob(body.as_bytes()).await?;
    git.set_ref(&reply_ref(to), &blob).await
}

/// The reply to the comment command `to`, if one was posted.
pub(crate) async fn read_reply(git: &Git, to: CommandComment) -> HostResult<Option<String>> {
    let bytes = git.read_blob(&reply_ref(to)).await?;
    Ok(bytes.map(|b| String::from_utf8_lossy(&b).into_owned()))
}

fn reply_ref(to: CommandComment) -> String {
    format!("{REPLIES}/{}/{}", to.pr, to.id)
}

/// The draft pull request of a test branch, if one was opened.
pub(crate) async fn read_test_pull(git: &Git, branch: &str) -> HostResult<Option<TestPullRecord>> {
    let Some(bytes) = git.read_blob(&test_pull_ref(branch)).await? else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| HostError::Other(format!("the test pull request of {branch}: {e}")))
}

/// Stores the draft pull request of a test branch, replacing what was there.
pub(crate) async fn write_test_pull(git: &Git, record: &TestPullRecord) -> HostResult<()> {
    let json = serde_json::to_vec(record)
        .map_err(|e| HostError::Other(format!("cannot encode a test pull request: {e}")))?;
    let blob = git.write_blob(&json).await?;
    git.set_ref(&test_pull_ref(&record.request.branch), &blob)
        .await
}

fn test_pull_ref(branch: &str) -> String {
    format!("{TEST_PULLS}/{}", ref_component(branch))
}

fn status_ref(sha: &Sha, context: &str) -> String {
    format!("{STATUSES}/{sha}/{}", ref_component(context))
}

/// `text` as one component of a ref name: hex-encoded, so any text makes a valid one; a long
/// one by its SHA-256, to stay within file name limits (a loose ref's lock file is a file).
fn ref_component(text: &str) -> String {
    let name = hex::encode(text.as_bytes());
    if name.len() > 200 {
        return hex::encode(Sha256::digest(text.as_bytes()));
    }
    name
}
