//! The in-memory adapter: the embedded store of the local gateway and of fast tests.
//!
//! It keeps the same conflict semantics as the DynamoDB adapter: every commit checks the
//! queue's version and applies all of its changes, or none.

mod health;
mod history;
mod idempotency;

use crate::error::StoreError;
use crate::port::{
    MetricsFacts, OwnerLink, OwnerStore, QueueStore, RunLocation, StoreResult, TokenRecord,
    TokenStore,
};
use async_trait::async_trait;
use history::QueueHistory;
use mq_core::engine::PendingEffect;
use mq_core::entry::{Entry, UploadedTargets};
use mq_core::history::History;
use mq_core::ids::{OrgId, OwnerRef, PrNumber, QueueId, Sha};
use mq_core::metrics::{QueueFacts, Window};
use mq_core::run::TestRun;
use mq_core::snapshot::{Commit, Queue, QueueSnapshot};
use mq_core::time::Timestamp;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

/// A store held in process memory.
#[derive(Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
    pub(crate) health: health::HealthTables,
    pub(crate) idempotency: idempotency::IdempotencyKeys,
}

#[derive(Default)]
struct Inner {
    live: BTreeMap<QueueId, Live>,
    leases: HashMap<QueueId, (String, Timestamp)>,
    latest_concluded: HashMap<(QueueId, PrNumber), Entry>,
    /// Per queue, its history.
    history: HashMap<QueueId, QueueHistory>,
    uploaded_targets: HashMap<(QueueId, PrNumber), UploadedTargets>,
    tokens: BTreeMap<String, TokenRecord>,
    /// By owner key.
    owners: BTreeMap<String, OwnerLink>,
}

/// A queue's live items, as the DynamoDB adapter keeps them in the queue's partition.
struct Live {
    queue: Queue,
    /// Shared with the snapshots handed out, as the engine shares them between versions.
    entries: BTreeMap<PrNumber, Arc<Entry>>,
    runs: BTreeMap<String, TestRun>,
    outbox: BTreeMap<String, PendingEffect>,
    /// The snapshot of this version, once a reader asked for it; dropped by every commit.
    shared: Option<Arc<QueueSnapshot>>,
}

impl Live {
    fn new(queue: Queue) -> Self {
        Self {
            queue,
            entries: BTreeMap::new(),
            runs: BTreeMap::new(),
            outbox: BTreeMap::new(),
            shared: None,
        }
    }

    fn shared_snapshot(&mut self) -> Arc<QueueSnapshot> {
        if let Some(shared) = &self.shared {
            return shared.clone();
        }
        let shared = Arc::new(self.snapshot());
        self.shared = Some(shared.clone());
        shared
    }

    fn snapshot(&self) -> QueueSnapshot {
        let mut snapshot = QueueSnapshot {
            queue: self.queue.clone(),
            entries: self.entries.values().cloned().collect(),
            runs: self.runs.values().cloned().collect(),
            outbox: self.outbox.values().cloned().collect(),
        };
        snapshot.sort();
        snapshot
    }
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves consistent data: every write is applied after
        // all checks passed.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Inner {
    fn check_commit(&self, commit: &Commit) -> StoreResult<()> {
        let live = self
            .live
            .get(&commit.queue.id)
            .ok_or(StoreError::NotFound)?;
        let same_queue = live.queue.created_at == commit.queue.created_at;
        if live.queue.version != commit.expected_version || !same_queue {
            return Err(StoreError::Conflict);
        }
        Ok(())
    }

    fn apply_commit(&mut self, commit: &Commit) {
        let id = commit.queue.id.clone();
        if let Some(live) = self.live.get_mut(&id) {
            live.shared = None;
            live.queue = commit.queue.clone();
            for pr in &commit.live.delete_entries {
                live.entries.remove(pr);
            }
            for e in &commit.live.put_entries {
                live.entries.insert(e.pr, Arc::new(e.clone()));
            }
            for r in &commit.live.delete_runs {
                live.runs.remove(r);
            }
            for r in &commit.live.put_runs {
                live.runs.insert(r.id.clone(), r.clone());
            }
            for x in &commit.live.delete_effects {
                live.outbox.remove(x);
            }
            for x in &commit.live.put_effects {
                live.outbox.insert(x.id.clone(), x.clone());
            }
        }
        for (pr, targets) in &commit.uploaded_targets {
            self.uploaded_targets
                .insert((id.clone(), *pr), targets.clone());
        }
        let history = self.history.entry(id.clone()).or_default();
        for e in &commit.concluded {
            self.latest_concluded.insert((id.clone(), e.pr), e.clone());
            history.record_conclusion(e, commit.queue.updated_at);
        }
        for r in &commit.finished_runs {
            history.record_finished_run(r);
        }
        for r in &commit.restarts {
            history.record_restart(r);
        }
    }
}

