//! The GitHub adapter: the REST API (api.github.com or a GitHub Enterprise Server), as a
//! GitHub App (installation tokens) or with a token.
//!
//! Calls that GitHub rate-limits or fails with a server error are retried within a
//! [`RetryPolicy`], then reported as `HostError::Transient { retry_after }`. A write that must
//! not happen twice (a comment) is not sent again after a server error or a lost answer: what
//! is there is read back first. Reads are conditional (`conditional`): an unchanged answer
//! costs nothing against the rate limit. After a refusal for a rate limit, no call is sent
//! with the same token to the same API before the wait is over (`rate_limits`).

mod auth;
mod branches;
mod checks;
mod client;
mod conditional;
mod identity;
mod merge;
mod pulls;
mod rate_limits;
mod signing;
mod transport;
pub(crate) mod wire;

pub use auth::{GitHubAuth, private_key_pem};
pub use transport::RetryPolicy;

use crate::comment::{COMMENT_MARKER, reply_marker};
use crate::error::{HostError, HostResult};
use crate::pins::AccountPins;
use crate::port::{
    CommandComment, CommitChecks, GitHost, MergeOutcome, MergeRequest, StatusUpdate,
    TestBranchOutcome, TestBranchRequest, TestPullRequest,
};
use crate::secret::SecretSource;
use crate::validate;
use async_trait::async_trait;
use client::{Client, Transport};
use mq_core::engine::BranchPr;
use mq_core::git::{PrFacts, RequiredStatuses};
use mq_core::ids::{OwnerRef, PrNumber, RepoRef, Sha};
use std::sync::Arc;

/// The public GitHub's API.
pub const DEFAULT_API_URL: &str = "https://api.github.com";
/// The host name repositories on the public GitHub carry in a `RepoRef`.
pub const DEFAULT_HOST: &str = "github.com";

/// Where the API is and who the adapter is there.
#[derive(Debug, Clone)]
pub struct GitHubConfig {
    /// The REST API's base address: `https://api.github.com`, or
    /// `https://<host>/api/v3` for GitHub Enterprise Server.
    pub api_url: String,
    /// The host in the `RepoRef`s of the repositories this adapter serves.
    pub host: String,
    pub auth: GitHubAuth,
    /// Where a GitHub App's private key is read again when GitHub refuses a JWT signed with
    /// the one held (the key was rotated); `None`: never.
    pub key_source: Option<Arc<dyn SecretSource>>,
    /// The GitHub accounts owners were linked as: a GitHub App acts on a repository only
    /// through an installation of its owner's linked account (see [`crate::pins`]); `None`:
    /// any account.
    pub account_pins: Option<Arc<dyn AccountPins>>,
    pub retry: RetryPolicy,
    pub user_agent: String,
}

impl GitHubConfig {
    /// The public GitHub, with the default retry policy.
    pub fn new(auth: GitHubAuth) -> Self {
        Self {
            api_url: DEFAULT_API_URL.to_owned(),
            host: DEFAULT_HOST.to_owned(),
            auth,
            key_source: None,
            account_pins: None,
            retry: RetryPolicy::default(),
            user_agent: "merge-queue".to_owned(),
        }
    }

    /// Reads the App's private key again from `source` when GitHub refuses it.
    pub fn with_key_source(mut self, source: Arc<dyn SecretSource>) -> Self {
        self.key_source = Some(source);
        self
    }

    /// Acts on a repository only through an installation of the account its owner was linked
    /// as, as `pins` keep them.
    pub fn with_account_pins(mut self, pins: Arc<dyn AccountPins>) -> Self {
        self.account_pins = Some(pins);
        self
    }

    /// Another API address and host (GitHub Enterprise Server, a test server).
    pub fn with_api(mut self, api_url: impl Into<String>, host: impl Into<String>) -> Self {
        self.api_url = api_url.into();
        self.host = host.into();
        self
    }

    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }
}

/// The GitHub Git host.
#[derive(Debug)]
pub struct GitHubHost {
    client: Client,
    host: String,
}

impl GitHubHost {
    /// Fails with `HostError::Invalid` when the App key is not an RSA key.
    pub fn new(config: GitHubConfig) -> HostResult<Self> {
        Ok(Self {
            client: Client::new(
                Transport::new(&config.api_url, config.retry, &config.user_agent)?,
                auth::Auth::new(&config.auth, config.key_source, config.account_pins)?,
            ),
            host: config.host,
        })
    }

    /// The GitHub id of the account `owner` (an organisation or a user) of this adapter's host
    /// when the GitHub App is installed on it; `None` when it is not. `Invalid` when the owner
    /// is on another host or the adapter is not a GitHub App.
    pub async fn app_installed_account(&self, owner: &OwnerRef) -> HostResult<Option<u64>> {
        if !owner.host.eq_ignore_ascii_case(&self.host) {
            return Err(HostError::Invalid(format!(
                "{owner} is not on {}, the GitHub App's host",
                self.host
            )));
        }
        self.client
            .auth
            .installed_on(&self.client.transport, &owner.owner)
            .await
    }

