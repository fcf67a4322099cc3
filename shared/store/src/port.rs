//! The storage port: what the application needs from a store, whatever backs it.
//!
//! Every method states its contract; both adapters keep it (the suite in
//! `shared/store/tests/contract` runs against each). What holds throughout:
//!
//! - A method that returns an error changed nothing, except where its comment says it writes
//!   in parts: that is what lets a refused request change nothing (`docs/queue-semantics.md`
//!   §1). One exception no store can rule out: a write whose answer was lost on the way back
//!   (`Unavailable`) may have happened, so a caller reads again before it retries.
//! - Reads see every write whose call returned (consistent reads), except the lists that
//!   DynamoDB serves from a global secondary index, which say so.
//! - A missing item is `Ok(None)` (or an empty list) on reads; writes that need the item say
//!   which error they give.
//! - `Conflict` means the item changed since it was read (a condition failed): read again and
//!   retry. `Unavailable` means the store was throttled or did not answer: retry later.

use crate::error::StoreError;
use crate::history::HistoryStore;
use async_trait::async_trait;
use futures_util::{StreamExt, stream};
use mq_core::entry::{Entry, UploadedTargets};
use mq_core::health::{
    Outcome, RepoHealthSettings, StatusKind, TestCase, UploadMetadata, UploadSummary,
};
use mq_core::ids::{OrgId, OwnerRef, PrNumber, QueueId, Sha};
use mq_core::metrics::{QueueFacts, Window};
use mq_core::run::TestRun;
use mq_core::snapshot::{Commit, Queue, QueueSnapshot};
use mq_core::time::Timestamp;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use uuid::Uuid;

pub type StoreResult<T> = Result<T, StoreError>;

/// Queues whose metrics facts are read at once by [`QueueStore::metrics_facts`]'s default.
pub const PARALLEL_QUEUES: usize = 16;

/// What [`QueueStore::metrics_facts`] read: the facts of every queue it could read, and the
/// queues it could not, each with its error. One unreadable queue (an item this version
/// cannot decode, a read refused after the SDK's retries) leaves the others' facts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricsFacts {
    pub read: Vec<QueueFacts>,
    pub unreadable: Vec<(Queue, StoreError)>,
}

/// A queue's snapshot and last hour, read at once; `None` when the queue is gone.
async fn facts_of_queue<S: QueueStore + ?Sized>(
    store: &S,
    queue: &Queue,
    now: Timestamp,
) -> StoreResult<Option<QueueFacts>> {
    let window = Window::last_hour(queue, now);
    let (snapshot, history) = tokio::try_join!(
        store.load_shared(&queue.id),
        store.history(&queue.id, window)
    )?;
    Ok(snapshot.map(|snapshot| QueueFacts { snapshot, history }))
}

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

/// Queues, their live snapshot, and their history (read through [`HistoryStore`]).
///
/// Every mutation of a queue goes through [`QueueStore::commit`], which writes the queue item
/// and every changed item in one transaction, conditional on the queue's version.
#[async_trait]
pub trait QueueStore: HistoryStore {
    /// Creates a queue at the version it carries, with no entries, runs or effects;
    /// `AlreadyExists` (and nothing changed) when a queue with its id exists.
    async fn create_queue(&self, queue: &Queue) -> StoreResult<()>;

    /// The queue with its active entries, active runs and outbox as the last commit left them
    /// (one version of the queue, which sees a commit whole, also one written in steps, and
    /// also when DynamoDB answers in several pages); `None` when the queue does not exist. Entries, runs and effects come in the order [`QueueSnapshot::sort`]
    /// gives.
    async fn load(&self, id: &QueueId) -> StoreResult<Option<QueueSnapshot>>;

    /// The same snapshot as [`QueueStore::load`], for a reader that only looks at it (the
    /// metrics). A store that keeps snapshots in memory hands out its own, without a copy.
    async fn load_shared(&self, id: &QueueId) -> StoreResult<Option<Arc<QueueSnapshot>>> {
        Ok(self.load(id).await?.map(Arc::new))
    }

