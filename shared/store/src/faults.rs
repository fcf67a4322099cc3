//! A store that fails on purpose, for tests: it wraps another store and answers some calls
//! with the errors DynamoDB gives under load, chosen by a seeded random generator so a run
//! can be repeated.
//!
//! A fault is injected *instead of* the call: the wrapped store is never reached, so a
//! failed call changed nothing. Reads and writes may be throttled or time out; conditional
//! writes (queue commits and deletes, test-health settings) may also fail their condition or
//! see their transaction cancelled, which the DynamoDB adapter reports as a version conflict.
//!
//! Apart from those, commits and queue deletions can *lose their answer*
//! ([`FaultyStore::set_lost_answer_rate`]): the wrapped store applies the write, and the
//! caller gets the timeout error instead of the success, as when DynamoDB applied a
//! transaction whose response never arrived.
//!
//! With a rate of zero (the default) nothing is injected and the wrapper only counts: calls,
//! and the version conflicts the wrapped store answered to commits (contention).
//!
//! [`FaultyStore::set_delay`] makes every call wait before it reaches the wrapped store, as
//! a store across a network answers: calls wait side by side, not one after another.

use crate::error::StoreError;
use crate::port::{
    Claim, HealthScope, IdempotencyRecord, IdempotencyStore, PageCursor, QueueStore, RawResult,
    RunLocation, Store, StoreResult, StoredResponse, TestHealthStore, TestList, TokenRecord,
    TokenStore, UploadRecord,
};
use async_trait::async_trait;
use mq_core::entry::{Entry, UploadedTargets};
use mq_core::health::{RepoHealthSettings, TestCase};
use mq_core::history::Restart;
use mq_core::ids::{OrgId, PrNumber, QueueId, Sha};
use mq_core::metrics::{ConcludedEntry, FinishedRun};
use mq_core::run::TestRun;
use mq_core::snapshot::{Commit, Queue, QueueSnapshot};
use mq_core::time::Timestamp;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use uuid::Uuid;

/// An error the wrapper injects, named after what DynamoDB does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultKind {
    /// `ThrottlingException` / `ProvisionedThroughputExceededException`.
    Throttled,
    /// The request did not get an answer in time (the SDK's timeout).
    TimedOut,
    /// `ConditionalCheckFailedException` on a conditional write.
    ConditionFailed,
    /// `TransactionCanceledException` with a `TransactionConflict` reason.
    TransactionCancelled,
    /// The commit or deletion was applied, but its answer did not arrive in time (the SDK's
    /// timeout).
    AnswerLost,
}

impl FaultKind {
    /// The faults injected instead of a call.
    pub const INSTEAD: [FaultKind; 4] = [
        FaultKind::Throttled,
        FaultKind::TimedOut,
        FaultKind::ConditionFailed,
        FaultKind::TransactionCancelled,
    ];

    /// The error the DynamoDB adapter returns for it.
    pub fn error(self) -> StoreError {
        match self {
            FaultKind::Throttled => StoreError::Unavailable {
                message: "ThrottlingException (injected)".to_owned(),
                retry_after: Some(Duration::from_secs(1)),
            },
            FaultKind::TimedOut | FaultKind::AnswerLost => StoreError::Unavailable {
                message: "DynamoDB did not answer (injected)".to_owned(),
                retry_after: Some(Duration::from_secs(1)),
            },
            FaultKind::ConditionFailed | FaultKind::TransactionCancelled => StoreError::Conflict,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Throttled => "throttled",
            FaultKind::TimedOut => "timed_out",
            FaultKind::ConditionFailed => "condition_failed",
            FaultKind::TransactionCancelled => "transaction_cancelled",
            FaultKind::AnswerLost => "answer_lost",
        }
    }
}

/// What kind of call is made, which decides the faults it can see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    Read,
    Write,
    /// A write with a condition on a version: it can also fail that condition.
    Conditional,
}