    /// Only repositories of this adapter's host are served.
    fn check_repo(&self, repo: &RepoRef) -> HostResult<()> {
        RepoRef::new(&repo.host, &repo.owner, &repo.name)
            .map_err(|e| HostError::Invalid(e.to_string()))?;
        if repo.host.eq_ignore_ascii_case(&self.host) {
            Ok(())
        } else {
            Err(HostError::Invalid(format!(
                "repository {repo} is not on {}",
                self.host
            )))
        }
    }
}

#[async_trait]
impl GitHost for GitHubHost {
    async fn pull_request(
        &self,
        repo: &RepoRef,
        pr: PrNumber,
        target_branch: &str,
    ) -> HostResult<PrFacts> {
        self.check_repo(repo)?;
        validate::branch("target_branch", target_branch)?;
        pulls::facts(&self.client, repo, pr, target_branch).await
    }

    async fn branch_head(&self, repo: &RepoRef, branch: &str) -> HostResult<Option<Sha>> {
        self.check_repo(repo)?;
        validate::branch("branch", branch)?;
        pulls::branch_head(&self.client, repo, branch).await
    }

    async fn create_test_branch(
        &self,
        repo: &RepoRef,
        request: &TestBranchRequest,
    ) -> HostResult<TestBranchOutcome> {
        self.check_repo(repo)?;
        branches::create(&self.client, repo, request).await
    }

    async fn merge(&self, repo: &RepoRef, request: &MergeRequest) -> HostResult<MergeOutcome> {
        self.check_repo(repo)?;
        merge::merge(&self.client, repo, request).await
    }

    async fn merge_landed(
        &self,
        repo: &RepoRef,
        request: &MergeRequest,
    ) -> HostResult<Option<Sha>> {
        self.check_repo(repo)?;
        merge::landed(&self.client, repo, request).await
    }

    async fn close_landed_pull_request(&self, repo: &RepoRef, pr: &BranchPr) -> HostResult<()> {
        self.check_repo(repo)?;
        merge::close_landed(&self.client, repo, pr).await
    }

    /// Deletes the branch, then its building branch, which a build cut short (the function
    /// stopped) may have left; failing to delete that one is only logged.
    async fn delete_branch(&self, repo: &RepoRef, branch: &str) -> HostResult<()> {
        self.check_repo(repo)?;
        branches::delete(&self.client, repo, branch).await?;
        let building = branches::building_branch(branch);
        if let Err(e) = branches::delete(&self.client, repo, &building).await {
            tracing::warn!(branch = %building, error = %e, "could not delete a building branch");
        }
        Ok(())
    }

    async fn upsert_comment(&self, repo: &RepoRef, pr: PrNumber, body: &str) -> HostResult<()> {
        self.check_repo(repo)?;
        pulls::upsert_comment(&self.client, repo, pr, COMMENT_MARKER, body).await
    }

    async fn reply(&self, repo: &RepoRef, to: CommandComment, body: &str) -> HostResult<()> {
        self.check_repo(repo)?;
        let marker = reply_marker(to.id);
        pulls::upsert_comment(&self.client, repo, to.pr, &marker, body).await
    }

    async fn open_test_pull_request(
        &self,
        repo: &RepoRef,
        request: &TestPullRequest,
    ) -> HostResult<()> {
        self.check_repo(repo)?;
        validate::branch("branch", &request.branch)?;
        validate::branch("target", &request.target)?;
        pulls::open_test_pull(&self.client, repo, request).await
    }

    async fn close_test_pull_request(&self, repo: &RepoRef, branch: &str) -> HostResult<()> {
        self.check_repo(repo)?;
        validate::branch("branch", branch)?;
        pulls::close_test_pulls(&self.client, repo, branch).await
    }

    async fn set_status(&self, repo: &RepoRef, sha: &Sha, status: &StatusUpdate) -> HostResult<()> {
        self.check_repo(repo)?;
        validate::sha("sha", sha)?;
        checks::set_status(&self.client, repo, sha, status).await
    }

    async fn required_statuses(
        &self,
        repo: &RepoRef,
        branch: &str,
    ) -> HostResult<RequiredStatuses> {
        self.check_repo(repo)?;
        validate::branch("branch", branch)?;
        checks::required_statuses(&self.client, repo, branch).await
    }

    async fn may_write(&self, repo: &RepoRef, login: &str) -> HostResult<bool> {
        self.check_repo(repo)?;
        pulls::may_write(&self.client, repo, login).await
    }

    async fn commit_checks(&self, repo: &RepoRef, sha: &Sha) -> HostResult<CommitChecks> {
        self.check_repo(repo)?;
        validate::sha("sha", sha)?;
        checks::commit_checks(&self.client, repo, sha).await
    }
}
