//! A Git host that fails on purpose, for tests: it wraps another host and answers some calls
//! with transient errors (rate limits, timeouts), chosen by a seeded random generator, can
//! fail merges on demand, before or after the merge happened (an answer lost on the way
//! back), and can hold an answer back to order a race.

use crate::error::{HostError, HostResult};
use crate::port::{
    CommandComment, CommitChecks, GitHost, MergeOutcome, MergeRequest, StatusUpdate,
    TestBranchOutcome, TestBranchRequest, TestPullRequest,
};
use crate::sync::lock;
use async_trait::async_trait;
use mq_core::engine::BranchPr;
use mq_core::git::{PrFacts, RequiredStatuses};
use mq_core::ids::{PrNumber, RepoRef, Sha};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// When a failing merge fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeFault {
    /// Before reaching the host: nothing merged.
    Before,
    /// After the host merged: the merge happened, its answer was lost.
    After,
}

/// Calls made and faults injected so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostFaultCounts {
    pub calls: u64,
    /// Transient errors injected at random.
    pub transient: u64,
    pub merges_failed_before: u64,
    pub merges_failed_after: u64,
}

/// An answer held back: `reached` is notified once the call has its answer, which it returns
/// once `release` is notified (a slow network, to order a race in a test).
#[derive(Debug, Default)]
pub struct HeldAnswer {
    pub reached: tokio::sync::Notify,
    pub release: tokio::sync::Notify,
}

/// A Git host that injects faults into the calls it passes to another one.
pub struct FaultyGitHost {
    inner: Arc<dyn GitHost>,
    rng: Mutex<fastrand::Rng>,
    /// Chance of a transient fault per call, in millionths (0: none).
    rate_ppm: AtomicU64,
    merge_faults: Mutex<Vec<MergeFault>>,
    held_pull_request: Mutex<Option<Arc<HeldAnswer>>>,
    held_test_branch: Mutex<Option<Arc<HeldAnswer>>>,
    held_merge: Mutex<Option<Arc<HeldAnswer>>>,
    held_comment: Mutex<Option<Arc<HeldAnswer>>>,
    held_checks: Mutex<Option<Arc<HeldAnswer>>>,
    /// Test branches are built without their merge commits' stamps.
    unstamped: std::sync::atomic::AtomicBool,
    counts: Mutex<HostFaultCounts>,
    /// Every call waits between these many milliseconds before it is made.
    latency_ms: Mutex<(u64, u64)>,
}

impl FaultyGitHost {
    /// Wraps `inner`, injecting nothing until told to; `seed` decides which calls fail.
    pub fn new(inner: Arc<dyn GitHost>, seed: u64) -> Self {
        Self {
            inner,
            rng: Mutex::new(fastrand::Rng::with_seed(seed)),
            rate_ppm: AtomicU64::new(0),
            merge_faults: Mutex::new(Vec::new()),
            held_pull_request: Mutex::new(None),
            held_test_branch: Mutex::new(None),
            held_merge: Mutex::new(None),
            held_comment: Mutex::new(None),
            held_checks: Mutex::new(None),
            unstamped: std::sync::atomic::AtomicBool::new(false),
            counts: Mutex::new(HostFaultCounts::default()),
            latency_ms: Mutex::new((0, 0)),
        }
    }

    /// Every call waits between `min` and `max` (uniformly, seeded) before it is made: a slow
    /// Git host (rate limits, a busy API, a slow `git`).
    pub fn set_latency(&self, min: Duration, max: Duration) {
        let millis = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        *lock(&self.latency_ms) = (millis(min), millis(max.max(min)));
    }

    /// The chance (0.0..=1.0) that a call fails with a transient error from now on.
    pub fn set_rate(&self, rate: f64) {
        let ppm = (rate.clamp(0.0, 1.0) * 1_000_000.0) as u64;
        self.rate_ppm.store(ppm, Ordering::SeqCst);
    }

