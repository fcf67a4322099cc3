//! Test health on DynamoDB (the `TestHealth` table).
//!
//! Items:
//! - `CASE#<org>#<test case id>` / `CASE`: one compact summary per test case (identity, status,
//!   quarantine, the last 40 results). It expires (`expires_at`) once forgotten
//!   ([`mq_core::health::TestCase::forgotten_after`]). Its key spreads writes over
//!   partitions; the lists are sparse indexes whose attributes are set only on items that
//!   belong to them:
//!   - `unhealthy-index`: `unhealthy_key` = `<org>#<repo>#FLAKY|BROKEN`, sorted by `case_id`;
//!   - `quarantine-index`: `quarantine_key` = `<org>#<repo>` on quarantine candidates, sorted
//!     by `case_id` (`quarantine_auto` tells those that need auto-quarantine);
//!   - `recovery-index`: `recovery_shard` = `FLAKY` with `flaky_until_ms`, for the tick.
//! - `REPO#<org>#<repo>` / `SETTINGS` and `CODEOWNERS`.
//! - `UPLOAD#<org>#<upload key>` / `UPLOAD` (idempotency) and `RAW#<n>` (raw results, 1,000 per
//!   item); both expire (`expires_at`) after [`RAW_RESULT_RETENTION_DAYS`].
//!
//! Test case writes go in transactions of up to 100 puts, each conditional on the version read.

use super::DynamoStore;
use super::codec::{Item, from_item, from_items, from_optional_item, get_s, key, n, s, to_item};
use super::keys::{EXPIRES_AT, PK, SK, VERSION};
use super::requests::{query_count, query_up_to};
use super::transaction_limits::{MAX_TRANSACTION_ITEMS, groups_by, item_bytes};
use crate::codeowners::{MAX_STORED_BYTES, compress};
use crate::error::StoreError;
use crate::port::{
    HealthScope, PageCursor, RAW_RESULT_RETENTION_DAYS, RawResult, StoreResult, TestHealthStore,
    TestList, UploadRecord,
};
use async_trait::async_trait;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::types::{AttributeValue, Put, Select, TransactWriteItem};
use mq_core::health::{RepoHealthSettings, StatusKind, TestCase};
use mq_core::ids::OrgId;
use mq_core::time::Timestamp;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub const UNHEALTHY_INDEX: &str = "unhealthy-index";
pub const QUARANTINE_INDEX: &str = "quarantine-index";
pub const RECOVERY_INDEX: &str = "recovery-index";
const CASE_ID: &str = "case_id";
const UNHEALTHY_KEY: &str = "unhealthy_key";
const QUARANTINE_KEY: &str = "quarantine_key";
const QUARANTINE_AUTO: &str = "quarantine_auto";
const RECOVERY_SHARD: &str = "recovery_shard";
const FLAKY_UNTIL_MS: &str = "flaky_until_ms";
pub(super) const CASE_SK: &str = "CASE";
const SETTINGS_SK: &str = "SETTINGS";
const CODEOWNERS_SK: &str = "CODEOWNERS";
const UPLOAD_SK: &str = "UPLOAD";
const RECOVERY_SHARD_VALUE: &str = "FLAKY";
/// Raw results per item (about 60 bytes each: far below the 400 KB item limit).
const RAW_PER_ITEM: usize = 1000;

fn case_pk(org: &OrgId, id: Uuid) -> String {
    format!("CASE#{org}#{id}")
}

fn repo_pk(scope: &HealthScope) -> String {
    format!("REPO#{}#{}", scope.org, scope.repo_key)
}

fn upload_pk(org: &OrgId, key: Uuid) -> String {
    format!("UPLOAD#{org}#{key}")
}

fn list_key(scope: &HealthScope, list: TestList) -> String {
    match list {
        TestList::WithStatus(kind) => unhealthy_key(scope, kind),
        TestList::Quarantine { .. } => format!("{}#{}", scope.org, scope.repo_key),
    }
}

fn unhealthy_key(scope: &HealthScope, kind: StatusKind) -> String {
    format!("{}#{}#{}", scope.org, scope.repo_key, kind.as_str())
}

fn expires_at(at: Timestamp) -> i64 {
    at.millis() / 1000 + RAW_RESULT_RETENTION_DAYS * 86_400
}

/// The `expires_at` of a test case's item (epoch seconds): when it is forgotten, if ever.
pub(super) fn case_expires_at(case: &TestCase) -> Option<i64> {
    case.forgotten_after().map(|at| at.millis() / 1000)
}