#[async_trait]
impl QueueStore for MemoryStore {
    async fn create_queue(&self, queue: &Queue) -> StoreResult<()> {
        let mut inner = self.lock();
        if inner.live.contains_key(&queue.id) {
            return Err(StoreError::AlreadyExists);
        }
        inner
            .live
            .insert(queue.id.clone(), Live::new(queue.clone()));
        Ok(())
    }

    async fn load(&self, id: &QueueId) -> StoreResult<Option<QueueSnapshot>> {
        Ok(self.lock().live.get(id).map(Live::snapshot))
    }

    async fn load_shared(&self, id: &QueueId) -> StoreResult<Option<Arc<QueueSnapshot>>> {
        Ok(self.lock().live.get_mut(id).map(Live::shared_snapshot))
    }

    async fn commit(&self, commit: &Commit) -> StoreResult<()> {
        let mut inner = self.lock();
        inner.check_commit(commit)?;
        inner.apply_commit(commit);
        Ok(())
    }

    async fn delete_queue(&self, snapshot: &QueueSnapshot) -> StoreResult<()> {
        let id = &snapshot.queue.id;
        let mut inner = self.lock();
        let live = inner.live.get(id).ok_or(StoreError::NotFound)?;
        if !live.entries.is_empty() {
            return Err(StoreError::NotEmpty);
        }
        let same_queue = live.queue.created_at == snapshot.queue.created_at;
        if live.queue.version != snapshot.queue.version || !same_queue {
            return Err(StoreError::Conflict);
        }
        inner.live.remove(id);
        inner.leases.remove(id);
        Ok(())
    }

    async fn load_queue(&self, id: &QueueId) -> StoreResult<Option<Queue>> {
        Ok(self.lock().live.get(id).map(|live| live.queue.clone()))
    }

    async fn load_entry(
        &self,
        id: &QueueId,
        pr: PrNumber,
    ) -> StoreResult<Option<(Queue, Option<Entry>)>> {
        let inner = self.lock();
        let Some(live) = inner.live.get(id) else {
            return Ok(None);
        };
        let concluded = inner.latest_concluded.get(&(id.clone(), pr));
        let entry =
            crate::order::latest_entry(&live.queue, live.entries.get(&pr).map(|e| &**e), concluded);
        Ok(Some((live.queue.clone(), entry)))
    }

    async fn load_run(
        &self,
        id: &QueueId,
        run_id: &str,
    ) -> StoreResult<Option<(Queue, Option<TestRun>)>> {
        let inner = self.lock();
        let Some(live) = inner.live.get(id) else {
            return Ok(None);
        };
        let finished = inner.history.get(id).and_then(|h| h.runs.get(run_id));
        let run = crate::order::current_run(&live.queue, live.runs.get(run_id), finished);
        Ok(Some((live.queue.clone(), run)))
    }

    async fn queues_of_org(&self, org: &OrgId) -> StoreResult<Vec<Queue>> {
        let inner = self.lock();
        Ok(inner
            .live
            .values()
            .filter(|l| &l.queue.org == org)
            .map(|l| l.queue.clone())
            .collect())
    }

    async fn queues_of_repo(&self, repo_key: &str) -> StoreResult<Vec<Queue>> {
        let inner = self.lock();
        Ok(inner
            .live
            .values()
            .filter(|l| l.queue.repo.key() == repo_key)
            .map(|l| l.queue.clone())
            .collect())
    }

    async fn put_uploaded_targets(
        &self,
        id: &QueueId,
        pr: PrNumber,
        targets: &UploadedTargets,
    ) -> StoreResult<()> {
        self.lock()
            .uploaded_targets
            .insert((id.clone(), pr), targets.clone());
        Ok(())
    }

    async fn uploaded_targets(
        &self,
        id: &QueueId,
        pr: PrNumber,
    ) -> StoreResult<Option<UploadedTargets>> {
        Ok(self.lock().uploaded_targets.get(&(id.clone(), pr)).cloned())
    }

    async fn queues_with_work(&self) -> StoreResult<Vec<QueueId>> {
        let inner = self.lock();
        Ok(inner
            .live
            .iter()
            .filter(|(_, l)| !l.entries.is_empty() || !l.runs.is_empty() || !l.outbox.is_empty())
            .map(|(id, _)| id.clone())
            .collect())
    }