    /// Applies a commit atomically, if the stored queue is at `commit.expected_version`: the
    /// queue item, its live changes and the uploaded targets it records are seen together by
    /// every later read, or not at all. `Conflict` when the version moved (on DynamoDB also
    /// when the queue is gone), `NotFound` when the queue is gone. On DynamoDB a commit larger
    /// than one transaction is written in steps that readers and writers see whole
    /// (`dynamo::large_commit`), and the history it records (conclusions, finished runs,
    /// restarts) goes into the transaction as far as room is left, the rest right after: an
    /// error from those later writes comes after the commit happened, like a lost answer.
    async fn commit(&self, commit: &Commit) -> StoreResult<()>;

    /// Deletes a queue, its lease and every live item of `snapshot` at once, if the queue is
    /// still at the snapshot's version. `NotEmpty` while it has active entries, `Conflict` when
    /// the version moved (on DynamoDB also while a commit written in steps is unfinished: it
    /// is finished, and the caller tries again), `NotFound` when it is gone. Its history
    /// (conclusions, finished runs, restarts) stays (on DynamoDB until it expires).
    async fn delete_queue(&self, snapshot: &QueueSnapshot) -> StoreResult<()>;

    /// The queue item alone, as last committed (one consistent read: its state, settings and
    /// version, without its entries); `None` when the queue does not exist.
    async fn load_queue(&self, id: &QueueId) -> StoreResult<Option<Queue>>;

    /// The queue item and the latest entry of a pull request in it, active or concluded since
    /// the queue was created (one read): `None` when the queue does not exist, `Some((queue,
    /// None))` when the pull request has no entry.
    async fn load_entry(
        &self,
        id: &QueueId,
        pr: PrNumber,
    ) -> StoreResult<Option<(Queue, Option<Entry>)>>;

    /// The queue item and one of its runs, active or finished (one read): `None` when the queue
    /// does not exist, `Some((queue, None))` when it has no such run.
    async fn load_run(
        &self,
        id: &QueueId,
        run_id: &str,
    ) -> StoreResult<Option<(Queue, Option<TestRun>)>>;

    /// Every queue of an organisation, in no particular order. Read from an index: a queue
    /// created or deleted a moment ago may be missing or still listed.
    async fn queues_of_org(&self, org: &OrgId) -> StoreResult<Vec<Queue>>;

    /// Every queue on a repository (`RepoRef::key`), whatever the organisation, in no
    /// particular order; from an index, like [`QueueStore::queues_of_org`].
    async fn queues_of_repo(&self, repo_key: &str) -> StoreResult<Vec<Queue>>;

    /// Records the impacted targets uploaded for a pull request of a queue, replacing those
    /// recorded before (latest wins), so a pull request submitted after its CI uploaded them
    /// starts with them. Unconditional: the queue is not checked. On DynamoDB the record
    /// expires like the queue's history.
    async fn put_uploaded_targets(
        &self,
        id: &QueueId,
        pr: PrNumber,
        targets: &UploadedTargets,
    ) -> StoreResult<()>;

    /// The impacted targets last uploaded for a pull request of a queue, by
    /// [`QueueStore::put_uploaded_targets`] or a commit; `None` when there are none.
    async fn uploaded_targets(
        &self,
        id: &QueueId,
        pr: PrNumber,
    ) -> StoreResult<Option<UploadedTargets>>;

    /// Queues that need the tick: active entries, runs in flight or effects pending, as their
    /// last commit left them, in no particular order. From an index: a commit of a moment ago
    /// may not be reflected yet.
    async fn queues_with_work(&self) -> StoreResult<Vec<QueueId>>;

    /// Active runs whose test branch tip is `sha`, in any queue, in no particular order; from
    /// an index, like [`QueueStore::queues_with_work`].
    async fn runs_by_sha(&self, sha: &Sha) -> StoreResult<Vec<RunLocation>>;

