//! The local Git host: bare repositories under a directory, `<dir>/<host>/<owner>/<name>.git`,
//! driven by the real `git` binary.
//!
//! - Pull request `n` is the ref `refs/pull/<n>/head`; `pr.<n>.base` (default: the branch `HEAD`
//!   names), `pr.<n>.title` (default: the head commit's subject), `pr.<n>.state` (`open`,
//!   `closed`, `merged`; default `open`) and `pr.<n>.draft` in the repository's git config say
//!   the rest; the author is the head commit's author; mergeability is a real trial merge.
//! - Branch protection: `branch.<name>.requiredStatuses` (repeatable, or comma-separated).
//! - Who may write: `collaborator.<login>.permission` (`read`, `triage`, `write`, `maintain` or
//!   `admin`); an account without one may (the local host has no accounts of its own).
//! - Statuses and the queue's comments are stored in the repository (see `records`).
//! - With a [`CiConfig`], every test branch is tested by a local command (see [`ci`]).

mod branches;
pub mod ci;
mod git;
mod merge;
mod pulls;
mod records;

pub use ci::{CiConfig, DEFAULT_CI_CONTEXT};
pub use git::Identity;
pub use records::{StatusRecorded, TestPullRecord};

use crate::error::{HostError, HostResult};
use crate::port::{
    CommandComment, CommitChecks, GitHost, MergeOutcome, MergeRequest, StatusUpdate,
    TestBranchOutcome, TestBranchRequest, TestPullRequest,
};
use crate::repo_config::{CONFIG_FILE, required_statuses_in, resolve_required};
use crate::validate;
use async_trait::async_trait;
use ci::CiRunner;
use git::Git;
use mq_core::engine::BranchPr;
use mq_core::git::{PrFacts, RequiredStatuses};
use mq_core::ids::{PrNumber, RepoRef, Sha};
use records::StatusRecorder;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::broadcast;

/// How many recorded statuses a slow subscriber may fall behind before it misses some.
const STATUS_EVENTS_CAPACITY: usize = 1024;

/// The local Git host. Cheap to clone: clones share the CI runner and the status channel.
#[derive(Debug, Clone)]
pub struct LocalGitHost {
    root: PathBuf,
    committer: Identity,
    recorder: StatusRecorder,
    ci: Option<Arc<CiRunner>>,
}

impl LocalGitHost {
    /// Serves the repositories under `root`; commits are by `Merge Queue <merge-queue@localhost>`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            committer: Identity {
                name: "Merge Queue".to_owned(),
                email: "merge-queue@localhost".to_owned(),
            },
            recorder: StatusRecorder::new(STATUS_EVENTS_CAPACITY),
            ci: None,
        }
    }

    /// Commits (merge, squash and rebase commits) are committed by `committer`.
    pub fn with_committer(mut self, committer: Identity) -> Self {
        self.committer = committer;
        self
    }

    /// Tests every test branch this host creates with `config`'s command.
    pub fn with_ci(mut self, config: CiConfig) -> Self {
        self.ci = Some(Arc::new(CiRunner::new(config, self.recorder.clone())));
        self
    }

    /// Every status recorded from now on (by [`GitHost::set_status`] or the local CI).
    pub fn subscribe(&self) -> broadcast::Receiver<StatusRecorded> {
        self.recorder.subscribe()
    }

    /// Where a repository lives: `<root>/<host>/<owner>/<name>.git`.
    pub fn repo_path(&self, repo: &RepoRef) -> HostResult<PathBuf> {
        RepoRef::new(&repo.host, &repo.owner, &repo.name)
            .map_err(|e| HostError::Invalid(e.to_string()))?;
        Ok(self
            .root
            .join(&repo.host)
            .join(&repo.owner)
            .join(format!("{}.git", repo.name)))
    }

    /// The queue's comment on a pull request, as last posted.
    pub async fn comment(&self, repo: &RepoRef, pr: PrNumber) -> HostResult<Option<String>> {
        records::read_comment(&self.git(repo)?, pr).await
    }

    /// The queue's reply to the comment command `to`, as last posted.
    pub async fn reply_posted(
        &self,
        repo: &RepoRef,
        to: CommandComment,
    ) -> HostResult<Option<String>> {
        records::read_reply(&self.git(repo)?, to).await
    }

    /// The draft pull request opened for a test branch, open or closed.
    pub async fn test_pull_request(
        &self,
        repo: &RepoRef,
        branch: &str,
    ) -> HostResult<Option<TestPullRecord>> {
        records::read_test_pull(&self.git(repo)?, branch).await
    }

    fn git(&self, repo: &RepoRef) -> HostResult<Git> {
        let path = self.repo_path(repo)?;
        if !path.is_dir() {
            return Err(HostError::NotFound(format!("repository {repo}")));
        }
        Ok(Git::new(path, self.committer.clone()))
    }
}

#[async_trait]
impl GitHost for LocalGitHost {
    async fn pull_request(
        &self,
        repo: &RepoRef,
        pr: PrNumber,
        target_branch: &str,
    ) -> HostResult<PrFacts> {
        validate::branch("target_branch", target_branch)?;
        pulls::read(&self.git(repo)?, pr, target_branch).await
    }