/// A test case as an item, with the attributes of the lists it belongs to.
fn case_item(case: &TestCase) -> StoreResult<Item> {
    let scope = HealthScope {
        org: case.org.clone(),
        repo_key: case.repo.key(),
    };
    let mut keys = vec![
        (PK, s(case_pk(&case.org, case.id))),
        (SK, s(CASE_SK)),
        (CASE_ID, s(case.id.to_string())),
    ];
    if case.is_unhealthy() {
        keys.push((UNHEALTHY_KEY, s(unhealthy_key(&scope, case.status.kind))));
    }
    if case.is_quarantine_candidate() {
        keys.push((
            QUARANTINE_KEY,
            s(list_key(
                &scope,
                TestList::Quarantine {
                    overrides_only: false,
                },
            )),
        ));
        keys.push((
            QUARANTINE_AUTO,
            AttributeValue::Bool(case.needs_auto_quarantine()),
        ));
    }
    if let Some(until) = case.flaky_until {
        keys.push((RECOVERY_SHARD, s(RECOVERY_SHARD_VALUE)));
        keys.push((FLAKY_UNTIL_MS, n(until.millis())));
    }
    if let Some(expires) = case_expires_at(case) {
        keys.push((EXPIRES_AT, n(expires)));
    }
    to_item(case, &keys)
}

/// A put conditional on the stored version being one less than the item's (absent for 1).
fn versioned_put(table: &str, item: Item, version: u64) -> StoreResult<TransactWriteItem> {
    let put = Put::builder().table_name(table).set_item(Some(item));
    let put = if version <= 1 {
        put.condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", PK)
    } else {
        put.condition_expression("#v = :v")
            .expression_attribute_names("#v", VERSION)
            .expression_attribute_values(":v", n(version - 1))
    };
    let put = put.build().map_err(StoreError::internal)?;
    Ok(TransactWriteItem::builder().put(put).build())
}

/// The raw results of one item.
#[derive(Serialize, Deserialize)]
struct RawChunk {
    #[serde(deserialize_with = "mq_core::readable::list")]
    results: Vec<RawResult>,
}

#[async_trait]
impl TestHealthStore for DynamoStore {
    async fn health_settings(
        &self,
        scope: &HealthScope,
    ) -> StoreResult<Option<RepoHealthSettings>> {
        from_optional_item(self.health_get(&repo_pk(scope), SETTINGS_SK).await?)
    }

    async fn put_health_settings(
        &self,
        scope: &HealthScope,
        settings: &RepoHealthSettings,
    ) -> StoreResult<()> {
        let item = to_item(settings, &[(PK, s(repo_pk(scope))), (SK, s(SETTINGS_SK))])?;
        let action = versioned_put(&self.tables.test_health, item, settings.version)?;
        self.transact(vec![action]).await
    }

    async fn codeowners(&self, scope: &HealthScope) -> StoreResult<Option<String>> {
        codeowners_of(self.health_get(&repo_pk(scope), CODEOWNERS_SK).await?)
    }

    async fn put_codeowners(&self, scope: &HealthScope, text: &str) -> StoreResult<()> {
        let gz = compress(text);
        if gz.len() > MAX_STORED_BYTES {
            // The API refuses such a text before anything is written (`codeowners::fits`).
            return Err(StoreError::internal("CODEOWNERS too large for one item"));
        }
        let mut item = key(&repo_pk(scope), CODEOWNERS_SK);
        item.insert("gz".to_owned(), AttributeValue::B(gz.into()));
        self.put_item(&self.tables.test_health, item).await
    }

    async fn get_test_cases(
        &self,
        scope: &HealthScope,
        ids: &[Uuid],
    ) -> StoreResult<Vec<TestCase>> {
        let ([], cases) = self.repo_items_and_cases(scope, [], ids).await?;
        Ok(cases)
    }

    async fn settings_and_test_cases(
        &self,
        scope: &HealthScope,
        ids: &[Uuid],
    ) -> StoreResult<(Option<RepoHealthSettings>, Vec<TestCase>)> {
        let ([settings], cases) = self.repo_items_and_cases(scope, [SETTINGS_SK], ids).await?;
        Ok((from_optional_item(settings)?, cases))
    }

    async fn settings_and_codeowners(
        &self,
        scope: &HealthScope,
    ) -> StoreResult<(Option<RepoHealthSettings>, Option<String>)> {
        let ([settings, codeowners], _) = self
            .repo_items_and_cases(scope, [SETTINGS_SK, CODEOWNERS_SK], &[])
            .await?;
        Ok((from_optional_item(settings)?, codeowners_of(codeowners)?))
    }