    /// The next `n` merges fail as `fault` says (after any already planned).
    pub fn fail_merges(&self, n: usize, fault: MergeFault) {
        lock(&self.merge_faults).extend(std::iter::repeat_n(fault, n));
    }

    /// Holds back the answer of the next pull request read until released.
    pub fn hold_next_pull_request_answer(&self) -> Arc<HeldAnswer> {
        hold(&self.held_pull_request)
    }

    /// Holds back the answer of the next test branch built until released.
    pub fn hold_next_test_branch_answer(&self) -> Arc<HeldAnswer> {
        hold(&self.held_test_branch)
    }

    /// Holds back the answer of the next merge (made or not) until released.
    pub fn hold_next_merge_answer(&self) -> Arc<HeldAnswer> {
        hold(&self.held_merge)
    }

    /// Holds back the answer of the next comment posted (or updated) until released.
    pub fn hold_next_comment_answer(&self) -> Arc<HeldAnswer> {
        hold(&self.held_comment)
    }

    /// Holds back the answer of the next read of a commit's checks until released.
    pub fn hold_next_checks_answer(&self) -> Arc<HeldAnswer> {
        hold(&self.held_checks)
    }

    /// From now on test branches are built as a host that writes merge commits with its own
    /// time would build them: every build, even of the same pull requests, is a new commit.
    pub fn build_unstamped(&self) {
        self.unstamped.store(true, Ordering::SeqCst);
    }

    /// Merges still planned to fail.
    pub fn merge_faults_left(&self) -> usize {
        lock(&self.merge_faults).len()
    }

    pub fn counts(&self) -> HostFaultCounts {
        lock(&self.counts).clone()
    }

    async fn inject(&self) -> HostResult<()> {
        let (min, max) = *lock(&self.latency_ms);
        if max > 0 {
            let millis = lock(&self.rng).u64(min..=max);
            tokio::time::sleep(Duration::from_millis(millis)).await;
        }
        let rate = self.rate_ppm.load(Ordering::SeqCst);
        let fails = rate > 0 && lock(&self.rng).u64(0..1_000_000) < rate;
        let mut counts = lock(&self.counts);
        counts.calls += 1;
        if fails {
            counts.transient += 1;
            return Err(transient("rate limited (injected)"));
        }
        Ok(())
    }

    /// A merge passed on, unless the next planned merge fault says otherwise.
    async fn merge_with_faults(
        &self,
        repo: &RepoRef,
        request: &MergeRequest,
    ) -> HostResult<MergeOutcome> {
        match self.next_merge_fault() {
            None => self.inner.merge(repo, request).await,
            Some(MergeFault::Before) => {
                lock(&self.counts).merges_failed_before += 1;
                Err(transient(
                    "merge timed out before reaching the host (injected)",
                ))
            }
            Some(MergeFault::After) => {
                let outcome = self.inner.merge(repo, request).await;
                lock(&self.counts).merges_failed_after += 1;
                tracing::debug!(?outcome, "merge answer dropped (injected)");
                Err(transient("merge answer lost (injected)"))
            }
        }
    }

    fn next_merge_fault(&self) -> Option<MergeFault> {
        let mut planned = lock(&self.merge_faults);
        (!planned.is_empty()).then(|| planned.remove(0))
    }
}

fn transient(message: &str) -> HostError {
    HostError::Transient {
        message: message.to_owned(),
        retry_after: Some(Duration::from_secs(1)),
    }
}

/// Sets a hold on the next answer of the calls that `slot` belongs to.
fn hold(slot: &Mutex<Option<Arc<HeldAnswer>>>) -> Arc<HeldAnswer> {
    let held = Arc::new(HeldAnswer::default());
    *lock(slot) = Some(held.clone());
    held
}

/// Waits, if a hold was set in `slot`, until it is released (once: the hold is taken).
async fn wait_if_held(slot: &Mutex<Option<Arc<HeldAnswer>>>) {
    let held = lock(slot).take();
    if let Some(held) = held {
        held.reached.notify_one();
        held.release.notified().await;
    }
}