    /// What the metrics at `now` of an organisation's queues are computed from, or of its
    /// queues on one repository (`repo_key`, as [`RepoRef::key`](mq_core::ids::RepoRef::key)):
    /// each queue's snapshot (as [`QueueStore::load_shared`] reads it) and its history of the
    /// last hour ([`Window::last_hour`], as [`HistoryStore::history`] reads it), in no
    /// particular order. The default lists the queues, then reads [`PARALLEL_QUEUES`] queues at
    /// a time, each queue's snapshot and history at once (four requests), so 50 queues take a
    /// few round trips, not 200; a queue deleted in between is left out. A queue whose reads
    /// fail is listed in [`MetricsFacts::unreadable`] and the others are still read; only a
    /// failure to list the queues is an error.
    async fn metrics_facts(
        &self,
        org: &OrgId,
        repo_key: Option<&str>,
        now: Timestamp,
    ) -> StoreResult<MetricsFacts> {
        let queues = match repo_key {
            None => self.queues_of_org(org).await?,
            Some(key) => {
                let mut queues = self.queues_of_repo(key).await?;
                queues.retain(|q| &q.org == org);
                queues
            }
        };
        let mut reads = Vec::with_capacity(queues.len());
        for queue in &queues {
            reads.push(async move { (queue, facts_of_queue(self, queue, now).await) });
        }
        let loaded: Vec<_> = stream::iter(reads)
            .buffered(PARALLEL_QUEUES)
            .collect()
            .await;
        let mut facts = MetricsFacts::default();
        for (queue, read) in loaded {
            match read {
                Ok(Some(read)) => facts.read.push(read),
                Ok(None) => {}
                Err(e) => facts.unreadable.push((queue.clone(), e)),
            }
        }
        Ok(facts)
    }

    /// Takes the queue's lease for `owner` until `until` if it is free or expired at `now`
    /// (or already held by `owner`, which extends it), atomically: of two owners asking at
    /// once, one gets it. Returns whether `owner` now holds it (`false`: another owner does);
    /// `NotFound` when the queue does not exist. The lease is not part of the queue's version:
    /// taking it never makes a commit conflict.
    async fn acquire_lease(
        &self,
        id: &QueueId,
        owner: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<bool>;

    /// Gives the lease back if `owner` holds it; does nothing (and succeeds) otherwise.
    async fn release_lease(&self, id: &QueueId, owner: &str) -> StoreResult<()>;
}

/// API tokens, keyed by the hash of the secret.
#[async_trait]
pub trait TokenStore: Send + Sync {
    /// The token with this hash, revoked or not; `None` when there is none.
    async fn find_token(&self, token_hash: &str) -> StoreResult<Option<TokenRecord>>;

    /// Stores a new token; `AlreadyExists` (and nothing changed) if the hash is taken.
    async fn put_token(&self, token: &TokenRecord) -> StoreResult<()>;

    /// Every token of every organisation, revoked or not, oldest (`created_at`) first. From an
    /// index: a token stored a moment ago may be missing.
    async fn list_tokens(&self) -> StoreResult<Vec<TokenRecord>>;

    /// Marks the token with this public id revoked at `at`; revoking it again keeps the first
    /// time. `NotFound` if there is no such token.
    async fn revoke_token(&self, id: &str, at: Timestamp) -> StoreResult<()>;
}

/// A repository owner (`host/owner`) linked to the organisation that owns its repositories.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnerLink {
    pub owner: OwnerRef,
    pub org: OrgId,
    pub linked_at: Timestamp,
    /// The GitHub id of the owner's account when it was linked (`mq-admin owners link` with
    /// the GitHub App given): its repositories are then served only while they belong to
    /// that account, whatever its login names later (see `mq_githost::pins`). `None` for a
    /// link made without the App: any account of that login.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<u64>,
}

