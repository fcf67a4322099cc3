//! Test health in memory, with the DynamoDB adapter's semantics: versioned writes, lists in
//! test case id order.

use super::MemoryStore;
use crate::error::StoreError;
use crate::port::{
    HealthScope, PageCursor, RawResult, StoreResult, TestHealthStore, TestList, UploadRecord,
};
use async_trait::async_trait;
use mq_core::health::{RepoHealthSettings, TestCase};
use mq_core::ids::OrgId;
use mq_core::time::Timestamp;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};
use uuid::Uuid;

/// The test-health tables of a [`MemoryStore`].
#[derive(Default)]
pub struct HealthTables {
    inner: Mutex<Tables>,
}

#[derive(Default)]
struct Tables {
    settings: HashMap<HealthScope, RepoHealthSettings>,
    codeowners: HashMap<HealthScope, String>,
    /// By scope, then id: the order every list uses.
    cases: BTreeMap<(HealthScope, Uuid), TestCase>,
    uploads: HashMap<(OrgId, Uuid), UploadRecord>,
    raw: HashMap<(OrgId, Uuid), Vec<RawResult>>,
}

impl HealthTables {
    fn lock(&self) -> MutexGuard<'_, Tables> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn scope_of(case: &TestCase) -> HealthScope {
    HealthScope {
        org: case.org.clone(),
        repo_key: case.repo.key(),
    }
}

/// Whether a case belongs to a list.
pub(crate) fn in_list(case: &TestCase, list: TestList) -> bool {
    match list {
        TestList::WithStatus(kind) => case.status.kind == kind,
        TestList::Quarantine { overrides_only } => {
            case.is_quarantine_candidate() && !(overrides_only && case.needs_auto_quarantine())
        }
    }
}

impl Tables {
    fn list(
        &self,
        scope: &HealthScope,
        list: TestList,
    ) -> impl DoubleEndedIterator<Item = &TestCase> {
        let from = (scope.clone(), Uuid::nil());
        let to = (scope.clone(), Uuid::max());
        self.cases
            .range(from..=to)
            .map(|(_, c)| c)
            .filter(move |c| in_list(c, list))
    }
}

#[async_trait]
impl TestHealthStore for MemoryStore {
    async fn health_settings(
        &self,
        scope: &HealthScope,
    ) -> StoreResult<Option<RepoHealthSettings>> {
        Ok(self.health.lock().settings.get(scope).cloned())
    }

    async fn put_health_settings(
        &self,
        scope: &HealthScope,
        settings: &RepoHealthSettings,
    ) -> StoreResult<()> {
        let mut t = self.health.lock();
        let stored = t.settings.get(scope).map_or(0, |s| s.version);
        if settings.version != stored + 1 {
            return Err(StoreError::Conflict);
        }
        t.settings.insert(scope.clone(), settings.clone());
        Ok(())
    }

    async fn codeowners(&self, scope: &HealthScope) -> StoreResult<Option<String>> {
        Ok(self.health.lock().codeowners.get(scope).cloned())
    }

    async fn put_codeowners(&self, scope: &HealthScope, text: &str) -> StoreResult<()> {
        self.health
            .lock()
            .codeowners
            .insert(scope.clone(), text.to_owned());
        Ok(())
    }

    async fn get_test_cases(
        &self,
        scope: &HealthScope,
        ids: &[Uuid],
    ) -> StoreResult<Vec<TestCase>> {
        let t = self.health.lock();
        let mut seen = std::collections::HashSet::new();
        Ok(ids
            .iter()
            .filter(|id| seen.insert(**id))
            .filter_map(|id| t.cases.get(&(scope.clone(), *id)).cloned())
            .collect())
    }

    async fn put_test_cases(&self, cases: &[TestCase]) -> StoreResult<Vec<Uuid>> {
        let mut t = self.health.lock();
        let mut lost = Vec::new();
        for case in cases {
            let key = (scope_of(case), case.id);
            let stored = t.cases.get(&key).map_or(0, |c| c.version);
            if case.version == stored + 1 {
                t.cases.insert(key, case.clone());
            } else {
                lost.push(case.id);
            }
        }
        Ok(lost)
    }

    async fn list_test_cases(
        &self,
        scope: &HealthScope,
        list: TestList,
        cursor: PageCursor,
        limit: usize,
    ) -> StoreResult<Vec<TestCase>> {
        let t = self.health.lock();
        let all = t.list(scope, list);
        let mut page: Vec<TestCase> = match cursor {
            PageCursor::First => all.take(limit).cloned().collect(),
            PageCursor::After(id) => all.filter(|c| c.id > id).take(limit).cloned().collect(),
            PageCursor::Before(id) => all
                .rev()
                .filter(|c| c.id < id)
                .take(limit)
                .cloned()
                .collect(),
            PageCursor::Last => all.rev().take(limit).cloned().collect(),
        };
        page.sort_by_key(|c| c.id);
        Ok(page)
    }

    async fn count_test_cases(&self, scope: &HealthScope, list: TestList) -> StoreResult<u64> {
        Ok(self.health.lock().list(scope, list).count() as u64)
    }

    async fn claim_upload(&self, upload: &UploadRecord) -> StoreResult<Option<UploadRecord>> {
        let mut t = self.health.lock();
        let key = (upload.org.clone(), upload.key);
        if let Some(existing) = t.uploads.get(&key) {
            return Ok(Some(existing.clone()));
        }
        t.uploads.insert(key, upload.clone());
        Ok(None)
    }

    async fn put_upload(&self, upload: &UploadRecord) -> StoreResult<()> {
        let key = (upload.org.clone(), upload.key);
        self.health.lock().uploads.insert(key, upload.clone());
        Ok(())
    }

    async fn get_upload(&self, org: &OrgId, key: Uuid) -> StoreResult<Option<UploadRecord>> {
        Ok(self.health.lock().uploads.get(&(org.clone(), key)).cloned())
    }

    async fn put_raw_results(
        &self,
        upload: &UploadRecord,
        results: &[RawResult],
    ) -> StoreResult<()> {
        let key = (upload.org.clone(), upload.key);
        self.health.lock().raw.insert(key, results.to_vec());
        Ok(())
    }

    async fn raw_results(&self, org: &OrgId, key: Uuid) -> StoreResult<Vec<RawResult>> {
        Ok(self
            .health
            .lock()
            .raw
            .get(&(org.clone(), key))
            .cloned()
            .unwrap_or_default())
    }

    async fn due_for_recovery(&self, now: Timestamp, limit: usize) -> StoreResult<Vec<TestCase>> {
        let t = self.health.lock();
        let mut due: Vec<&TestCase> = t
            .cases
            .values()
            .filter(|c| c.flaky_until.is_some_and(|u| u <= now))
            .collect();
        due.sort_by_key(|c| c.flaky_until);
        Ok(due.into_iter().take(limit).cloned().collect())
    }
}