/// Calls made and faults injected so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultCounts {
    pub calls: u64,
    pub injected: BTreeMap<FaultKind, u64>,
    /// Version conflicts the wrapped store answered to commits and deletes (not injected):
    /// each one makes the caller retry from a fresh read.
    pub conflicts: u64,
}

impl FaultCounts {
    pub fn total_injected(&self) -> u64 {
        self.injected.values().sum()
    }
}

/// A store that injects faults into the calls it passes to another one.
pub struct FaultyStore {
    inner: Arc<dyn Store>,
    rng: Mutex<fastrand::Rng>,
    /// Chance of a fault per call, in millionths (0: none).
    rate_ppm: AtomicU64,
    /// Chance that a commit or deletion the wrapped store applied loses its answer, in
    /// millionths.
    lost_answer_ppm: AtomicU64,
    counts: Mutex<FaultCounts>,
    /// How long every call waits before it reaches the wrapped store, in microseconds.
    delay_micros: AtomicU64,
}

impl FaultyStore {
    /// Wraps `inner`, injecting nothing until [`FaultyStore::set_rate`]; `seed` decides which
    /// calls fail and how.
    pub fn new(inner: Arc<dyn Store>, seed: u64) -> Self {
        Self {
            inner,
            rng: Mutex::new(fastrand::Rng::with_seed(seed)),
            rate_ppm: AtomicU64::new(0),
            lost_answer_ppm: AtomicU64::new(0),
            counts: Mutex::new(FaultCounts::default()),
            delay_micros: AtomicU64::new(0),
        }
    }

    /// The wrapped store, to look at what really is stored.
    pub fn inner(&self) -> &Arc<dyn Store> {
        &self.inner
    }

    /// The chance (0.0..=1.0) that a call fails from now on.
    pub fn set_rate(&self, rate: f64) {
        self.rate_ppm.store(ppm(rate), Ordering::SeqCst);
    }

    /// The chance (0.0..=1.0) that a commit or deletion the wrapped store applied answers with
    /// a timeout.
    pub fn set_lost_answer_rate(&self, rate: f64) {
        self.lost_answer_ppm.store(ppm(rate), Ordering::SeqCst);
    }

    /// How long every call waits, from now on, before it reaches the wrapped store.
    pub fn set_delay(&self, delay: Duration) {
        let micros = u64::try_from(delay.as_micros()).unwrap_or(u64::MAX);
        self.delay_micros.store(micros, Ordering::SeqCst);
    }

    /// Waits the delay, then counts the call and decides whether it fails.
    async fn enter(&self, call: Call) -> StoreResult<()> {
        let delay = self.delay_micros.load(Ordering::SeqCst);
        if delay > 0 {
            tokio::time::sleep(Duration::from_micros(delay)).await;
        }
        self.inject(call)
    }

    /// Whether a write the wrapped store applied loses its answer (counted).
    fn loses_answer(&self) -> bool {
        let rate = self.lost_answer_ppm.load(Ordering::SeqCst);
        let lost = rate > 0 && lock(&self.rng).u64(0..1_000_000) < rate;
        if lost {
            *lock(&self.counts)
                .injected
                .entry(FaultKind::AnswerLost)
                .or_default() += 1;
        }
        lost
    }

    pub fn counts(&self) -> FaultCounts {
        lock(&self.counts).clone()
    }

    /// Counts the call and decides whether it fails.
    fn inject(&self, call: Call) -> StoreResult<()> {
        let rate = self.rate_ppm.load(Ordering::SeqCst);
        let fault = {
            let mut rng = lock(&self.rng);
            if rate > 0 && rng.u64(0..1_000_000) < rate {
                let kinds: &[FaultKind] = match call {
                    Call::Read | Call::Write => &FaultKind::INSTEAD[..2],
                    Call::Conditional => &FaultKind::INSTEAD,
                };
                Some(kinds[rng.usize(0..kinds.len())])
            } else {
                None
            }
        };
        let mut counts = lock(&self.counts);
        counts.calls += 1;
        match fault {
            Some(kind) => {
                *counts.injected.entry(kind).or_default() += 1;
                Err(kind.error())
            }
            None => Ok(()),
        }
    }