/// Which organisation owns which repository owners: each owner is linked to at most one.
/// Owners are matched by [`OwnerRef::key`] (case-insensitively).
#[async_trait]
pub trait OwnerStore: Send + Sync {
    /// The link of the owner whose key is `owner_key` (`github.com/acme`, any case), or
    /// `None`.
    async fn owner_link(&self, owner_key: &str) -> StoreResult<Option<OwnerLink>>;

    /// Links an owner to an organisation, atomically: of two organisations linking one owner
    /// at once, one wins. Linking it again to the same organisation changes nothing (the first
    /// `linked_at` stays) but records the link's `account_id` where none was (in one write:
    /// the owner stays linked throughout); `AlreadyExists` when it is linked to another one.
    async fn link_owner(&self, link: &OwnerLink) -> StoreResult<()>;

    /// Removes the link of `owner` to `org`; `NotFound` (and nothing changed) when the owner
    /// is not linked to it.
    async fn unlink_owner(&self, owner: &OwnerRef, org: &OrgId) -> StoreResult<()>;

    /// Every link, in the order of the owners' keys. From an index: a link made a moment ago
    /// may be missing.
    async fn owner_links(&self) -> StoreResult<Vec<OwnerLink>>;
}

/// Everything the application stores.
pub trait Store: QueueStore + TokenStore + OwnerStore + TestHealthStore + IdempotencyStore {}

impl<T: QueueStore + TokenStore + OwnerStore + TestHealthStore + IdempotencyStore> Store for T {}

// ---------------------------------------------------------------------------------------------
// Idempotency keys
// ---------------------------------------------------------------------------------------------

/// A response kept for replay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredResponse {
    pub status: u16,
    pub content_type: String,
    pub body: String,
}

/// A request's claim on an idempotency key, and its response once it has one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdempotencyRecord {
    /// Organisation, endpoint and key: `<org>#<endpoint>#<key>` (the item key).
    pub scope: String,
    /// Identifies this claim, so only its holder completes or releases it.
    pub claim_id: String,
    /// Lowercase hex SHA-256 of the request body.
    pub body_hash: String,
    pub claimed_at: Timestamp,
    /// When the record may be forgotten (DynamoDB's TTL removes it some time after).
    pub keep_until: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<StoredResponse>,
}

impl IdempotencyRecord {
    /// A new claim (its own random id) on `scope` at `now`, kept for `keep_for_ms`.
    pub fn claim(scope: String, body_hash: String, now: Timestamp, keep_for_ms: i64) -> Self {
        Self {
            scope,
            claim_id: uuid::Uuid::new_v4().to_string(),
            body_hash,
            claimed_at: now,
            keep_until: now.plus_millis(keep_for_ms),
            response: None,
        }
    }
}

/// The outcome of claiming a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The key is ours: act, then complete or release it.
    Claimed,
    /// Another request holds the key (answered, or still running).
    Taken(IdempotencyRecord),
}

impl Claim {
    /// What a claim of `record` is when `existing` holds its scope: `Claimed` when `existing`
    /// is `record`'s own claim, unanswered (made by an attempt whose answer was lost), else
    /// `Taken`.
    pub fn found(record: &IdempotencyRecord, existing: IdempotencyRecord) -> Self {
        if existing.claim_id == record.claim_id && existing.response.is_none() {
            Claim::Claimed
        } else {
            Claim::Taken(existing)
        }
    }
}

/// Idempotency keys of mutating requests, with the first response to each.
#[async_trait]
pub trait IdempotencyStore: Send + Sync {
    /// Stores `record` (without a response) unless a record holds its scope that has not
    /// expired at `now` and is either answered or claimed at or after `stale_before` (an
    /// older unanswered claim belongs to a request that died: it is taken over). Atomic: of
    /// two requests claiming one scope at once, one gets `Claimed` and the other `Taken` with
    /// the winner's record. A claim found holding the scope unanswered with `record`'s own
    /// claim id is this claim, made by an attempt whose answer was lost: `Claimed`.
    /// `Conflict` when the record kept changing while it was read (DynamoDB: three attempts).
    async fn claim_idempotency_key(
        &self,
        record: &IdempotencyRecord,
        now: Timestamp,
        stale_before: Timestamp,
    ) -> StoreResult<Claim>;