#[async_trait]
impl GitHost for FaultyGitHost {
    async fn pull_request(
        &self,
        repo: &RepoRef,
        pr: PrNumber,
        target_branch: &str,
    ) -> HostResult<PrFacts> {
        self.inject().await?;
        let answer = self.inner.pull_request(repo, pr, target_branch).await;
        wait_if_held(&self.held_pull_request).await;
        answer
    }

    async fn branch_head(&self, repo: &RepoRef, branch: &str) -> HostResult<Option<Sha>> {
        self.inject().await?;
        self.inner.branch_head(repo, branch).await
    }

    async fn create_test_branch(
        &self,
        repo: &RepoRef,
        request: &TestBranchRequest,
    ) -> HostResult<TestBranchOutcome> {
        self.inject().await?;
        let answer = if self.unstamped.load(Ordering::SeqCst) {
            let mut unstamped = request.clone();
            unstamped.prs.iter_mut().for_each(|pr| pr.stamp = None);
            self.inner.create_test_branch(repo, &unstamped).await
        } else {
            self.inner.create_test_branch(repo, request).await
        };
        wait_if_held(&self.held_test_branch).await;
        answer
    }

    async fn merge(&self, repo: &RepoRef, request: &MergeRequest) -> HostResult<MergeOutcome> {
        self.inject().await?;
        let answer = self.merge_with_faults(repo, request).await;
        wait_if_held(&self.held_merge).await;
        answer
    }

    async fn merge_landed(
        &self,
        repo: &RepoRef,
        request: &MergeRequest,
    ) -> HostResult<Option<Sha>> {
        self.inject().await?;
        self.inner.merge_landed(repo, request).await
    }

    async fn close_landed_pull_request(&self, repo: &RepoRef, pr: &BranchPr) -> HostResult<()> {
        self.inject().await?;
        self.inner.close_landed_pull_request(repo, pr).await
    }

    async fn delete_branch(&self, repo: &RepoRef, branch: &str) -> HostResult<()> {
        self.inject().await?;
        self.inner.delete_branch(repo, branch).await
    }

    async fn upsert_comment(&self, repo: &RepoRef, pr: PrNumber, body: &str) -> HostResult<()> {
        self.inject().await?;
        let answer = self.inner.upsert_comment(repo, pr, body).await;
        wait_if_held(&self.held_comment).await;
        answer
    }

    async fn reply(&self, repo: &RepoRef, to: CommandComment, body: &str) -> HostResult<()> {
        self.inject().await?;
        self.inner.reply(repo, to, body).await
    }

    async fn open_test_pull_request(
        &self,
        repo: &RepoRef,
        request: &TestPullRequest,
    ) -> HostResult<()> {
        self.inject().await?;
        self.inner.open_test_pull_request(repo, request).await
    }

    async fn close_test_pull_request(&self, repo: &RepoRef, branch: &str) -> HostResult<()> {
        self.inject().await?;
        self.inner.close_test_pull_request(repo, branch).await
    }

    async fn set_status(&self, repo: &RepoRef, sha: &Sha, status: &StatusUpdate) -> HostResult<()> {
        self.inject().await?;
        self.inner.set_status(repo, sha, status).await
    }

    async fn required_statuses(
        &self,
        repo: &RepoRef,
        branch: &str,
    ) -> HostResult<RequiredStatuses> {
        self.inject().await?;
        self.inner.required_statuses(repo, branch).await
    }

    async fn may_write(&self, repo: &RepoRef, login: &str) -> HostResult<bool> {
        self.inject().await?;
        self.inner.may_write(repo, login).await
    }

    async fn commit_checks(&self, repo: &RepoRef, sha: &Sha) -> HostResult<CommitChecks> {
        self.inject().await?;
        let answer = self.inner.commit_checks(repo, sha).await;
        wait_if_held(&self.held_checks).await;
        answer
    }
}
