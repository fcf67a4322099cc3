//! The storage port: what the application needs from a store, whatever backs it.

use crate::error::StoreError;
use async_trait::async_trait;
use mq_core::entry::{Entry, UploadedTargets};
use mq_core::history::Restart;
use mq_core::ids::{OrgId, PrNumber, QueueId, Sha};
use mq_core::run::TestRun;
use mq_core::snapshot::{Commit, Queue, QueueSnapshot};
use mq_core::time::Timestamp;
use serde::{Deserialize, Serialize};

pub type StoreResult<T> = Result<T, StoreError>;

/// An API token as stored: only the SHA-256 of the secret is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRecord {
    /// Lowercase hex SHA-256 of the token (the key).
    pub token_hash: String,
    /// A public handle for listing and revoking, never the secret.
    pub id: String,
    pub org: OrgId,
    #[serde(default)]
    pub label: String,
    pub created_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<Timestamp>,
}

/// Where a run with a given test-branch tip lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunLocation {
    pub queue: QueueId,
    pub run_id: String,
}

/// Queues, their live snapshot, and their history.
///
/// Every mutation of a queue goes through [`QueueStore::commit`], which writes the queue item
/// and every changed item in one transaction, conditional on the queue's version.
#[async_trait]
pub trait QueueStore: Send + Sync {
    /// Creates a queue; `AlreadyExists` when one exists for the branch.
    async fn create_queue(&self, queue: &Queue) -> StoreResult<()>;

    /// The queue with its active entries, active runs and outbox (one read).
    async fn load(&self, id: &QueueId) -> StoreResult<Option<QueueSnapshot>>;

    /// Applies a commit atomically; `Conflict` when the version moved, `NotFound` when the
    /// queue is gone.
    async fn commit(&self, commit: &Commit) -> StoreResult<()>;

    /// Deletes a queue and every live item of `snapshot`, if the queue is still at the
    /// snapshot's version. `NotEmpty` while it has active entries, `Conflict` when the version
    /// moved, `NotFound` when it is gone.
    async fn delete_queue(&self, snapshot: &QueueSnapshot) -> StoreResult<()>;

    /// The queue item and the latest entry of a pull request in it, active or concluded since
    /// the queue was created (one read). `None` when the queue does not exist.
    async fn load_entry(
        &self,
        id: &QueueId,
        pr: PrNumber,
    ) -> StoreResult<Option<(Queue, Option<Entry>)>>;

    /// The queue item and one of its runs, active or finished (one read). `None` when the queue
    /// does not exist.
    async fn load_run(
        &self,
        id: &QueueId,
        run_id: &str,
    ) -> StoreResult<Option<(Queue, Option<TestRun>)>>;

    /// Every queue of an organisation.
    async fn queues_of_org(&self, org: &OrgId) -> StoreResult<Vec<Queue>>;

    /// Every queue on a repository (`RepoRef::key`), whatever the organisation.
    async fn queues_of_repo(&self, repo_key: &str) -> StoreResult<Vec<Queue>>;

    /// Records the impacted targets uploaded for a pull request of a queue (latest wins), so a
    /// pull request submitted after its CI uploaded them starts with them.
    async fn put_uploaded_targets(
        &self,
        id: &QueueId,
        pr: PrNumber,
        targets: &UploadedTargets,
    ) -> StoreResult<()>;

    /// The impacted targets last uploaded for a pull request of a queue.
    async fn uploaded_targets(
        &self,
        id: &QueueId,
        pr: PrNumber,
    ) -> StoreResult<Option<UploadedTargets>>;

    /// Queues that need the tick: active entries, runs in flight or effects pending.
    async fn queues_with_work(&self) -> StoreResult<Vec<QueueId>>;

    /// Active runs whose test branch tip is `sha`.
    async fn runs_by_sha(&self, sha: &Sha) -> StoreResult<Vec<RunLocation>>;

    /// Entries of a queue concluded in `[from, to)`, oldest first.
    async fn concluded_between(
        &self,
        id: &QueueId,
        from: Timestamp,
        to: Timestamp,
    ) -> StoreResult<Vec<Entry>>;

    /// Runs of a queue finished in `[from, to)`, oldest first.
    async fn runs_finished_between(
        &self,
        id: &QueueId,
        from: Timestamp,
        to: Timestamp,
    ) -> StoreResult<Vec<TestRun>>;

    /// Restarts of a queue's entries recorded in `[from, to)`, oldest first.
    async fn restarts_between(
        &self,
        id: &QueueId,
        from: Timestamp,
        to: Timestamp,
    ) -> StoreResult<Vec<Restart>>;

    /// Takes the queue's lease for `owner` until `until` if it is free or expired at `now`
    /// (or already held by `owner`). Returns whether the lease is held.
    async fn acquire_lease(
        &self,
        id: &QueueId,
        owner: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<bool>;

    /// Gives the lease back if `owner` holds it.
    async fn release_lease(&self, id: &QueueId, owner: &str) -> StoreResult<()>;
}

/// API tokens, keyed by the hash of the secret.
#[async_trait]
pub trait TokenStore: Send + Sync {
    /// The token with this hash, revoked or not.
    async fn find_token(&self, token_hash: &str) -> StoreResult<Option<TokenRecord>>;

    /// Stores a new token; `AlreadyExists` if the hash is taken.
    async fn put_token(&self, token: &TokenRecord) -> StoreResult<()>;

    /// Every token, oldest first.
    async fn list_tokens(&self) -> StoreResult<Vec<TokenRecord>>;

    /// Marks the token with this public id revoked; `NotFound` if there is none.
    async fn revoke_token(&self, id: &str, at: Timestamp) -> StoreResult<()>;
}

/// Everything the application stores.
pub trait Store: QueueStore + TokenStore {}

impl<T: QueueStore + TokenStore> Store for T {}