    /// Keeps the response of a claim, replacing any kept before; `Conflict` (and nothing
    /// changed) when the scope is held by another claim or by none.
    async fn complete_idempotency_key(
        &self,
        scope: &str,
        claim_id: &str,
        response: &StoredResponse,
    ) -> StoreResult<()>;

    /// Gives up a claim so a retry acts: removes the record if `claim_id` still holds the
    /// scope; does nothing (and succeeds) otherwise.
    async fn release_idempotency_key(&self, scope: &str, claim_id: &str) -> StoreResult<()>;
}

// ---------------------------------------------------------------------------------------------
// Test health
// ---------------------------------------------------------------------------------------------

/// A repository's test-health data, within one organisation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HealthScope {
    pub org: OrgId,
    /// `RepoRef::key`.
    pub repo_key: String,
}

/// A list of a repository's test cases, each kept in test case id order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestList {
    /// Test cases with this status (`Flaky` or `Broken`).
    WithStatus(StatusKind),
    /// Quarantine candidates (override always, or automatic and FLAKY); with
    /// `overrides_only`, those quarantined by their override alone.
    Quarantine { overrides_only: bool },
}

/// Where a page of a list starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageCursor {
    /// The first `limit` items.
    First,
    /// The `limit` items after this test case id.
    After(Uuid),
    /// The `limit` items before this test case id.
    Before(Uuid),
    /// The last `limit` items.
    Last,
}

/// Where an upload is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UploadState {
    /// A presigned URL was handed out; the object has not been ingested.
    AwaitingObject,
    /// Results are being recorded (or a previous attempt stopped half way).
    Ingesting,
    Done,
}

/// An upload, kept (for idempotency) as long as its raw results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadRecord {
    pub org: OrgId,
    /// [`mq_core::health::upload_key`].
    pub key: Uuid,
    pub state: UploadState,
    pub metadata: UploadMetadata,
    pub created_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<UploadSummary>,
    /// Why ingesting it failed (uploads through S3 have no client to tell).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One test case's result in an upload, as kept raw (until it expires).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawResult {
    #[serde(rename = "i")]
    pub id: Uuid,
    #[serde(rename = "o")]
    pub outcome: Outcome,
    #[serde(rename = "a")]
    pub attempts: u16,
}

/// Raw results are kept this long (days), then expire.
pub const RAW_RESULT_RETENTION_DAYS: i64 = 30;

/// Test cases, their results and the repository settings of test health.
///
/// Test case writes are conditional on the version read: [`TestHealthStore::put_test_cases`]
/// reports the ones that lost a race, and the caller merges again from a fresh read.
#[async_trait]
pub trait TestHealthStore: Send + Sync {
    /// The repository's settings; `None` until first set.
    async fn health_settings(&self, scope: &HealthScope)
    -> StoreResult<Option<RepoHealthSettings>>;

    /// Stores settings whose `version` is one more than the stored one (1: first write),
    /// atomically with that check; `Conflict` (and nothing changed) otherwise.
    async fn put_health_settings(
        &self,
        scope: &HealthScope,
        settings: &RepoHealthSettings,
    ) -> StoreResult<()>;

    /// The CODEOWNERS text last sent for the repository; `None` when none was.
    async fn codeowners(&self, scope: &HealthScope) -> StoreResult<Option<String>>;

    /// Keeps the repository's CODEOWNERS text, replacing the one before (unconditional). The
    /// text must fit one item once compressed (`codeowners::fits`, checked by the API first);
    /// DynamoDB answers `Internal` for one that does not.
    async fn put_codeowners(&self, scope: &HealthScope, text: &str) -> StoreResult<()>;