    fn count_conflict<T>(&self, result: &StoreResult<T>) {
        if matches!(result, Err(StoreError::Conflict)) {
            lock(&self.counts).conflicts += 1;
        }
    }
}

fn ppm(rate: f64) -> u64 {
    (rate.clamp(0.0, 1.0) * 1_000_000.0) as u64
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[async_trait]
impl QueueStore for FaultyStore {
    async fn create_queue(&self, queue: &Queue) -> StoreResult<()> {
        self.enter(Call::Write).await?;
        self.inner.create_queue(queue).await
    }

    async fn load(&self, id: &QueueId) -> StoreResult<Option<QueueSnapshot>> {
        self.enter(Call::Read).await?;
        self.inner.load(id).await
    }

    async fn load_shared(&self, id: &QueueId) -> StoreResult<Option<Arc<QueueSnapshot>>> {
        self.enter(Call::Read).await?;
        self.inner.load_shared(id).await
    }

    async fn commit(&self, commit: &Commit) -> StoreResult<()> {
        self.enter(Call::Conditional).await?;
        let result = self.inner.commit(commit).await;
        self.count_conflict(&result);
        if result.is_ok() && self.loses_answer() {
            return Err(FaultKind::AnswerLost.error());
        }
        result
    }

    async fn delete_queue(&self, snapshot: &QueueSnapshot) -> StoreResult<()> {
        self.enter(Call::Conditional).await?;
        let result = self.inner.delete_queue(snapshot).await;
        self.count_conflict(&result);
        if result.is_ok() && self.loses_answer() {
            return Err(FaultKind::AnswerLost.error());
        }
        result
    }

    async fn load_entry(
        &self,
        id: &QueueId,
        pr: PrNumber,
    ) -> StoreResult<Option<(Queue, Option<Entry>)>> {
        self.enter(Call::Read).await?;
        self.inner.load_entry(id, pr).await
    }

    async fn load_run(
        &self,
        id: &QueueId,
        run_id: &str,
    ) -> StoreResult<Option<(Queue, Option<TestRun>)>> {
        self.enter(Call::Read).await?;
        self.inner.load_run(id, run_id).await
    }

    async fn queues_of_org(&self, org: &OrgId) -> StoreResult<Vec<Queue>> {
        self.enter(Call::Read).await?;
        self.inner.queues_of_org(org).await
    }

    async fn queues_of_repo(&self, repo_key: &str) -> StoreResult<Vec<Queue>> {
        self.enter(Call::Read).await?;
        self.inner.queues_of_repo(repo_key).await
    }

    async fn put_uploaded_targets(
        &self,
        id: &QueueId,
        pr: PrNumber,
        targets: &UploadedTargets,
    ) -> StoreResult<()> {
        self.enter(Call::Write).await?;
        self.inner.put_uploaded_targets(id, pr, targets).await
    }

    async fn uploaded_targets(
        &self,
        id: &QueueId,
        pr: PrNumber,
    ) -> StoreResult<Option<UploadedTargets>> {
        self.enter(Call::Read).await?;
        self.inner.uploaded_targets(id, pr).await
    }

    async fn queues_with_work(&self) -> StoreResult<Vec<QueueId>> {
        self.enter(Call::Read).await?;
        self.inner.queues_with_work().await
    }

    async fn runs_by_sha(&self, sha: &Sha) -> StoreResult<Vec<RunLocation>> {
        self.enter(Call::Read).await?;
        self.inner.runs_by_sha(sha).await
    }

    async fn concluded_between(
        &self,
        id: &QueueId,
        from: Timestamp,
        to: Timestamp,
    ) -> StoreResult<Vec<ConcludedEntry>> {
        self.enter(Call::Read).await?;
        self.inner.concluded_between(id, from, to).await
    }

    async fn runs_finished_between(
        &self,
        id: &QueueId,
        from: Timestamp,
        to: Timestamp,
    ) -> StoreResult<Vec<FinishedRun>> {
        self.enter(Call::Read).await?;
        self.inner.runs_finished_between(id, from, to).await
    }

    async fn restarts_between(
        &self,
        id: &QueueId,
        from: Timestamp,
        to: Timestamp,
    ) -> StoreResult<Vec<Restart>> {
        self.enter(Call::Read).await?;
        self.inner.restarts_between(id, from, to).await
    }

    async fn acquire_lease(
        &self,
        id: &QueueId,
        owner: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<bool> {
        self.enter(Call::Write).await?;
        self.inner.acquire_lease(id, owner, now, until).await
    }

    async fn release_lease(&self, id: &QueueId, owner: &str) -> StoreResult<()> {
        self.enter(Call::Write).await?;
        self.inner.release_lease(id, owner).await
    }
}

#[async_trait]
impl TokenStore for FaultyStore {
    async fn find_token(&self, token_hash: &str) -> StoreResult<Option<TokenRecord>> {
        self.enter(Call::Read).await?;
        self.inner.find_token(token_hash).await
    }

    async fn put_token(&self, token: &TokenRecord) -> StoreResult<()> {
        self.enter(Call::Write).await?;
        self.inner.put_token(token).await
    }

    async fn list_tokens(&self) -> StoreResult<Vec<TokenRecord>> {
        self.enter(Call::Read).await?;
        self.inner.list_tokens().await
    }

    async fn revoke_token(&self, id: &str, at: Timestamp) -> StoreResult<()> {
        self.enter(Call::Write).await?;
        self.inner.revoke_token(id, at).await
    }
}

#[async_trait]
impl IdempotencyStore for FaultyStore {
    async fn claim_idempotency_key(
        &self,
        record: &IdempotencyRecord,
        now: Timestamp,
        stale_before: Timestamp,
    ) -> StoreResult<Claim> {
        self.enter(Call::Conditional).await?;
        self.inner
            .claim_idempotency_key(record, now, stale_before)
            .await
    }

    async fn complete_idempotency_key(
        &self,
        scope: &str,
        claim_id: &str,
        response: &StoredResponse,
    ) -> StoreResult<()> {
        self.enter(Call::Conditional).await?;
        self.inner
            .complete_idempotency_key(scope, claim_id, response)
            .await
    }

    async fn release_idempotency_key(&self, scope: &str, claim_id: &str) -> StoreResult<()> {
        self.enter(Call::Write).await?;
        self.inner.release_idempotency_key(scope, claim_id).await
    }
}

#[async_trait]
impl TestHealthStore for FaultyStore {
    async fn health_settings(
        &self,
        scope: &HealthScope,
    ) -> StoreResult<Option<RepoHealthSettings>> {
        self.enter(Call::Read).await?;
        self.inner.health_settings(scope).await
    }

    async fn put_health_settings(
        &self,
        scope: &HealthScope,
        settings: &RepoHealthSettings,
    ) -> StoreResult<()> {
        self.enter(Call::Conditional).await?;
        let result = self.inner.put_health_settings(scope, settings).await;
        self.count_conflict(&result);
        result
    }

    async fn codeowners(&self, scope: &HealthScope) -> StoreResult<Option<String>> {
        self.enter(Call::Read).await?;
        self.inner.codeowners(scope).await
    }

    async fn put_codeowners(&self, scope: &HealthScope, text: &str) -> StoreResult<()> {
        self.enter(Call::Write).await?;
        self.inner.put_codeowners(scope, text).await
    }

    async fn get_test_cases(
        &self,
        scope: &HealthScope,
        ids: &[Uuid],
    ) -> StoreResult<Vec<TestCase>> {
        self.enter(Call::Read).await?;
        self.inner.get_test_cases(scope, ids).await
    }

    async fn settings_and_test_cases(
        &self,
        scope: &HealthScope,
        ids: &[Uuid],
    ) -> StoreResult<(Option<RepoHealthSettings>, Vec<TestCase>)> {
        self.enter(Call::Read).await?;
        self.inner.settings_and_test_cases(scope, ids).await
    }

    async fn settings_and_codeowners(
        &self,
        scope: &HealthScope,
    ) -> StoreResult<(Option<RepoHealthSettings>, Option<String>)> {
        self.enter(Call::Read).await?;
        self.inner.settings_and_codeowners(scope).await
    }

    async fn put_test_cases(&self, cases: &[TestCase]) -> StoreResult<Vec<Uuid>> {
        self.enter(Call::Write).await?;
        self.inner.put_test_cases(cases).await
    }

    async fn list_test_cases(
        &self,
        scope: &HealthScope,
        list: TestList,
        cursor: PageCursor,
        limit: usize,
    ) -> StoreResult<Vec<TestCase>> {
        self.enter(Call::Read).await?;
        self.inner.list_test_cases(scope, list, cursor, limit).await
    }

    async fn count_test_cases(&self, scope: &HealthScope, list: TestList) -> StoreResult<u64> {
        self.enter(Call::Read).await?;
        self.inner.count_test_cases(scope, list).await
    }

    async fn claim_upload(&self, upload: &UploadRecord) -> StoreResult<Option<UploadRecord>> {
        self.enter(Call::Write).await?;
        self.inner.claim_upload(upload).await
    }

    async fn put_upload(&self, upload: &UploadRecord) -> StoreResult<()> {
        self.enter(Call::Write).await?;
        self.inner.put_upload(upload).await
    }

    async fn get_upload(&self, org: &OrgId, key: Uuid) -> StoreResult<Option<UploadRecord>> {
        self.enter(Call::Read).await?;
        self.inner.get_upload(org, key).await
    }

    async fn put_raw_results(
        &self,
        upload: &UploadRecord,
        results: &[RawResult],
    ) -> StoreResult<()> {
        self.enter(Call::Write).await?;
        self.inner.put_raw_results(upload, results).await
    }

    async fn raw_results(&self, org: &OrgId, key: Uuid) -> StoreResult<Vec<RawResult>> {
        self.enter(Call::Read).await?;
        self.inner.raw_results(org, key).await
    }

    async fn due_for_recovery(&self, now: Timestamp, limit: usize) -> StoreResult<Vec<TestCase>> {
        self.enter(Call::Read).await?;
        self.inner.due_for_recovery(now, limit).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryStore;

    fn token(n: u32) -> TokenRecord {
        TokenRecord {
            token_hash: format!("hash-{n}"),
            id: format!("id-{n}"),
            org: OrgId::parse("acme").unwrap(),
            label: String::new(),
            created_at: Timestamp(0),
            revoked_at: None,
        }
    }

    #[tokio::test]
    async fn a_failed_call_never_reaches_the_wrapped_store() {
        let store = FaultyStore::new(Arc::new(MemoryStore::new()), 7);
        store.set_rate(0.5);
        let mut written = 0;
        for n in 0..200 {
            match store.put_token(&token(n)).await {
                Ok(()) => written += 1,
                Err(e) => assert!(e.is_retryable(), "{e}"),
            }
        }
        let counts = store.counts();
        assert_eq!(counts.calls, 200);
        assert_eq!(counts.total_injected(), 200 - written);
        assert!((60..140).contains(&written), "about half fail: {written}");
        store.set_rate(0.0);
        assert_eq!(store.list_tokens().await.unwrap().len() as u64, written);
    }

    #[tokio::test]
    async fn the_same_seed_fails_the_same_calls() {
        let outcomes = |seed| async move {
            let store = FaultyStore::new(Arc::new(MemoryStore::new()), seed);
            store.set_rate(0.3);
            let mut seen = Vec::new();
            for n in 0..50 {
                seen.push(store.put_token(&token(n)).await.is_ok());
            }
            seen
        };
        assert_eq!(outcomes(1).await, outcomes(1).await);
        assert_ne!(outcomes(1).await, outcomes(2).await);
    }
}
