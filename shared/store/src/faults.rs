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

use crate::error::StoreError;
use crate::history::HistoryStore;
use crate::port::{
    Claim, HealthScope, IdempotencyRecord, IdempotencyStore, OwnerLink, OwnerStore, PageCursor,
    QueueStore, RawResult, RunLocation, Store, StoreResult, StoredResponse, TestHealthStore,
    TestList, TokenRecord, TokenStore, UploadRecord,
};
use async_trait::async_trait;
use mq_core::entry::{Entry, UploadedTargets};
use mq_core::health::{RepoHealthSettings, TestCase};
use mq_core::history::Restart;
use mq_core::ids::{OrgId, OwnerRef, PrNumber, QueueId, Sha};
use mq_core::metrics::Window;
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
    latency: Latency,
    counts: Mutex<FaultCounts>,
    held_uploaded_targets: Mutex<Option<Arc<HeldAnswer>>>,
    held_load: Mutex<Option<Arc<HeldAnswer>>>,
}

/// An answer held back: `reached` is notified once the wrapped store has answered, and the
/// caller gets the answer after `release` is notified.
#[derive(Debug, Default)]
pub struct HeldAnswer {
    pub reached: tokio::sync::Notify,
    pub release: tokio::sync::Notify,
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
            latency: Latency::default(),
            counts: Mutex::new(FaultCounts::default()),
            held_uploaded_targets: Mutex::new(None),
            held_load: Mutex::new(None),
        }
    }

    /// Holds back the answer of the next read of uploaded impacted targets until released.
    pub fn hold_next_uploaded_targets_answer(&self) -> Arc<HeldAnswer> {
        let held = Arc::new(HeldAnswer::default());
        *lock(&self.held_uploaded_targets) = Some(held.clone());
        held
    }

    /// Holds back the answer of the next read of a whole queue (`load`) until released: what
    /// the request that made it does next is then based on a snapshot others may change.
    pub fn hold_next_load_answer(&self) -> Arc<HeldAnswer> {
        let held = Arc::new(HeldAnswer::default());
        *lock(&self.held_load) = Some(held.clone());
        held
    }

    /// Every call waits between `min` and `max` (uniformly, seeded) before it is made: a slow
    /// DynamoDB (throttling, a far region, a busy machine).
    pub fn set_latency(&self, min: Duration, max: Duration) {
        self.latency.set(min, max);
    }

    /// The wrapped store, to look at what really is stored.
    pub fn inner(&self) -> &Arc<dyn Store> {
        &self.inner
    }

    /// The chance (0.0..=1.0) that a call fails from now on.
    pub fn set_rate(&self, rate: f64) {
        self.rate_ppm.store(ppm(rate), Ordering::SeqCst);
    }

    /// The chance (0.0..=1.0) that a creation, commit or deletion of a queue the wrapped store
    /// applied answers with a timeout.
    pub fn set_lost_answer_rate(&self, rate: f64) {
        self.lost_answer_ppm.store(ppm(rate), Ordering::SeqCst);
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

    /// Waits the injected latency, counts the call and decides whether it fails.
    async fn inject(&self, call: Call) -> StoreResult<()> {
        self.latency.wait(&self.rng).await;
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

    /// What the caller of a commit or deletion gets: its conflicts are counted, and a success
    /// may lose its answer.
    fn answer(&self, result: StoreResult<()>) -> StoreResult<()> {
        self.count_conflict(&result);
        if result.is_ok() && self.loses_answer() {
            return Err(FaultKind::AnswerLost.error());
        }
        result
    }
}

/// A delay injected before every call, drawn from `[min, max]` milliseconds.
#[derive(Debug, Default)]
pub struct Latency {
    min_ms: AtomicU64,
    max_ms: AtomicU64,
}

impl Latency {
    pub fn set(&self, min: Duration, max: Duration) {
        let millis = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        self.min_ms.store(millis(min), Ordering::SeqCst);
        self.max_ms.store(millis(max.max(min)), Ordering::SeqCst);
    }

    /// Sleeps for a draw of `rng` from the range; returns at once when none is set.
    pub async fn wait(&self, rng: &Mutex<fastrand::Rng>) {
        let (min, max) = (
            self.min_ms.load(Ordering::SeqCst),
            self.max_ms.load(Ordering::SeqCst),
        );
        if max == 0 {
            return;
        }
        let millis = lock(rng).u64(min..=max);
        tokio::time::sleep(Duration::from_millis(millis)).await;
    }
}

fn ppm(rate: f64) -> u64 {
    (rate.clamp(0.0, 1.0) * 1_000_000.0) as u64
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Implements a port trait for [`FaultyStore`]: each listed method (`Kind fn name(args) ->
/// T;`) waits, counts and maybe fails as a call of its kind ([`FaultyStore::inject`]), then
/// passes the call on to the wrapped store; methods written out after the list do more.
macro_rules! pass_on {
    (
        $port:ident {
            $($call:ident fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*
        }
        $($own:tt)*
    ) => {
        #[async_trait]
        impl $port for FaultyStore {
            $(
                async fn $name(&self, $($arg: $ty),*) -> StoreResult<$ret> {
                    self.inject(Call::$call).await?;
                    self.inner.$name($($arg),*).await
                }
            )*
            $($own)*
        }
    };
}

pass_on! {
    HistoryStore {
        Read fn conclusions_between(id: &QueueId, window: Window, limit: usize) -> Vec<Entry>;
        Read fn finished_runs_between(id: &QueueId, window: Window, limit: usize) -> Vec<TestRun>;
        Read fn conclusion_summaries_between(id: &QueueId, window: Window, limit: usize) -> Vec<Entry>;
        Read fn finished_run_summaries_between(id: &QueueId, window: Window, limit: usize) -> Vec<TestRun>;
        Read fn restarts_between(id: &QueueId, window: Window) -> Vec<Restart>;
    }
}

pass_on! {
    QueueStore {
        Read fn load_shared(id: &QueueId) -> Option<Arc<QueueSnapshot>>;
        Read fn load_queue(id: &QueueId) -> Option<Queue>;
        Read fn load_entry(id: &QueueId, pr: PrNumber) -> Option<(Queue, Option<Entry>)>;
        Read fn load_run(id: &QueueId, run_id: &str) -> Option<(Queue, Option<TestRun>)>;
        Read fn queues_of_org(org: &OrgId) -> Vec<Queue>;
        Read fn queues_of_repo(repo_key: &str) -> Vec<Queue>;
        Write fn put_uploaded_targets(id: &QueueId, pr: PrNumber, targets: &UploadedTargets) -> ();
        Read fn queues_with_work() -> Vec<QueueId>;
        Read fn runs_by_sha(sha: &Sha) -> Vec<RunLocation>;
        Write fn acquire_lease(id: &QueueId, owner: &str, now: Timestamp, until: Timestamp) -> bool;
        Write fn release_lease(id: &QueueId, owner: &str) -> ();
    }

    async fn create_queue(&self, queue: &Queue) -> StoreResult<()> {
        self.inject(Call::Write).await?;
        self.answer(self.inner.create_queue(queue).await)
    }

    async fn commit(&self, commit: &Commit) -> StoreResult<()> {
        self.inject(Call::Conditional).await?;
        self.answer(self.inner.commit(commit).await)
    }

    async fn delete_queue(&self, snapshot: &QueueSnapshot) -> StoreResult<()> {
        self.inject(Call::Conditional).await?;
        self.answer(self.inner.delete_queue(snapshot).await)
    }

    async fn load(&self, id: &QueueId) -> StoreResult<Option<QueueSnapshot>> {
        self.inject(Call::Read).await?;
        let answer = self.inner.load(id).await;
        wait_if_held(&self.held_load).await;
        answer
    }

    async fn uploaded_targets(
        &self,
        id: &QueueId,
        pr: PrNumber,
    ) -> StoreResult<Option<UploadedTargets>> {
        self.inject(Call::Read).await?;
        let answer = self.inner.uploaded_targets(id, pr).await;
        wait_if_held(&self.held_uploaded_targets).await;
        answer
    }
}

/// Waits for the release of the answer `slot` holds, if it holds one (taken: it holds only
/// one answer).
async fn wait_if_held(slot: &Mutex<Option<Arc<HeldAnswer>>>) {
    let held = lock(slot).take();
    if let Some(held) = held {
        held.reached.notify_one();
        held.release.notified().await;
    }
}

pass_on! {
    TokenStore {
        Read fn find_token(token_hash: &str) -> Option<TokenRecord>;
        Write fn put_token(token: &TokenRecord) -> ();
        Read fn list_tokens() -> Vec<TokenRecord>;
        Write fn revoke_token(id: &str, at: Timestamp) -> ();
    }
}

pass_on! {
    OwnerStore {
        Read fn owner_link(owner_key: &str) -> Option<OwnerLink>;
        Write fn link_owner(link: &OwnerLink) -> ();
        Write fn unlink_owner(owner: &OwnerRef, org: &OrgId) -> ();
        Read fn owner_links() -> Vec<OwnerLink>;
    }
}

pass_on! {
    IdempotencyStore {
        Conditional fn claim_idempotency_key(
            record: &IdempotencyRecord, now: Timestamp, stale_before: Timestamp
        ) -> Claim;
        Conditional fn complete_idempotency_key(
            scope: &str, claim_id: &str, response: &StoredResponse
        ) -> ();
        Write fn release_idempotency_key(scope: &str, claim_id: &str) -> ();
    }
}

pass_on! {
    TestHealthStore {
        Read fn health_settings(scope: &HealthScope) -> Option<RepoHealthSettings>;
        Read fn codeowners(scope: &HealthScope) -> Option<String>;
        Write fn put_codeowners(scope: &HealthScope, text: &str) -> ();
        Read fn get_test_cases(scope: &HealthScope, ids: &[Uuid]) -> Vec<TestCase>;
        Read fn settings_and_test_cases(scope: &HealthScope, ids: &[Uuid])
            -> (Option<RepoHealthSettings>, Vec<TestCase>);
        Read fn settings_and_codeowners(scope: &HealthScope)
            -> (Option<RepoHealthSettings>, Option<String>);
        Write fn put_test_cases(cases: &[TestCase]) -> Vec<Uuid>;
        Read fn list_test_cases(
            scope: &HealthScope, list: TestList, cursor: PageCursor, limit: usize
        ) -> Vec<TestCase>;
        Read fn count_test_cases(scope: &HealthScope, list: TestList) -> u64;
        Write fn claim_upload(upload: &UploadRecord) -> Option<UploadRecord>;
        Write fn put_upload(upload: &UploadRecord) -> ();
        Read fn get_upload(org: &OrgId, key: Uuid) -> Option<UploadRecord>;
        Write fn put_raw_results(upload: &UploadRecord, results: &[RawResult]) -> ();
        Read fn raw_results(org: &OrgId, key: Uuid) -> Vec<RawResult>;
        Read fn due_for_recovery(now: Timestamp, limit: usize) -> Vec<TestCase>;
    }

    async fn put_health_settings(
        &self,
        scope: &HealthScope,
        settings: &RepoHealthSettings,
    ) -> StoreResult<()> {
        self.inject(Call::Conditional).await?;
        let result = self.inner.put_health_settings(scope, settings).await;
        self.count_conflict(&result);
        result
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