    /// The stored test cases of the repository among `ids`, in any order, each once (an id
    /// given twice is read once); unknown ids (and test cases of another repository) are left
    /// out.
    async fn get_test_cases(&self, scope: &HealthScope, ids: &[Uuid])
    -> StoreResult<Vec<TestCase>>;

    /// The repository's settings and its stored test cases among `ids`, read together: what
    /// [`TestHealthStore::health_settings`] and [`TestHealthStore::get_test_cases`] read. The
    /// default reads one, then the other; on DynamoDB the settings are one more key of the
    /// first `BatchGetItem`, so that up to 99 test cases and the settings are one request.
    async fn settings_and_test_cases(
        &self,
        scope: &HealthScope,
        ids: &[Uuid],
    ) -> StoreResult<(Option<RepoHealthSettings>, Vec<TestCase>)> {
        let settings = self.health_settings(scope).await?;
        Ok((settings, self.get_test_cases(scope, ids).await?))
    }

    /// The repository's settings and its CODEOWNERS text, read together: what
    /// [`TestHealthStore::health_settings`] and [`TestHealthStore::codeowners`] read. The
    /// default reads one, then the other; on DynamoDB one `BatchGetItem` of the two items.
    async fn settings_and_codeowners(
        &self,
        scope: &HealthScope,
    ) -> StoreResult<(Option<RepoHealthSettings>, Option<String>)> {
        let settings = self.health_settings(scope).await?;
        Ok((settings, self.codeowners(scope).await?))
    }

    /// Writes test cases whose `version` is one more than the stored one (1: new), each
    /// conditional on that. Returns the ids of those not written because a stored version
    /// differs: the caller merges them again from a fresh read. On DynamoDB the cases go in
    /// transactions of 100, so one lost race leaves its whole group of 100 unwritten (and
    /// returned); the groups before it stay written when a later one fails.
    async fn put_test_cases(&self, cases: &[TestCase]) -> StoreResult<Vec<Uuid>>;

    /// A page of a list, in ascending test case id order, at most `limit` items (fewer at
    /// either end). From an index: a test case written a moment ago may not be in its lists
    /// yet.
    async fn list_test_cases(
        &self,
        scope: &HealthScope,
        list: TestList,
        cursor: PageCursor,
        limit: usize,
    ) -> StoreResult<Vec<TestCase>>;

    /// How many test cases a list holds (from the same index as
    /// [`TestHealthStore::list_test_cases`]).
    async fn count_test_cases(&self, scope: &HealthScope, list: TestList) -> StoreResult<u64>;

    /// Stores a new upload, atomically: when one exists with its key (of the organisation),
    /// returns it and changes nothing; `None` when this one was stored.
    async fn claim_upload(&self, upload: &UploadRecord) -> StoreResult<Option<UploadRecord>>;

    /// Replaces an upload's record (its state and summary), unconditionally.
    async fn put_upload(&self, upload: &UploadRecord) -> StoreResult<()>;

    /// The upload of the organisation with this key; `None` when there is none.
    async fn get_upload(&self, org: &OrgId, key: Uuid) -> StoreResult<Option<UploadRecord>>;

    /// Keeps an upload's raw results until they expire (idempotent: writing them again stores
    /// the same). Not atomic: on DynamoDB they are written 1,000 results per item, 25 items
    /// per request, so after an error some may be stored; write them again.
    async fn put_raw_results(
        &self,
        upload: &UploadRecord,
        results: &[RawResult],
    ) -> StoreResult<()>;

    /// The raw results of an upload, in the order written, while kept; empty when there are
    /// none.
    async fn raw_results(&self, org: &OrgId, key: Uuid) -> StoreResult<Vec<RawResult>>;

    /// FLAKY test cases of every organisation whose `flaky_until` is at or before `now`,
    /// earliest first, at most `limit`. From an index, like the lists.
    async fn due_for_recovery(&self, now: Timestamp, limit: usize) -> StoreResult<Vec<TestCase>>;
}