    async fn put_test_cases(&self, cases: &[TestCase]) -> StoreResult<Vec<Uuid>> {
        let mut lost = Vec::new();
        let puts = cases
            .iter()
            .map(|c| {
                let item = case_item(c)?;
                let bytes = item_bytes(&item);
                let put = versioned_put(&self.tables.test_health, item, c.version)?;
                Ok((c.id, put, bytes))
            })
            .collect::<StoreResult<Vec<_>>>()?;
        for group in groups_by(puts, |(_, _, bytes)| *bytes, MAX_TRANSACTION_ITEMS) {
            let (ids, actions): (Vec<Uuid>, Vec<_>) =
                group.into_iter().map(|(id, put, _)| (id, put)).unzip();
            match self.transact(actions).await {
                Ok(()) => {}
                // Nothing of the group was written: the caller merges each again.
                Err(StoreError::Conflict) => lost.extend(ids),
                Err(e) => return Err(e),
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
        let (condition, bound, forward) = match cursor {
            PageCursor::First => ("#h = :h", None, true),
            PageCursor::After(id) => ("#h = :h AND #r > :b", Some(id), true),
            PageCursor::Before(id) => ("#h = :h AND #r < :b", Some(id), false),
            PageCursor::Last => ("#h = :h", None, false),
        };
        let mut query = self
            .list_query(scope, list)
            .key_condition_expression(condition)
            .scan_index_forward(forward);
        if let Some(id) = bound {
            query = query
                .expression_attribute_names("#r", CASE_ID)
                .expression_attribute_values(":b", s(id.to_string()));
        }
        let mut cases: Vec<TestCase> = from_items(query_up_to(query, limit).await?)?;
        cases.sort_by_key(|c| c.id);
        Ok(cases)
    }

    async fn count_test_cases(&self, scope: &HealthScope, list: TestList) -> StoreResult<u64> {
        let query = self
            .list_query(scope, list)
            .key_condition_expression("#h = :h")
            .select(Select::Count);
        query_count(query).await
    }

    async fn claim_upload(&self, upload: &UploadRecord) -> StoreResult<Option<UploadRecord>> {
        let item = upload_item(upload)?;
        match self.put_new_item(&self.tables.test_health, item, PK).await {
            Ok(_) => Ok(None),
            Err(StoreError::Conflict) => self.get_upload(&upload.org, upload.key).await,
            Err(e) => Err(e),
        }
    }

    async fn put_upload(&self, upload: &UploadRecord) -> StoreResult<()> {
        self.put_item(&self.tables.test_health, upload_item(upload)?)
            .await
    }

    async fn get_upload(&self, org: &OrgId, key: Uuid) -> StoreResult<Option<UploadRecord>> {
        from_optional_item(self.health_get(&upload_pk(org, key), UPLOAD_SK).await?)
    }

    async fn put_raw_results(
        &self,
        upload: &UploadRecord,
        results: &[RawResult],
    ) -> StoreResult<()> {
        let pk = upload_pk(&upload.org, upload.key);
        let expires = n(expires_at(upload.created_at));
        let items = results
            .chunks(RAW_PER_ITEM)
            .enumerate()
            .map(|(i, chunk)| {
                let value = RawChunk {
                    results: chunk.to_vec(),
                };
                let sk = format!("RAW#{i:05}");
                let keys = [(PK, s(&pk)), (SK, s(sk)), (EXPIRES_AT, expires.clone())];
                Ok((self.tables.test_health.clone(), to_item(&value, &keys)?))
            })
            .collect::<StoreResult<Vec<_>>>()?;
        self.batch_put(items).await
    }

    async fn raw_results(&self, org: &OrgId, key: Uuid) -> StoreResult<Vec<RawResult>> {
        let query = self
            .partition_query(&self.tables.test_health, &upload_pk(org, key))
            .key_condition_expression("#pk = :pk AND begins_with(#sk, :raw)")
            .expression_attribute_names("#sk", SK)
            .expression_attribute_values(":raw", s("RAW#"));
        let mut results = Vec::new();
        for item in query_up_to(query, usize::MAX).await? {
            results.extend(from_item::<RawChunk>(item)?.results);
        }
        Ok(results)
    }

    async fn due_for_recovery(&self, now: Timestamp, limit: usize) -> StoreResult<Vec<TestCase>> {
        let query = self
            .client
            .query()
            .table_name(&self.tables.test_health)
            .index_name(RECOVERY_INDEX)
            .key_condition_expression("#h = :h AND #u <= :now")
            .expression_attribute_names("#h", RECOVERY_SHARD)
            .expression_attribute_names("#u", FLAKY_UNTIL_MS)
            .expression_attribute_values(":h", s(RECOVERY_SHARD_VALUE))
            .expression_attribute_values(":now", n(now.millis()));
        let keys = query_up_to(query, limit).await?;
        let keys = keys
            .into_iter()
            .filter_map(|k| {
                Some((
                    self.tables.test_health.clone(),
                    key(get_s(&k, PK)?, CASE_SK),
                ))
            })
            .collect();
        let found = self.batch_get(keys).await?;
        let mut cases: Vec<TestCase> = from_items(found.into_iter().map(|(_, i)| i).collect())?;
        cases.sort_by_key(|c| c.flaky_until);
        Ok(cases)
    }
}

/// The keys of a repository's items with these sort keys.
fn repo_item_keys(scope: &HealthScope, sks: &[&str]) -> Vec<Item> {
    let pk = repo_pk(scope);
    sks.iter().map(|sk| key(&pk, sk)).collect()
}

/// The keys of the organisation's test cases with these ids.
fn case_keys(scope: &HealthScope, ids: &[Uuid]) -> Vec<Item> {
    ids.iter()
        .map(|id| key(&case_pk(&scope.org, *id), CASE_SK))
        .collect()
}

/// The CODEOWNERS text of its item, if stored: gzip-compressed (`gz`), or as written before
/// compression (`text`).
fn codeowners_of(item: Option<Item>) -> StoreResult<Option<String>> {
    let Some(item) = item else {
        return Ok(None);
    };
    if let Some(AttributeValue::B(gz)) = item.get("gz") {
        return crate::codeowners::decompress(gz.as_ref()).map(Some);
    }
    Ok(get_s(&item, "text").map(str::to_owned))
}

fn upload_item(upload: &UploadRecord) -> StoreResult<Item> {
    to_item(
        upload,
        &[
            (PK, s(upload_pk(&upload.org, upload.key))),
            (SK, s(UPLOAD_SK)),
            (EXPIRES_AT, n(expires_at(upload.created_at))),
        ],
    )
}

impl DynamoStore {
    /// A query of a list's index, with its key and (for overrides only) its filter.
    fn list_query(&self, scope: &HealthScope, list: TestList) -> QueryFluentBuilder {
        let (index, hash) = match list {
            TestList::WithStatus(_) => (UNHEALTHY_INDEX, UNHEALTHY_KEY),
            TestList::Quarantine { .. } => (QUARANTINE_INDEX, QUARANTINE_KEY),
        };
        let query = self
            .client
            .query()
            .table_name(&self.tables.test_health)
            .index_name(index)
            .expression_attribute_names("#h", hash)
            .expression_attribute_values(":h", s(list_key(scope, list)));
        match list {
            TestList::Quarantine {
                overrides_only: true,
            } => query
                .filter_expression("#auto = :false")
                .expression_attribute_names("#auto", QUARANTINE_AUTO)
                .expression_attribute_values(":false", AttributeValue::Bool(false)),
            _ => query,
        }
    }

    /// The repository's items with these sort keys (`SETTINGS`, `CODEOWNERS`), each or `None`
    /// in the order asked, and its stored test cases among `ids`: `BatchGetItem`s of up to 100
    /// keys, the repository's items in the first (none without keys).
    async fn repo_items_and_cases<const N: usize>(
        &self,
        scope: &HealthScope,
        repo_sks: [&str; N],
        ids: &[Uuid],
    ) -> StoreResult<([Option<Item>; N], Vec<TestCase>)> {
        let mut keys = repo_item_keys(scope, &repo_sks);
        keys.extend(case_keys(scope, ids));
        let table = &self.tables.test_health;
        let keys = keys.into_iter().map(|k| (table.clone(), k)).collect();
        let mut repo_items: [Option<Item>; N] = std::array::from_fn(|_| None);
        let mut cases = Vec::with_capacity(ids.len());
        for (_, item) in self.batch_get(keys).await? {
            let sk = get_s(&item, SK).unwrap_or_default();
            if sk != CASE_SK {
                if let Some(slot) = repo_sks.iter().position(|asked| *asked == sk) {
                    repo_items[slot] = Some(item);
                }
                continue;
            }
            let case: TestCase = from_item(item)?;
            if case.repo.key() == scope.repo_key {
                cases.push(case);
            }
        }
        Ok((repo_items, cases))
    }

    async fn health_get(&self, pk: &str, sk: &str) -> StoreResult<Option<Item>> {
        self.get_item(&self.tables.test_health, key(pk, sk)).await
    }
}