    async fn branch_head(&self, repo: &RepoRef, branch: &str) -> HostResult<Option<Sha>> {
        validate::branch("branch", branch)?;
        self.git(repo)?.resolve(&pulls::branch_ref(branch)).await
    }

    async fn create_test_branch(
        &self,
        repo: &RepoRef,
        request: &TestBranchRequest,
    ) -> HostResult<TestBranchOutcome> {
        let git = self.git(repo)?;
        let outcome = branches::create(&git, request).await?;
        if let (Some(ci), TestBranchOutcome::Created { sha, .. }) = (&self.ci, &outcome) {
            ci.start(repo, git, &request.branch, sha.clone());
        }
        Ok(outcome)
    }

    async fn merge(&self, repo: &RepoRef, request: &MergeRequest) -> HostResult<MergeOutcome> {
        merge::merge(&self.git(repo)?, request, (&self.recorder, repo)).await
    }

    async fn merge_landed(
        &self,
        repo: &RepoRef,
        request: &MergeRequest,
    ) -> HostResult<Option<Sha>> {
        merge::landed(&self.git(repo)?, request).await
    }

    async fn close_landed_pull_request(&self, repo: &RepoRef, pr: &BranchPr) -> HostResult<()> {
        merge::mark_landed(&self.git(repo)?, pr).await
    }

    async fn delete_branch(&self, repo: &RepoRef, branch: &str) -> HostResult<()> {
        branches::delete(&self.git(repo)?, branch).await?;
        if let Some(ci) = &self.ci {
            ci.cancel(repo, branch);
        }
        Ok(())
    }

    async fn upsert_comment(&self, repo: &RepoRef, pr: PrNumber, body: &str) -> HostResult<()> {
        let git = self.git(repo)?;
        pulls::head_of(&git, pr).await?;
        records::write_comment(&git, pr, body).await
    }

    async fn reply(&self, repo: &RepoRef, to: CommandComment, body: &str) -> HostResult<()> {
        let git = self.git(repo)?;
        pulls::head_of(&git, to.pr).await?;
        records::write_reply(&git, to, body).await
    }

    async fn open_test_pull_request(
        &self,
        repo: &RepoRef,
        request: &TestPullRequest,
    ) -> HostResult<()> {
        let git = self.git(repo)?;
        validate::branch("target", &request.target)?;
        branches::head(&git, &request.branch).await?;
        let open = records::read_test_pull(&git, &request.branch).await?;
        if open.is_some_and(|record| record.open) {
            return Ok(());
        }
        let record = TestPullRecord {
            request: request.clone(),
            open: true,
        };
        records::write_test_pull(&git, &record).await
    }

    async fn close_test_pull_request(&self, repo: &RepoRef, branch: &str) -> HostResult<()> {
        validate::branch("branch", branch)?;
        let git = self.git(repo)?;
        match records::read_test_pull(&git, branch).await? {
            Some(record) if record.open => {
                let closed = TestPullRecord {
                    open: false,
                    ..record
                };
                records::write_test_pull(&git, &closed).await
            }
            _ => Ok(()),
        }
    }

    async fn set_status(&self, repo: &RepoRef, sha: &Sha, status: &StatusUpdate) -> HostResult<()> {
        let git = self.git(repo)?;
        let sha = branches::commit(&git, "sha", sha).await?;
        self.recorder.record(&git, repo, &sha, status).await?;
        Ok(())
    }

    async fn required_statuses(
        &self,
        repo: &RepoRef,
        branch: &str,
    ) -> HostResult<RequiredStatuses> {
        validate::branch("branch", branch)?;
        let git = self.git(repo)?;
        let file = git
            .read_blob(&format!("{}:{CONFIG_FILE}", pulls::branch_ref(branch)))
            .await?;
        let config = match file {
            Some(bytes) => required_statuses_in(&String::from_utf8_lossy(&bytes))?,
            None => None,
        };
        let protection = git
            .config_all(&format!("branch.{branch}.requiredStatuses"))
            .await?
            .iter()
            .flat_map(|value| value.split(','))
            .map(|context| context.trim().to_owned())
            .filter(|context| !context.is_empty())
            .collect();
        Ok(resolve_required(config, protection))
    }

    async fn may_write(&self, repo: &RepoRef, login: &str) -> HostResult<bool> {
        let key = format!("collaborator.{login}.permission");
        let role = self.git(repo)?.config(&key).await?;
        Ok(role.is_none_or(|role| matches!(role.as_str(), "write" | "maintain" | "admin")))
    }

    async fn commit_checks(&self, repo: &RepoRef, sha: &Sha) -> HostResult<CommitChecks> {
        let git = self.git(repo)?;
        let sha = branches::commit(&git, "sha", sha).await?;
        Ok(CommitChecks {
            statuses: records::statuses(&git, &sha).await?,
            check_runs: Vec::new(),
        })
    }
}