    async fn runs_by_sha(&self, sha: &Sha) -> StoreResult<Vec<RunLocation>> {
        let inner = self.lock();
        let mut found = Vec::new();
        for (id, live) in &inner.live {
            for run in live.runs.values().filter(|r| r.sha.as_ref() == Some(sha)) {
                found.push(RunLocation {
                    queue: id.clone(),
                    run_id: run.id.clone(),
                });
            }
        }
        Ok(found)
    }

    /// Every queue's facts read under one lock, from the queues themselves: nothing to wait
    /// for, so nothing to overlap, and no list to copy first; none is unreadable.
    async fn metrics_facts(
        &self,
        org: &OrgId,
        repo_key: Option<&str>,
        now: Timestamp,
    ) -> StoreResult<MetricsFacts> {
        let mut inner = self.lock();
        let Inner { live, history, .. } = &mut *inner;
        let wanted =
            |queue: &Queue| &queue.org == org && repo_key.is_none_or(|key| queue.repo.key() == key);
        let facts = live.values_mut().filter(|l| wanted(&l.queue)).map(|live| {
            let window = Window::last_hour(&live.queue, now);
            let history = history.get(&live.queue.id);
            QueueFacts {
                history: history.map_or_else(History::default, |h| h.history_in(window).summary()),
                snapshot: live.shared_snapshot(),
            }
        });
        Ok(MetricsFacts {
            read: facts.collect(),
            unreadable: Vec::new(),
        })
    }

    async fn acquire_lease(
        &self,
        id: &QueueId,
        owner: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<bool> {
        let mut inner = self.lock();
        if !inner.live.contains_key(id) {
            return Err(StoreError::NotFound);
        }
        let free = match inner.leases.get(id) {
            None => true,
            Some((holder, expires)) => holder == owner || *expires <= now,
        };
        if free {
            inner.leases.insert(id.clone(), (owner.to_owned(), until));
        }
        Ok(free)
    }

    async fn release_lease(&self, id: &QueueId, owner: &str) -> StoreResult<()> {
        let mut inner = self.lock();
        if inner
            .leases
            .get(id)
            .is_some_and(|(holder, _)| holder == owner)
        {
            inner.leases.remove(id);
        }
        Ok(())
    }
}

#[async_trait]
impl TokenStore for MemoryStore {
    async fn find_token(&self, token_hash: &str) -> StoreResult<Option<TokenRecord>> {
        Ok(self.lock().tokens.get(token_hash).cloned())
    }

    async fn put_token(&self, token: &TokenRecord) -> StoreResult<()> {
        let mut inner = self.lock();
        if inner.tokens.contains_key(&token.token_hash) {
            return Err(StoreError::AlreadyExists);
        }
        inner.tokens.insert(token.token_hash.clone(), token.clone());
        Ok(())
    }

    async fn list_tokens(&self) -> StoreResult<Vec<TokenRecord>> {
        let mut tokens: Vec<TokenRecord> = self.lock().tokens.values().cloned().collect();
        tokens.sort_by_key(|t| (t.created_at, t.id.clone()));
        Ok(tokens)
    }

    async fn revoke_token(&self, id: &str, at: Timestamp) -> StoreResult<()> {
        let mut inner = self.lock();
        let token = inner
            .tokens
            .values_mut()
            .find(|t| t.id == id)
            .ok_or(StoreError::NotFound)?;
        token.revoked_at.get_or_insert(at);
        Ok(())
    }
}

#[async_trait]
impl OwnerStore for MemoryStore {
    async fn owner_link(&self, owner_key: &str) -> StoreResult<Option<OwnerLink>> {
        Ok(self
            .lock()
            .owners
            .get(&owner_key.to_ascii_lowercase())
            .cloned())
    }

    async fn link_owner(&self, link: &OwnerLink) -> StoreResult<()> {
        let mut inner = self.lock();
        match inner.owners.get_mut(&link.owner.key()) {
            Some(existing) if existing.org == link.org => {
                if existing.account_id.is_none() {
                    existing.account_id = link.account_id;
                }
                Ok(())
            }
            Some(_) => Err(StoreError::AlreadyExists),
            None => {
                inner.owners.insert(link.owner.key(), link.clone());
                Ok(())
            }
        }
    }

    async fn unlink_owner(&self, owner: &OwnerRef, org: &OrgId) -> StoreResult<()> {
        let mut inner = self.lock();
        match inner.owners.get(&owner.key()) {
            Some(link) if &link.org == org => {
                inner.owners.remove(&owner.key());
                Ok(())
            }
            _ => Err(StoreError::NotFound),
        }
    }

    async fn owner_links(&self) -> StoreResult<Vec<OwnerLink>> {
        Ok(self.lock().owners.values().cloned().collect())
    }
}
